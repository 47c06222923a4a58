// A token bucket: `rate` tokens per second refill up to `burst`; it starts full. Used for stream
// frame rates (API-258), for an HTTP/2 connection's control frames (net/http2) and for per-caller
// quotas (api/quota_buckets.h). Single-threaded (one stream's or one connection's; the quota map
// locks around it); nothing suspends.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>

namespace xb {

class TokenBucket {
 public:
  using Clock = std::chrono::steady_clock;

  // `rate_per_second` may be a fraction (0.5: one token every 2 s); it must be above 0 for
  // WaitFor to be finite.
  TokenBucket(double rate_per_second, double burst, Clock::time_point now = Clock::now())
      : rate_(rate_per_second), burst_(burst), tokens_(burst), refilled_at_(now) {}

  // Takes one token; false when the bucket is empty.
  bool Take(Clock::time_point now = Clock::now()) { return Take(1, now); }

  // Takes `n` tokens when min(n, burst) are there, and nothing otherwise. A take larger than the
  // burst leaves the bucket in debt (below zero), repaid by the refill before the next take, so
  // the long-run rate holds however the tokens are grouped.
  bool Take(double n, Clock::time_point now) {
    Refill(now);
    if (tokens_ < std::min(n, burst_)) {
      return false;
    }
    tokens_ -= n;
    return true;
  }

  // How long from `now` until Take(n) would succeed; zero when it would now. Rounded up to the
  // microsecond, so waiting exactly this long is always enough.
  Clock::duration WaitFor(double n, Clock::time_point now) const {
    const double missing = std::min(n, burst_) - TokensAt(now);
    if (missing <= 0) {
      return Clock::duration::zero();
    }
    const double micros = std::ceil(missing * 1e6 / rate_);
    return std::chrono::duration_cast<Clock::duration>(
        std::chrono::microseconds(static_cast<int64_t>(micros)));
  }

  // Whether the bucket holds its whole burst at `now`: it is then no different from a new one.
  bool Full(Clock::time_point now) const { return TokensAt(now) >= burst_; }

  // Adds `tokens` (a fraction is kept) without reading the clock; still never more than the
  // burst. For work the peer earned by other means than waiting, or a take given back.
  void Credit(double tokens) { tokens_ = std::min(burst_, tokens_ + tokens); }

 private:
  double TokensAt(Clock::time_point now) const {
    const double elapsed = std::chrono::duration<double>(now - refilled_at_).count();
    return elapsed > 0 ? std::min(burst_, tokens_ + elapsed * rate_) : tokens_;
  }
  void Refill(Clock::time_point now) {
    if (now > refilled_at_) {
      tokens_ = TokensAt(now);
      refilled_at_ = now;
    }
  }

  double rate_;
  double burst_;
  double tokens_;
  Clock::time_point refilled_at_;
};

}  // namespace xb
