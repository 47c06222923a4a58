#include "api/v3/mls_subscribe.h"

#include <string>
#include <utility>
#include <vector>

#include "api/quotas.h"
#include "api/request_bounds.h"
#include "api/static_stream.h"
#include "api/stream_liveness.h"
#include "api/update_entries.h"
#include "api/v3/stream_rows.h"
#include "base/token_bucket.h"
#include "fanout/stream_session.h"
#include "mls/api/v1/mls.pb.h"
#include "validate/topic.h"

namespace xb::api::v3 {

namespace asio = boost::asio;
namespace mls = xmtp::mls::api::v1;
using fanout::Ending;
using telemetry::StreamEndReason;
using Clock = std::chrono::steady_clock;
using Mutate = mls::SubscribeRequest::V1::Mutate;

namespace {

Ending Invalid(std::string message) {
  return Ending{InvalidArgument(std::move(message)), StreamEndReason::kInvalid};
}

// A valid topic (TOPIC-003) of a kind XIP-83 serves: group messages (0x00) and Welcomes (0x01).
Status ServedTopic(std::string_view topic) {
  XB_RETURN_IF_ERROR(validate::ValidateRequestTopic(topic));
  if (topic[0] != 0x00 && topic[0] != 0x01) {
    return InvalidArgument(
        "topic kind is not served by Subscribe: group messages (0x00) and Welcomes (0x01) only");
  }
  return Status::Ok();
}

// The protocol state of one XIP-83 Subscribe stream.
class WaveStream {
 public:
  WaveStream(const ApiContext& ctx, std::shared_ptr<rpc::Call> call)
      : ctx_(ctx),
        call_(call),
        session_(call, ctx.streams->Deps(), StreamLimitsOf(ctx),
                 fanout::StreamWire::Waves(EncodeStreamRow, TranscodeStreamRow, WrapSubscribeRow),
                 telemetry::StreamKind::kBidi),
        update_bucket_(ctx.limits.max_update_frames_per_second, ctx.limits.max_update_burst),
        ping_bucket_(ctx.limits.max_ping_frames_per_second, ctx.limits.max_ping_burst),
        liveness_(ctx) {}

  asio::awaitable<void> Run() {
    if (!session_.Open()) {
      call_->Finish(RecoveryRefusal().status);  // OPS-006: not a registered session, not counted
      co_return;
    }
    session_.SetWaveDone([this](uint64_t mutate_id, const std::vector<std::string>& topics) {
      return WaveDone(mutate_id, topics);
    });
    // Started: the first frame, before any request frame is read.
    mls::SubscribeResponse started;
    started.mutable_v1()->mutable_started()->set_keepalive_interval_ms(
        static_cast<uint32_t>(ctx_.stream_settings.keepalive_interval_ms));
    std::optional<Ending> ending = Control(started, telemetry::FrameSent::kStarted);
    while (!ending) {
      if (call_->ended()) {
        ctx_.metrics->stream().ended.Inc(ExternalEndReason(*call_));
        co_return;
      }
      while (!ending && call_->HasMessage()) {
        ending = co_await HandleFrame(call_->TakeMessage());
      }
      if (!ending && !call_->ended()) {
        ending = co_await Step();
      }
    }
    EndStream(*call_, std::move(*ending), *ctx_.metrics);
  }

 private:
  // One turn of delivery and liveness; suspends until there is something to do.
  asio::awaitable<std::optional<Ending>> Step() {
    if (auto ending = co_await session_.Pump()) {
      co_return ending;
    }
    if (call_->ended()) {
      co_return std::nullopt;
    }
    if (call_->request_ended()) {
      // The client half-closed: its waves finish, then the stream ends OK (the history-only sync
      // of XIP-83). It can answer no Ping any more, so none is sent.
      if (!session_.waves_in_flight()) {
        co_return Ending{Status::Ok(), StreamEndReason::kClient};
      }
    } else {
      StreamLiveness::Due due = liveness_.Check(Clock::now(), session_.last_frame_at());
      if (due.ending) {
        co_return due.ending;
      }
      if (due.ping) {
        mls::SubscribeResponse ping;
        ping.mutable_v1()->mutable_ping()->set_nonce(*due.ping);
        co_return Control(ping, telemetry::FrameSent::kPing);
      }
    }
    if (!session_.ready_for_more()) {
      co_await call_->WaitEvent(liveness_.NextAt(session_.last_frame_at()));
    }
    co_return std::nullopt;
  }

  std::optional<Ending> Control(const mls::SubscribeResponse& message, telemetry::FrameSent frame) {
    return session_.WriteControl(message.SerializeAsString(), frame,
                                 ctx_.limits.max_response_bytes);
  }

  // implements: docs/v3-api.md 4.3 (TopicsLive after the wave's last row, then CatchupComplete;
  // both counted as frame="applied", the XIP-83 acknowledgement of a Mutate)
  std::optional<Ending> WaveDone(uint64_t mutate_id, const std::vector<std::string>& topics) {
    if (!topics.empty()) {
      mls::SubscribeResponse live;
      for (const std::string& topic : topics) {
        live.mutable_v1()->mutable_topics_live()->add_topics(topic);
      }
      if (auto ending = Control(live, telemetry::FrameSent::kApplied)) {
        return ending;
      }
    }
    return CatchupComplete(mutate_id);
  }

  std::optional<Ending> CatchupComplete(uint64_t mutate_id) {
    mls::SubscribeResponse complete;
    complete.mutable_v1()->mutable_catchup_complete()->set_mutate_id(mutate_id);
    return Control(complete, telemetry::FrameSent::kApplied);
  }

