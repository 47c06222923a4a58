// The one shape of a configuration refusal (spec/CONF.md section 1.4, CONF-065):
//   configuration is invalid: <key path> (<reason>)
// The key path names the failing key; the reason is fixed text written by us. Neither ever
// carries a configured value, a resolved env: value, a URL or a line of the TOML source.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "base/status.h"

namespace xb::config {

// kInvalidArgument "configuration is invalid: <key> (<reason>)".
Status ConfigError(std::string_view key, std::string_view reason);

// Key path of `key` inside the table at `parent` ("" = document root). A key that is not a TOML
// bare key (A-Z a-z 0-9 _ -) is quoted, as in `chains."eip155:1"`; bytes outside printable ASCII
// are written as \xNN so that the error stays one line.
std::string JoinKey(std::string_view parent, std::string_view key);

// `parent[index]`, the path of an array element.
std::string JoinIndex(std::string_view parent, size_t index);

// `text` with every byte outside printable ASCII (and `"` and `\`) escaped as \xNN: for the few
// names an error may carry (an env variable name, an inline key's kid).
std::string EscapeForMessage(std::string_view text);

}  // namespace xb::config
