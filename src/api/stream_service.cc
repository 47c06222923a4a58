#include "api/stream_service.h"

#include <algorithm>
#include <unordered_set>

#include "api/envelope_codec.h"
#include "api/quotas.h"
#include "api/request_bounds.h"
#include "api/static_stream.h"
#include "api/stream_liveness.h"
#include "api/update_entries.h"
#include "base/token_bucket.h"
#include "fanout/stream_session.h"
#include "validate/topic.h"
#include "xmtp/backend/v1/backend.pb.h"

namespace xb::api {

namespace asio = boost::asio;
namespace v1 = xmtp::backend::v1;
using fanout::Ending;
using telemetry::StreamEndReason;
using Clock = std::chrono::steady_clock;

namespace {

// SubscribeResponse.messages = 3, SubscribeStaticResponse.messages = 2 (API.md 2.5).
constexpr uint32_t kBidiMessagesField = 3;
constexpr uint32_t kStaticMessagesField = 2;

Ending Invalid(std::string message) {
  return Ending{InvalidArgument(std::move(message)), StreamEndReason::kInvalid};
}

// One validated TopicQuery (TOPIC-003, cursor range).
Status CheckTopicQuery(const v1::TopicQuery& query) {
  XB_RETURN_IF_ERROR(validate::ValidateRequestTopic(query.topic().topic()));
  return CheckStreamCursor(query.cursor().sequence_id());
}

std::vector<v1::CatchupTarget> ToTargets(const std::vector<fanout::CatchupTargetOut>& targets) {
  std::vector<v1::CatchupTarget> out;
  out.reserve(targets.size());
  for (const auto& t : targets) {
    v1::CatchupTarget target;
    target.mutable_topic()->set_topic(t.topic);
    target.set_through_sequence_id(static_cast<uint64_t>(t.through));
    out.push_back(std::move(target));
  }
  return out;
}

// The bidirectional protocol state of one Subscribe stream.
class BidiStream {
 public:
  BidiStream(const ApiContext& ctx, std::shared_ptr<rpc::Call> call)
      : ctx_(ctx),
        call_(call),
        session_(call, ctx.streams->Deps(), StreamLimitsOf(ctx),
                 fanout::StreamWire::Messages(kBidiMessagesField), telemetry::StreamKind::kBidi),
        update_bucket_(ctx.limits.max_update_frames_per_second, ctx.limits.max_update_burst),
        ping_bucket_(ctx.limits.max_ping_frames_per_second, ctx.limits.max_ping_burst),
        liveness_(ctx) {}

  asio::awaitable<void> Run() {
    if (!session_.Open()) {
      call_->Finish(RecoveryRefusal().status);  // OPS-006: not a registered session, not counted
      co_return;
    }
    // implements: API-250 (Started first, before any request frame is read)
    v1::SubscribeResponse started;
    started.mutable_started()->set_keepalive_interval_ms(
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
      if (ending || call_->ended()) {
        continue;
      }
      // implements: API-259 (half-close ends the stream OK, no catch-up drain)
      if (call_->request_ended()) {
        ending = Ending{Status::Ok(), StreamEndReason::kClient};
        break;
      }
      ending = co_await session_.Pump();
      if (ending || call_->ended()) {
        continue;
      }
      StreamLiveness::Due due = liveness_.Check(Clock::now(), session_.last_frame_at());
      if (due.ending) {
        ending = std::move(due.ending);
        continue;
      }
      if (due.ping) {
        v1::SubscribeResponse ping;
        ping.mutable_ping()->set_nonce(*due.ping);
        ending = Control(ping, telemetry::FrameSent::kPing);
        continue;
      }
      if (session_.ready_for_more()) {
        continue;
      }
      co_await call_->WaitEvent(liveness_.NextAt(session_.last_frame_at()));
    }
    EndStream(*call_, std::move(*ending), *ctx_.metrics);
  }

 private:
  std::optional<Ending> Control(const v1::SubscribeResponse& message, telemetry::FrameSent frame) {
    return session_.WriteControl(message.SerializeAsString(), frame,
                                 ctx_.limits.max_response_bytes);
  }

