// ISO 8601 / RFC 3339 timestamps as the AWS credential sources answer them (ATTACH.md section 7):
// a credential process's Expiration, the container and instance endpoints' Expiration, STS's
// <Expiration>. One parser for all of them.
#pragma once

#include <optional>
#include <string_view>

#include "attach/credentials.h"

namespace xb::attach {

// Parses `YYYY-MM-DDTHH:MM:SS[.fraction](Z|+HH:MM|-HH:MM)` (also `t`/`z` and a space for `T`,
// and `+HHMM`), the forms the AWS SDKs accept. Fractions are truncated to microseconds. Returns
// nullopt for anything else, including a time without an offset (a local time is ambiguous) and
// an out-of-range field. Pure; any thread.
std::optional<WallClock::time_point> ParseIso8601(std::string_view text);

}  // namespace xb::attach
