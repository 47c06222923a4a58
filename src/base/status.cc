#include "base/status.h"

#include <array>

namespace xb {

std::string_view StatusCodeName(StatusCode code) {
  static constexpr std::array<std::string_view, kStatusCodeCount> kNames = {
      "OK",       "Cancelled",      "Unknown",          "InvalidArgument",   "DeadlineExceeded",
      "NotFound", "AlreadyExists",  "PermissionDenied", "ResourceExhausted", "FailedPrecondition",
      "Aborted",  "OutOfRange",     "Unimplemented",    "Internal",          "Unavailable",
      "DataLoss", "Unauthenticated"};
  auto index = static_cast<int>(code);
  if (index < 0 || index >= kStatusCodeCount) {
    return "Unknown";
  }
  return kNames[index];
}

std::string Status::ToString() const {
  std::string out(StatusCodeName(code_));
  if (!message_.empty()) {
    out += ": ";
    out += message_;
  }
  return out;
}

}  // namespace xb
