// Just enough JSON (RFC 8259) for the one JSON document configuration checks open: the FCM
// service account (PUSH section 9.3). Validates a whole document and hands back the string
// members of its top-level object.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "base/status.h"

namespace xb::config {

// Parses `json` as one RFC 8259 document whose top level is an object, and returns its members
// whose values are strings, decoded (escapes and surrogate pairs resolved to UTF-8). Members of
// other types are validated and left out. Refuses nesting deeper than 64, a duplicate member
// name, and trailing content. Errors are fixed text, never a part of the document.
Result<std::map<std::string, std::string>> TopLevelStringMembers(std::string_view json);

}  // namespace xb::config
