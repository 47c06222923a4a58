// A token bucket for stream frame rates (API-258): `rate` tokens per second refill up to `burst`;
// it starts full. Single-threaded (one stream's).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>

namespace xb::fanout {

class TokenBucket {
 public:
  using Clock = std::chrono::steady_clock;

  TokenBucket(uint32_t rate_per_second, uint32_t burst, Clock::time_point now = Clock::now())
      : rate_(rate_per_second), burst_(burst), tokens_(burst), refilled_at_(now) {}

  // Takes one token; false when the bucket is empty.
  bool Take(Clock::time_point now = Clock::now()) {
    const double elapsed = std::chrono::duration<double>(now - refilled_at_).count();
    if (elapsed > 0) {
      tokens_ = std::min<double>(burst_, tokens_ + elapsed * rate_);
      refilled_at_ = now;
    }
    if (tokens_ < 1.0) {
      return false;
    }
    tokens_ -= 1.0;
    return true;
  }

 private:
  double rate_;
  double burst_;
  double tokens_;
  Clock::time_point refilled_at_;
};

}  // namespace xb::fanout