  asio::awaitable<std::optional<Ending>> HandleFrame(std::string bytes) {
    if (Status bounded =
            CheckSubscribeFrame(bytes, ctx_.limits.max_update_adds, ctx_.limits.max_update_removes);
        !bounded.ok()) {
      co_return Ending{bounded, StreamEndReason::kInvalid};
    }
    v1::SubscribeRequest request;
    if (!request.ParseFromString(bytes)) {
      co_return Invalid("request is malformed");
    }
    auto& sm = ctx_.metrics->stream();
    switch (request.request_case()) {
      case v1::SubscribeRequest::kUpdate: {
        sm.frames_received.Inc(telemetry::FrameReceived::kUpdate);
        telemetry::Span span;
        if (ctx_.tracer != nullptr) {
          span = ctx_.tracer->Start(telemetry::Operation::kStreamUpdate, call_->trace_parent());
        }
        auto ending = co_await HandleUpdate(request.update());
        if (ending) {
          span.SetError();
        }
        co_return ending;
      }
      case v1::SubscribeRequest::kPing: {
        sm.frames_received.Inc(telemetry::FrameReceived::kPing);
        // implements: API-258 (client Ping bucket)
        if (!ping_bucket_.Take()) {
          co_return Ending{Status(StatusCode::kResourceExhausted, "too many Ping frames"),
                           StreamEndReason::kRateLimited};
        }
        // implements: API-256
        v1::SubscribeResponse pong;
        pong.mutable_pong()->set_nonce(request.ping().nonce());
        co_return Control(pong, telemetry::FrameSent::kPong);
      }
      case v1::SubscribeRequest::kPong:
        sm.frames_received.Inc(telemetry::FrameReceived::kPong);
        // A Pong matching nothing is ignored; Pong consumes no bucket (API-258).
        liveness_.OnPong(request.pong().nonce());
        co_return std::nullopt;
      case v1::SubscribeRequest::REQUEST_NOT_SET:
        break;
    }
    co_return Invalid("a stream request frame sets neither update, ping nor pong");
  }

  // implements: API-251, API-252, API-253, API-258 (Update bucket)
  asio::awaitable<std::optional<Ending>> HandleUpdate(const v1::SubscribeRequest::Update& update) {
    auto& updates = ctx_.metrics->stream().updates;
    if (!update_bucket_.Take()) {
      updates.Inc(telemetry::UpdateOutcome::kRateLimited);
      co_return Ending{Status(StatusCode::kResourceExhausted, "too many Update frames"),
                       StreamEndReason::kRateLimited};
    }
    if (auto invalid = Validate(update)) {
      updates.Inc(telemetry::UpdateOutcome::kInvalid);
      co_return invalid;
    }
    last_update_id_ = update.id();
    std::vector<std::string> removes;
    removes.reserve(static_cast<size_t>(update.removes_size()));
    for (const auto& topic : update.removes()) {
      removes.push_back(topic.topic());
    }
    session_.Remove(removes);
    std::vector<store::TopicCursor> adds;
    adds.reserve(static_cast<size_t>(update.adds_size()));
    for (const auto& add : update.adds()) {
      adds.push_back(store::TopicCursor{add.topic().topic(),
                                        static_cast<int64_t>(add.cursor().sequence_id())});
    }
    auto added = co_await session_.Add(adds);
    if (auto* failed = std::get_if<Ending>(&added)) {
      co_return *failed;
    }
    v1::SubscribeResponse applied;
    applied.mutable_applied()->set_id(update.id());
    for (auto& target : ToTargets(std::get<std::vector<fanout::CatchupTargetOut>>(added))) {
      *applied.mutable_applied()->add_added_targets() = std::move(target);
    }
    updates.Inc(telemetry::UpdateOutcome::kApplied);
    co_return Control(applied, telemetry::FrameSent::kApplied);
  }

  std::optional<Ending> Validate(const v1::SubscribeRequest::Update& update) const {
    if (update.id() == 0 || update.id() <= last_update_id_) {
      return Invalid("update id must be non-zero and greater than the previous one");
    }
    UpdateEntries entries;
    for (const auto& add : update.adds()) {
      entries.adds.emplace_back(add.topic().topic(), add.cursor().sequence_id());
    }
    for (const auto& topic : update.removes()) {
      entries.removes.push_back(topic.topic());
    }
    return CheckUpdateEntries(ctx_, session_, entries, validate::ValidateRequestTopic);
  }

