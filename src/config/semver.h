// SemVer 2.0.0 (https://semver.org/spec/v2.0.0.html), the form of server.min_libxmtp_version.
#pragma once

#include <string_view>

namespace xb::config {

// True when `text` matches the SemVer 2.0.0 grammar exactly: MAJOR.MINOR.PATCH with no leading
// zeros, an optional "-" pre-release of dot-separated identifiers (numeric ones without leading
// zeros) and an optional "+" build of dot-separated identifiers. "" is not a version.
bool IsSemVer(std::string_view text);

}  // namespace xb::config
