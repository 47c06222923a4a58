// A token bucket: `rate` tokens per second refill up to `burst`; it starts full. Used for stream
// frame rates (API-258) and for an HTTP/2 connection's control frames (net/http2). Single-threaded
// (one stream's or one connection's); nothing suspends.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>

namespace xb {

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

  // Adds `tokens` (a fraction is kept) without reading the clock; still never more than the
  // burst. For work the peer earned by other means than waiting.
  void Credit(double tokens) { tokens_ = std::min(burst_, tokens_ + tokens); }

 private:
  double rate_;
  double burst_;
  double tokens_;
  Clock::time_point refilled_at_;
};

}  // namespace xb
