#include "rpc/timeout.h"

#include <cstdint>

namespace xb::rpc {

std::optional<std::chrono::nanoseconds> ParseGrpcTimeout(std::string_view value) {
  if (value.size() < 2 || value.size() > 9) {
    return std::nullopt;
  }
  int64_t amount = 0;
  for (char c : value.substr(0, value.size() - 1)) {
    if (c < '0' || c > '9') {
      return std::nullopt;
    }
    amount = amount * 10 + (c - '0');
  }
  using std::chrono::duration_cast;
  using std::chrono::nanoseconds;
  switch (value.back()) {
    case 'H':
      return duration_cast<nanoseconds>(std::chrono::hours(amount));
    case 'M':
      return duration_cast<nanoseconds>(std::chrono::minutes(amount));
    case 'S':
      return duration_cast<nanoseconds>(std::chrono::seconds(amount));
    case 'm':
      return duration_cast<nanoseconds>(std::chrono::milliseconds(amount));
    case 'u':
      return duration_cast<nanoseconds>(std::chrono::microseconds(amount));
    case 'n':
      return nanoseconds(amount);
    default:
      return std::nullopt;
  }
}

}  // namespace xb::rpc
