#include "api/static_stream.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <utility>
#include <variant>

#include "api/quotas.h"

namespace xb::api {

namespace asio = boost::asio;
using fanout::Ending;
using telemetry::StreamEndReason;
using Clock = std::chrono::steady_clock;

namespace {

constexpr uint64_t kMaxCursor = static_cast<uint64_t>(INT64_MAX);
constexpr size_t kStreamFrameCeiling = 2097152;  // API.md 3.12: stream frame

// One server stream with valid topics: its first frame (if its protocol has one), then catch-up,
// live rows and keepalives (if its protocol has them) until it ends.
class StaticStream {
 public:
  StaticStream(const ApiContext& ctx, std::shared_ptr<rpc::Call> call,
               StaticStreamProtocol protocol)
      : ctx_(ctx),
        call_(call),
        started_(std::move(protocol.started)),
        keepalive_frame_(std::move(protocol.keepalive)),
        session_(call, ctx.streams->Deps(), StreamLimitsOf(ctx), std::move(protocol.wire),
                 telemetry::StreamKind::kStatic),
        keepalive_(std::chrono::milliseconds(ctx.stream_settings.keepalive_interval_ms)) {}

  asio::awaitable<void> Run(std::vector<store::TopicCursor> adds) {
    if (!session_.Open()) {
      call_->Finish(RecoveryRefusal().status);  // OPS-006
      co_return;
    }
    if (!started_) {
      call_->SendHeaders();  // docs/v3-api.md G4: before registration, before any row
    }
    std::optional<Ending> ending = co_await Start(std::move(adds));
    while (!ending) {
      if (call_->ended()) {
        ctx_.metrics->stream().ended.Inc(ExternalEndReason(*call_));
        co_return;
      }
      ending = co_await session_.Pump();
      if (ending || call_->ended()) {
        continue;
      }
      if (!keepalive_frame_.empty() && Clock::now() - session_.last_frame_at() >= keepalive_) {
        ending = Keepalive();
        continue;
      }
      if (session_.ready_for_more()) {
        continue;
      }
      // Without keepalive frames, last_frame_at() may lie far back: wake at least this often.
      const auto until = keepalive_frame_.empty() ? Clock::now() + keepalive_
                                                  : session_.last_frame_at() + keepalive_;
      co_await call_->WaitEvent(until);
    }
    EndStream(*call_, std::move(*ending), *ctx_.metrics);
  }

 private:
  // Registers the topics and sends the first frame with their catch-up targets. Suspends.
  asio::awaitable<std::optional<Ending>> Start(std::vector<store::TopicCursor> adds) {
    auto added = co_await session_.Add(adds);
    if (auto* failed = std::get_if<Ending>(&added)) {
      co_return *failed;
    }
    if (!started_) {
      co_return std::nullopt;
    }
    const std::string started = started_(std::get<std::vector<fanout::CatchupTargetOut>>(added));
    co_return session_.WriteControl(started, telemetry::FrameSent::kStarted,
                                    ctx_.limits.max_response_bytes);
  }

  std::optional<Ending> Keepalive() {
    return session_.WriteControl(keepalive_frame_, telemetry::FrameSent::kKeepalive,
                                 ctx_.limits.max_response_bytes);
  }

  const ApiContext& ctx_;
  std::shared_ptr<rpc::Call> call_;
  std::function<std::string(const std::vector<fanout::CatchupTargetOut>&)> started_;
  const std::string keepalive_frame_;
  fanout::StreamSession session_;
  const Clock::duration keepalive_;
};

}  // namespace

fanout::StreamLimits StreamLimitsOf(const ApiContext& ctx) {
  fanout::StreamLimits limits;
  limits.frame_bytes = std::min<size_t>(kStreamFrameCeiling, ctx.limits.max_response_bytes);
  limits.max_envelope_bytes = ctx.limits.max_envelope_bytes;
  limits.catch_up_read_bytes = ctx.store->CatchUpWaveBytes();
  return limits;
}

Ending RecoveryRefusal() {
  return Ending{Status(StatusCode::kUnavailable, "stream recovery is running; retry shortly"),
                StreamEndReason::kTailer};
}

Status CheckStreamCursor(uint64_t cursor) {
  if (cursor > kMaxCursor) {
    return InvalidArgument("a cursor is above 9223372036854775807");
  }
  return Status::Ok();
}

StreamEndReason ExternalEndReason(const rpc::Call& call) {
  if (!call.reset() && call.final_status().code() == StatusCode::kUnavailable) {
    return StreamEndReason::kShutdown;
  }
  return StreamEndReason::kClient;
}

void EndStream(rpc::Call& call, Ending ending, telemetry::Metrics& metrics) {
  metrics.stream().ended.Inc(ending.reason);
  switch (ending.reason) {
    case StreamEndReason::kShutdown:
    case StreamEndReason::kTailer:
    case StreamEndReason::kCapacity:
    case StreamEndReason::kDatabase:
      call.Abort(std::move(ending.status));
      return;
    default:
      call.Finish(std::move(ending.status));
  }
}

// implements: API-255 (Keepalive), API-259 (lifetime)
asio::awaitable<void> ServeStaticStream(const ApiContext& ctx, std::shared_ptr<rpc::Call> call,
                                        StaticStreamProtocol protocol, StaticTopicsFn topics) {
  // implements: issue 32 (quotas) — charged before the request is read or anything registered
  if (Status charged = ChargeStreamOpen(ctx.quotas, *call); !charged.ok()) {
    call->Finish(std::move(charged));
    co_return;
  }
  auto message = co_await call->Read();
  if (!message.ok()) {
    co_return;  // the call ended
  }
  if (!message->has_value()) {
    call->Finish(InvalidArgument("request is malformed"));
    co_return;
  }
  Result<std::vector<store::TopicCursor>> adds = topics(**message);
  if (!adds.ok()) {
    call->Finish(std::move(adds).error());
    co_return;
  }
  StaticStream stream(ctx, call, std::move(protocol));
  co_await stream.Run(std::move(adds).value());
}

}  // namespace xb::api
