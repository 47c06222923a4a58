#include "api/stream_liveness.h"

namespace xb::api {

// implements: API-255 (never two backend Pings outstanding), API-257
StreamLiveness::Due StreamLiveness::Check(Clock::time_point now, Clock::time_point last_frame_at) {
  Due due;
  if (outstanding_ && now >= pong_deadline_) {
    due.ending =
        fanout::Ending{Status(StatusCode::kDeadlineExceeded, "no Pong for the backend's Ping"),
                       telemetry::StreamEndReason::kKeepalive};
  } else if (!outstanding_ && now - last_frame_at >= keepalive_) {
    outstanding_ = ++nonce_;
    pong_deadline_ = now + pong_wait_;
    due.ping = *outstanding_;
  }
  return due;
}

void StreamLiveness::OnPong(uint64_t nonce) {
  if (outstanding_ && nonce == *outstanding_) {
    outstanding_.reset();
  }
}

StreamLiveness::Clock::time_point StreamLiveness::NextAt(Clock::time_point last_frame_at) const {
  return outstanding_ ? pong_deadline_ : last_frame_at + keepalive_;
}

}  // namespace xb::api
