// --mode stream-verify: the correctness gate bench/streams.sh runs before any stream load, with
// the generated sync stubs (so it checks the server independently of frame_decoder.h).
//
// Publishes 3 envelopes to a fresh topic A, then:
//   static: SubscribeStatic{A cursor 0, B (fresh, empty) cursor 0} must start with
//     Started{targets [(A, last id), (B, 0)]} (API-260), deliver exactly the 3 envelopes with the
//     published bytes and ids in order (API-254), then a 4th published live.
//   bidi: Subscribe must send Started first (API-250); Update{id 1, adds [A cursor 0]} must be
//     acknowledged by Applied{id 1, added_targets [(A, 4th id)]} (API-252) before the 4 envelopes;
//     a 5th is delivered live; after the client half-closes the stream ends OK (API-259).
// Then, for each kind that passed, the same through the subscriber transport of --transport (the
// client the load cases read with, frames decoded by frame_decoder.h): the acknowledgement's
// targets, every envelope so far with the published bytes, topic and ids in order, one more
// published live, and CANCELLED after our cancel. A kind is ok only when both passed.
// Prints "RESULT mode=stream-verify transport=T static=S bidi=B" with S, B one of ok,
// unimplemented, fail. Exit 0 when static is ok, 3 when the server answered it UNIMPLEMENTED, 1
// otherwise.
#include <chrono>
#include <cinttypes>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <string>
#include <vector>

#include "loadgen.h"
#include "subscriber_worker.h"
#include "xmtp/backend/v1/backend.grpc.pb.h"

namespace xb::bench {
namespace {

namespace v1 = ::xmtp::backend::v1;

constexpr auto kStreamDeadline = std::chrono::seconds(20);

struct Published {
  std::vector<std::string> data;
  std::vector<uint64_t> ids;
};

enum class Verdict { kOk, kUnimplemented, kFail };

// Records what one transport stream delivers; the gate thread waits on it. Observer calls come
// from the worker's thread.
class Recorder : public StreamObserver {
 public:
  struct Envelope {
    uint64_t id;
    std::string topic;
    std::string data;
  };

  void OnReady(Stream&, const FrameView& f, Clock::time_point) override {
    std::lock_guard<std::mutex> lock(mu_);
    ready_ = true;
    for (const auto& t : f.targets) targets_.emplace_back(t.topic, t.through_sequence_id);
    cv_.notify_all();
  }
  void OnMessages(Stream&, const FrameView& f, size_t, Clock::time_point) override {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& e : f.envelopes) {
      envelopes_.push_back(Envelope{e.sequence_id, std::string(e.topic), std::string(e.data)});
    }
    cv_.notify_all();
  }
  void OnDone(Stream& s, const grpc::Status& status) override {
    std::lock_guard<std::mutex> lock(mu_);
    done_ = true;
    status_ = status;
    cancelled_ = s.cancelled();
    cv_.notify_all();
  }
  void OnProtocolError(Stream&, const std::string& what) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (protocol_error_.empty()) protocol_error_ = what;
  }

  // Waits (up to kStreamDeadline) until the stream was acknowledged or ended.
  void WaitReady() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, kStreamDeadline, [&] { return done_ || ready_; });
  }
  // Waits (up to kStreamDeadline) until the stream holds `n` envelopes or ended; returns how
  // many it holds.
  size_t WaitEnvelopes(size_t n) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, kStreamDeadline, [&] { return done_ || envelopes_.size() >= n; });
    return envelopes_.size();
  }
  // Waits (up to kStreamDeadline) for the end.
  bool WaitDone() {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, kStreamDeadline, [&] { return done_; });
  }

  // Read once the worker is shut down (no more calls).
  bool ready() const { return ready_; }
  bool done() const { return done_; }
  bool cancelled() const { return cancelled_; }
  const grpc::Status& status() const { return status_; }
  const std::vector<std::pair<std::string, uint64_t>>& targets() const { return targets_; }
  const std::vector<Envelope>& envelopes() const { return envelopes_; }
  const std::string& protocol_error() const { return protocol_error_; }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool ready_ = false;                                     // guarded by mu_
  bool done_ = false;                                      // guarded by mu_
  bool cancelled_ = false;                                 // guarded by mu_
  grpc::Status status_;                                    // guarded by mu_
  std::vector<std::pair<std::string, uint64_t>> targets_;  // guarded by mu_
  std::vector<Envelope> envelopes_;                        // guarded by mu_
  std::string protocol_error_;                             // guarded by mu_
};

