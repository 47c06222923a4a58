// The backend's half of Ping/Pong on a bidirectional stream (xmtp.backend.v1 Subscribe, API-255..
// API-257, and the XIP-83 MlsApi.Subscribe, docs/v3-api.md 4.3): a Ping after
// streams.keepalive_interval_ms without a response message, never two outstanding, and the end of
// the stream when its Pong does not come within streams.max_pong_wait_ms.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>

#include "api/context.h"
#include "fanout/registry.h"

namespace xb::api {

class StreamLiveness {
 public:
  using Clock = std::chrono::steady_clock;

  explicit StreamLiveness(const ApiContext& ctx)
      : keepalive_(std::chrono::milliseconds(ctx.stream_settings.keepalive_interval_ms)),
        pong_wait_(std::chrono::milliseconds(ctx.stream_settings.max_pong_wait_ms)) {}

  // What is due at `now`, given when the stream last sent a response message: the ending
  // (DEADLINE_EXCEEDED) when a Ping went unanswered, else the nonce of a Ping to send now (it is
  // outstanding from now on), else nothing.
  struct Due {
    std::optional<fanout::Ending> ending;
    std::optional<uint64_t> ping;
  };
  Due Check(Clock::time_point now, Clock::time_point last_frame_at);
  // A Pong from the client; one that answers no outstanding Ping is ignored.
  void OnPong(uint64_t nonce);
  // When Check has something to do next.
  Clock::time_point NextAt(Clock::time_point last_frame_at) const;

 private:
  const Clock::duration keepalive_;
  const Clock::duration pong_wait_;
  uint64_t nonce_ = 0;
  std::optional<uint64_t> outstanding_;
  Clock::time_point pong_deadline_{};
};

}  // namespace xb::api
