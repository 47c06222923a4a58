// JSON for auth/: the JOSE header, the JWT claims and the JWKS document are parsed with
// Boost.JSON (header-only, compiled once in json.cc). Parsing never throws: errors come back as
// an error_code, and the few accessors used here are the non-throwing if_* ones.
#pragma once

#include <boost/json/value.hpp>
#include <optional>
#include <string_view>

namespace xb::auth {

// The document as a JSON object, or nullopt when `text` is not exactly one JSON object (RFC
// 8259) nested at most 32 deep. A member name given twice keeps its last value (RFC 7515 section
// 4: either refuse or take the last).
std::optional<boost::json::object> ParseJsonObject(std::string_view text);

}  // namespace xb::auth