const char* Name(Verdict v) {
  return v == Verdict::kOk ? "ok" : (v == Verdict::kUnimplemented ? "unimplemented" : "fail");
}

class Gate {
 public:
  explicit Gate(const Options& o)
      : o_(o),
        run_(RunNonce()),
        channel_(MakeChannel(o.target, 0)),
        publish_(v1::PublishService::NewStub(channel_)),
        subscribe_(v1::SubscriptionService::NewStub(channel_)),
        a_(TopicOf(RunGroupId(run_, 0))),
        b_(TopicOf(RunGroupId(run_, 1))) {}

  // Publishes `n` envelopes to topic A; false (printed) on failure.
  bool Publish(int n) {
    v1::PublishRequest req;
    for (int i = 0; i < n; ++i) {
      req.add_envelopes()->mutable_group_message()->set_data(PrivateMessage(
          RunGroupId(run_, 0), run_, 0, counter_++, static_cast<size_t>(o_.payload)));
    }
    v1::PublishResponse resp;
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + kCallDeadline);
    const grpc::Status s = publish_->Publish(&ctx, req, &resp);
    if (!s.ok() || resp.envelope_metas_size() != n) {
      std::printf("stream-verify: Publish failed: %d %s\n", s.error_code(),
                  s.error_message().c_str());
      return false;
    }
    for (int i = 0; i < n; ++i) {
      published_.data.push_back(req.envelopes(i).group_message().data());
      published_.ids.push_back(resp.envelope_metas(i).cursor().sequence_id());
    }
    return true;
  }

  // Checks the envelopes of `m` against published envelope `next`, `next + 1`, ...
  bool Expect(const google::protobuf::RepeatedPtrField<v1::ServerEnvelope>& envs, size_t& next,
              const char* kind) {
    for (const auto& e : envs) {
      if (next >= published_.ids.size()) {
        std::printf("stream-verify %s: an envelope beyond those published (id %" PRIu64 ")\n", kind,
                    e.meta().cursor().sequence_id());
        return false;
      }
      if (e.meta().cursor().sequence_id() != published_.ids[next] ||
          e.meta().topic().topic() != a_ ||
          e.envelope().group_message().data() != published_.data[next]) {
        std::printf("stream-verify %s: envelope %zu differs from the one published (id %" PRIu64
                    ", want %" PRIu64 ")\n",
                    kind, next, e.meta().cursor().sequence_id(), published_.ids[next]);
        return false;
      }
      ++next;
    }
    return true;
  }

  Verdict Static() {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + kStreamDeadline);
    v1::SubscribeStaticRequest req;
    for (const auto* t : {&a_, &b_}) {
      auto* q = req.add_topics();
      q->mutable_topic()->set_topic(*t);
      q->mutable_cursor()->set_sequence_id(0);
    }
    auto reader = subscribe_->SubscribeStatic(&ctx, req);
    v1::SubscribeStaticResponse resp;
    if (!reader->Read(&resp)) return Ended(reader->Finish(), "static", "before Started");
    if (!resp.has_started() || resp.started().targets_size() != 2 ||
        resp.started().targets(0).topic().topic() != a_ ||
        resp.started().targets(0).through_sequence_id() != published_.ids.back() ||
        resp.started().targets(1).topic().topic() != b_ ||
        resp.started().targets(1).through_sequence_id() != 0) {
      std::printf("stream-verify static: the first frame is not Started{[(A, %" PRIu64
                  "), (B, 0)]}: %s\n",
                  published_.ids.back(), resp.ShortDebugString().substr(0, 300).c_str());
      return Verdict::kFail;
    }
    size_t next = 0;
    if (!ReadThrough(*reader, next, "static")) return Verdict::kFail;
    if (!Publish(1) || !ReadThrough(*reader, next, "static (live)")) return Verdict::kFail;
    ctx.TryCancel();
    (void)reader->Finish();
    std::printf(
        "stream-verify static: ok: Started with both targets, %zu envelopes in order, "
        "the last one live\n",
        next);
    return Verdict::kOk;
  }

  Verdict Bidi() {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + kStreamDeadline);
    auto stream = subscribe_->Subscribe(&ctx);
    v1::SubscribeResponse resp;
    if (!stream->Read(&resp)) return Ended(stream->Finish(), "bidi", "before Started");
    if (!resp.has_started()) {
      std::printf("stream-verify bidi: the first frame is not Started (API-250)\n");
      return Verdict::kFail;
    }
    v1::SubscribeRequest update;
    update.mutable_update()->set_id(1);
    auto* add = update.mutable_update()->add_adds();
    add->mutable_topic()->set_topic(a_);
    add->mutable_cursor()->set_sequence_id(0);
    if (!stream->Write(update)) return Ended(stream->Finish(), "bidi", "on the Update");
    if (!stream->Read(&resp)) return Ended(stream->Finish(), "bidi", "before Applied");
    if (!resp.has_applied() || resp.applied().id() != 1 ||
        resp.applied().added_targets_size() != 1 ||
        resp.applied().added_targets(0).topic().topic() != a_ ||
        resp.applied().added_targets(0).through_sequence_id() != published_.ids.back()) {
      std::printf("stream-verify bidi: the frame after the Update is not Applied{1, [(A, %" PRIu64
                  ")]}: %s\n",
                  published_.ids.back(), resp.ShortDebugString().substr(0, 300).c_str());
      return Verdict::kFail;
    }
    size_t next = 0;
    if (!ReadThrough(*stream, next, "bidi")) return Verdict::kFail;
    if (!Publish(1) || !ReadThrough(*stream, next, "bidi (live)")) return Verdict::kFail;
    stream->WritesDone();
    while (stream->Read(&resp)) {
    }
    const grpc::Status end = stream->Finish();
    if (!end.ok()) {
      std::printf(
          "stream-verify bidi: after the half-close the stream ended %d %s, not OK "
          "(API-259)\n",
          end.error_code(), end.error_message().c_str());
      return Verdict::kFail;
    }
    std::printf(
        "stream-verify bidi: ok: Started, Applied with the target, %zu envelopes in "
        "order, the last one live; OK after the half-close\n",
        next);
    return Verdict::kOk;
  }

  // The same kind of stream through the subscriber transport: see the top of this file.
  Verdict ViaTransport(StreamKind kind) {
    const char* name = kind == StreamKind::kStatic ? "static" : "bidi";
    const char* transport = TransportName(o_.transport);
    Recorder rec;
    auto worker = MakeSubscriberWorker(o_, &rec);
    StreamSpec spec{.kind = kind, .topics = {a_}, .cursor = 0, .channel = 0, .tag = 0};
    if (kind == StreamKind::kStatic) spec.topics.push_back(b_);
    worker->Open(spec);
    std::vector<std::pair<std::string, uint64_t>> want = {{a_, published_.ids.back()}};
    if (kind == StreamKind::kStatic) want.emplace_back(b_, 0);
    const size_t history = published_.ids.size();
    size_t got = 0;
    std::string problem;
    rec.WaitReady();
    // Until the worker is shut down only the Wait results are read; rec's accessors after.
    if (rec.WaitEnvelopes(history) < history) {
      problem = "fewer envelopes than published before the live one";
    } else if (!Publish(1)) {
      problem = "the live Publish failed";
    } else if ((got = rec.WaitEnvelopes(history + 1)) < history + 1) {
      problem = "the live envelope did not arrive";
    }
    worker->CancelAll();
    const bool ended = rec.WaitDone();
    worker->Shutdown();
    if (!rec.ready()) {
      std::printf(
          "stream-verify %s (%s transport): the stream ended before its acknowledgement: "
          "%d %s\n",
          name, transport, rec.status().error_code(), rec.status().error_message().c_str());
      return rec.status().error_code() == grpc::StatusCode::UNIMPLEMENTED ? Verdict::kUnimplemented
                                                                          : Verdict::kFail;
    }
    if (problem.empty() && rec.targets() != want) problem = "targets differ from the expected ones";
    if (problem.empty()) {
      for (size_t i = 0; i < rec.envelopes().size(); ++i) {
        const auto& e = rec.envelopes()[i];
        if (i >= published_.ids.size() || e.id != published_.ids[i] || e.topic != a_ ||
            e.data != published_.data[i]) {
          problem = "envelope " + std::to_string(i) + " differs from the one published";
          break;
        }
      }
    }
    if (problem.empty() && !rec.protocol_error().empty()) problem = rec.protocol_error();
    if (problem.empty() &&
        (!ended || !rec.cancelled() || rec.status().error_code() != grpc::StatusCode::CANCELLED)) {
      problem = "after our cancel the stream ended " + std::to_string(rec.status().error_code()) +
                " " + rec.status().error_message() + ", not CANCELLED";
    }
    if (!problem.empty()) {
      std::printf("stream-verify %s (%s transport): %s\n", name, transport, problem.c_str());
      return Verdict::kFail;
    }
    std::printf(
        "stream-verify %s (%s transport): ok: acknowledged with the targets, %zu envelopes in "
        "order with the published bytes, the last one live; CANCELLED after our cancel\n",
        name, transport, got);
    return Verdict::kOk;
  }

 private:
  // Reads Messages until every published envelope arrived; other frames are skipped.
  template <typename Reader>
  bool ReadThrough(Reader& r, size_t& next, const char* kind) {
    using Response =
        std::conditional_t<std::is_same_v<Reader, grpc::ClientReader<v1::SubscribeStaticResponse>>,
                           v1::SubscribeStaticResponse, v1::SubscribeResponse>;
    Response resp;
    while (next < published_.ids.size()) {
      if (!r.Read(&resp)) {
        std::printf("stream-verify %s: the stream ended after %zu of %zu envelopes\n", kind, next,
                    published_.ids.size());
        return false;
      }
      if (resp.has_messages() && !Expect(resp.messages().envelopes(), next, kind)) return false;
    }
    return true;
  }

  Verdict Ended(const grpc::Status& s, const char* kind, const char* when) {
    std::printf("stream-verify %s: the stream ended %s: %d %s\n", kind, when, s.error_code(),
                s.error_message().c_str());
    return s.error_code() == grpc::StatusCode::UNIMPLEMENTED ? Verdict::kUnimplemented
                                                             : Verdict::kFail;
  }

  const Options& o_;
  const uint64_t run_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::PublishService::Stub> publish_;
  std::unique_ptr<v1::SubscriptionService::Stub> subscribe_;
  const std::string a_;
  const std::string b_;
  uint64_t counter_ = 0;
  Published published_;
};

}  // namespace

int RunStreamVerify(const Options& o) {
  Gate gate(o);
  if (!gate.Publish(3)) {
    std::printf("RESULT mode=stream-verify static=fail bidi=fail\n");
    return 1;
  }
  Verdict s = gate.Static();
  Verdict b = gate.Bidi();
  if (s == Verdict::kOk) s = gate.ViaTransport(StreamKind::kStatic);
  if (b == Verdict::kOk) b = gate.ViaTransport(StreamKind::kBidi);
  std::printf("RESULT mode=stream-verify transport=%s static=%s bidi=%s\n",
              TransportName(o.transport), Name(s), Name(b));
  return s == Verdict::kOk ? 0 : (s == Verdict::kUnimplemented ? 3 : 1);
}

}  // namespace xb::bench