  const ApiContext& ctx_;
  std::shared_ptr<rpc::Call> call_;
  fanout::StreamSession session_;
  TokenBucket update_bucket_;
  TokenBucket ping_bucket_;
  StreamLiveness liveness_;
  uint64_t last_update_id_ = 0;
};

asio::awaitable<void> Subscribe(const ApiContext& ctx, std::shared_ptr<rpc::Call> call) {
  // implements: issue 32 (quotas) — refused before the session exists
  if (Status charged = ChargeStreamOpen(ctx.quotas, *call); !charged.ok()) {
    call->Finish(std::move(charged));
    co_return;
  }
  BidiStream stream(ctx, call);
  co_await stream.Run();
}

// The topics of a SubscribeStatic request: counted before it is parsed, then each one valid and
// named once.
Result<std::vector<store::TopicCursor>> StaticTopics(const ApiContext& ctx,
                                                     const std::string& message) {
  if (Status bounded = CheckAtMost(message, 1, ctx.limits.max_static_topics,
                                   "too many topics for one static stream");
      !bounded.ok()) {
    return bounded;
  }
  v1::SubscribeStaticRequest request;
  if (!request.ParseFromString(message)) {
    return InvalidArgument("request is malformed");
  }
  if (request.topics().empty()) {
    return InvalidArgument("a static stream needs at least one topic");
  }
  if (static_cast<uint64_t>(request.topics_size()) > ctx.limits.max_static_topics) {
    return InvalidArgument("too many topics for one static stream");
  }
  std::vector<store::TopicCursor> adds;
  adds.reserve(static_cast<size_t>(request.topics_size()));
  std::unordered_set<std::string_view> seen;
  for (const auto& query : request.topics()) {
    if (Status s = CheckTopicQuery(query); !s.ok()) {
      return s;
    }
    if (!seen.insert(query.topic().topic()).second) {
      return InvalidArgument("a topic appears more than once");
    }
    adds.push_back(store::TopicCursor{query.topic().topic(),
                                      static_cast<int64_t>(query.cursor().sequence_id())});
  }
  return adds;
}

// SubscribeStatic's frames around its rows: Started with the catch-up targets, then Messages
// frames and Keepalive (API.md 3.9).
StaticStreamProtocol StaticProtocol(const ApiContext& ctx) {
  StaticStreamProtocol protocol;
  protocol.wire = fanout::StreamWire::Messages(kStaticMessagesField);
  const auto keepalive_ms = static_cast<uint32_t>(ctx.stream_settings.keepalive_interval_ms);
  protocol.started = [keepalive_ms](const std::vector<fanout::CatchupTargetOut>& targets) {
    v1::SubscribeStaticResponse started;
    started.mutable_started()->set_keepalive_interval_ms(keepalive_ms);
    for (auto& target : ToTargets(targets)) {
      *started.mutable_started()->add_targets() = std::move(target);
    }
    return started.SerializeAsString();
  };
  v1::SubscribeStaticResponse keepalive_frame;
  keepalive_frame.mutable_keepalive();
  protocol.keepalive = keepalive_frame.SerializeAsString();
  return protocol;
}

// implements: API-260
asio::awaitable<void> SubscribeStatic(const ApiContext& ctx, std::shared_ptr<rpc::Call> call) {
  co_await ServeStaticStream(ctx, call, StaticProtocol(ctx), [&ctx](const std::string& message) {
    return StaticTopics(ctx, message);
  });
}

}  // namespace

void AddStreamService(rpc::Router& router, const ApiContext& context) {
  router.Add("/xmtp.backend.v1.SubscriptionService/Subscribe", rpc::CallKind::kBidiStream,
             [&context](std::shared_ptr<rpc::Call> call) { return Subscribe(context, call); });
  router.Add(
      "/xmtp.backend.v1.SubscriptionService/SubscribeStatic", rpc::CallKind::kServerStream,
      [&context](std::shared_ptr<rpc::Call> call) { return SubscribeStatic(context, call); });
}

}  // namespace xb::api