  asio::awaitable<std::optional<Ending>> HandleFrame(std::string bytes) {
    if (Status bounded =
            CheckMutateFrame(bytes, ctx_.limits.max_update_adds, ctx_.limits.max_update_removes);
        !bounded.ok()) {
      co_return Ending{bounded, StreamEndReason::kInvalid};
    }
    mls::SubscribeRequest request;
    if (!request.ParseFromString(bytes)) {
      co_return Invalid("request is malformed");
    }
    auto& sm = ctx_.metrics->stream();
    const auto& v1 = request.v1();
    switch (v1.request_case()) {
      case mls::SubscribeRequest::V1::kMutate: {
        sm.frames_received.Inc(telemetry::FrameReceived::kUpdate);
        telemetry::Span span;
        if (ctx_.tracer != nullptr) {
          span = ctx_.tracer->Start(telemetry::Operation::kStreamUpdate, call_->trace_parent());
        }
        auto ending = co_await HandleMutate(v1.mutate());
        if (ending) {
          span.SetError();
        }
        co_return ending;
      }
      case mls::SubscribeRequest::V1::kPing: {
        sm.frames_received.Inc(telemetry::FrameReceived::kPing);
        if (!ping_bucket_.Take()) {
          co_return Ending{Status(StatusCode::kResourceExhausted, "too many Ping frames"),
                           StreamEndReason::kRateLimited};
        }
        mls::SubscribeResponse pong;
        pong.mutable_v1()->mutable_pong()->set_nonce(v1.ping().nonce());
        co_return Control(pong, telemetry::FrameSent::kPong);
      }
      case mls::SubscribeRequest::V1::kPong:
        sm.frames_received.Inc(telemetry::FrameReceived::kPong);
        liveness_.OnPong(v1.pong().nonce());
        co_return std::nullopt;
      case mls::SubscribeRequest::V1::REQUEST_NOT_SET:
        break;
    }
    // A request type (or version) this server does not know is ignored, as XIP-83 says.
    co_return std::nullopt;
  }

  // implements: docs/v3-api.md 4.3 (Mutate applied atomically: removes, then the adds as one wave;
  // CatchupComplete at once when it starts none)
  asio::awaitable<std::optional<Ending>> HandleMutate(const Mutate& mutate) {
    auto& updates = ctx_.metrics->stream().updates;
    if (!update_bucket_.Take()) {
      updates.Inc(telemetry::UpdateOutcome::kRateLimited);
      co_return Ending{Status(StatusCode::kResourceExhausted, "too many Mutate frames"),
                       StreamEndReason::kRateLimited};
    }
    if (auto invalid = Validate(mutate)) {
      updates.Inc(telemetry::UpdateOutcome::kInvalid);
      co_return invalid;
    }
    session_.Remove(std::vector<std::string>(mutate.removes().begin(), mutate.removes().end()));
    std::vector<store::TopicCursor> adds;
    adds.reserve(static_cast<size_t>(mutate.adds_size()));
    for (const auto& add : mutate.adds()) {
      adds.push_back(store::TopicCursor{add.topic(), static_cast<int64_t>(add.id_cursor())});
    }
    const fanout::StreamSession::WaveTag tag{mutate.mutate_id(), mutate.history_only()};
    auto added = co_await session_.Add(adds, tag);
    if (auto* failed = std::get_if<Ending>(&added)) {
      co_return *failed;
    }
    updates.Inc(telemetry::UpdateOutcome::kApplied);
    if (std::get<std::vector<fanout::CatchupTargetOut>>(added).empty()) {
      co_return CatchupComplete(mutate.mutate_id());  // the Mutate started no wave
    }
    co_return std::nullopt;
  }

  std::optional<Ending> Validate(const Mutate& mutate) const {
    if (mutate.adds_size() > 0 && mutate.mutate_id() == 0) {
      return Invalid("mutate_id must be non-zero when a Mutate adds topics");
    }
    if (mutate.mutate_id() != 0 && session_.WaveInFlight(mutate.mutate_id())) {
      return Invalid("mutate_id names a wave still in flight on this stream");
    }
    UpdateEntries entries;
    for (const auto& add : mutate.adds()) {
      entries.adds.emplace_back(add.topic(), add.id_cursor());
    }
    entries.removes.assign(mutate.removes().begin(), mutate.removes().end());
    return CheckUpdateEntries(ctx_, session_, entries, ServedTopic);
  }

  const ApiContext& ctx_;
  std::shared_ptr<rpc::Call> call_;
  fanout::StreamSession session_;
  TokenBucket update_bucket_;
  TokenBucket ping_bucket_;
  StreamLiveness liveness_;
};

// implements: issue 33 (docs/v3-api.md 4.3, G10)
asio::awaitable<void> Subscribe(const ApiContext& ctx, std::shared_ptr<rpc::Call> call) {
  // implements: issue 32 (quotas) — refused before the session exists
  if (Status charged = ChargeStreamOpen(ctx.quotas, *call); !charged.ok()) {
    call->Finish(std::move(charged));
    co_return;
  }
  WaveStream stream(ctx, call);
  co_await stream.Run();
}

}  // namespace

void AddMlsSubscribe(rpc::Router& router, const ApiContext& context) {
  router.Add("/xmtp.mls.api.v1.MlsApi/Subscribe", rpc::CallKind::kBidiStream,
             [&context](std::shared_ptr<rpc::Call> call) { return Subscribe(context, call); });
}

}  // namespace xb::api::v3
