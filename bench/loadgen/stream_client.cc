#include "stream_client.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <thread>
#include <utility>

#include "xmtp/backend/v1/backend.grpc.pb.h"

namespace xb::bench {
namespace {

namespace v1 = ::xmtp::backend::v1;

constexpr char kSubscribeStaticMethod[] = "/xmtp.backend.v1.SubscriptionService/SubscribeStatic";
constexpr char kSubscribeMethod[] = "/xmtp.backend.v1.SubscriptionService/Subscribe";
constexpr auto kDrainDeadline = std::chrono::seconds(60);

grpc::ByteBuffer ToByteBuffer(const std::string& bytes) {
  grpc::Slice slice(bytes);
  return grpc::ByteBuffer(&slice, 1);
}

}  // namespace

std::string RegistrationRequest(StreamKind kind, const std::vector<std::string>& topics,
                                uint64_t cursor) {
  if (kind == StreamKind::kStatic) {
    v1::SubscribeStaticRequest req;
    for (const auto& t : topics) {
      auto* q = req.add_topics();
      q->mutable_topic()->set_topic(t);
      q->mutable_cursor()->set_sequence_id(cursor);
    }
    return req.SerializeAsString();
  }
  v1::SubscribeRequest req;
  auto* update = req.mutable_update();
  update->set_id(1);
  for (const auto& t : topics) {
    auto* q = update->add_adds();
    q->mutable_topic()->set_topic(t);
    q->mutable_cursor()->set_sequence_id(cursor);
  }
  return req.SerializeAsString();
}

Stream::Stream(StreamSpec spec, StreamObserver* observer)
    : spec_(std::move(spec)), observer_(observer) {
  QueueWrite(ToByteBuffer(RegistrationRequest(spec_.kind, spec_.topics, spec_.cursor)),
             /*writes_done=*/false);
  // A server-streaming client half-closes after its one request; a bidi client keeps its
  // request side open (API-259: the half-close would end the stream).
  if (spec_.kind == StreamKind::kStatic) QueueWrite(grpc::ByteBuffer(), /*writes_done=*/true);
}

void Stream::Cancel() {
  cancelled_.store(true, std::memory_order_relaxed);
  ctx_.TryCancel();
}

void Stream::Begin(grpc::GenericStub* stub, grpc::CompletionQueue* cq) {
  call_ = stub->PrepareCall(
      &ctx_, spec_.kind == StreamKind::kStatic ? kSubscribeStaticMethod : kSubscribeMethod, cq);
  ++pending_;
  call_->StartCall(&start_tag_);
}

void Stream::QueueWrite(grpc::ByteBuffer bytes, bool writes_done) {
  writes_.push_back(PendingWrite{std::move(bytes), writes_done});
}

void Stream::PumpWrites() {
  if (writing_ || writes_.empty() || finishing_) return;
  writing_ = true;
  ++pending_;
  if (writes_.front().writes_done) {
    call_->WritesDone(&write_tag_);
  } else {
    call_->Write(writes_.front().bytes, &write_tag_);
  }
}

void Stream::Read() {
  ++pending_;
  call_->Read(&in_, &read_tag_);
}

void Stream::Fail(const std::string& what) {
  observer_->OnProtocolError(*this, what);
  Cancel();
}

bool Stream::OnEvent(Op op, bool ok) {
  --pending_;
  switch (op) {
    case Op::kStart:
      if (ok) {
        PumpWrites();
        Read();
      } else {
        finishing_ = true;
        ++pending_;
        call_->Finish(&status_, &finish_tag_);
      }
      break;
    case Op::kWrite:
      writing_ = false;
      writes_.pop_front();
      if (ok) {
        PumpWrites();
      } else {
        writes_.clear();  // the call is over; the pending Read fails next
      }
      break;
    case Op::kRead:
      if (ok) {
        OnFrame();
        Read();
      } else {
        finishing_ = true;
        ++pending_;
        call_->Finish(&status_, &finish_tag_);
      }
      break;
    case Op::kFinish:
      done_ = true;
      observer_->OnDone(*this, status_);
      break;
  }
  return done_ && pending_ == 0;
}

void Stream::OnFrame() {
  const auto now = Clock::now();
  grpc::Slice single;
  std::string_view bytes;
  if (in_.TrySingleSlice(&single).ok()) {
    bytes = std::string_view(reinterpret_cast<const char*>(single.begin()), single.size());
  } else {
    std::vector<grpc::Slice> slices;
    (void)in_.Dump(&slices);
    flat_.clear();
    for (const auto& s : slices) flat_.append(reinterpret_cast<const char*>(s.begin()), s.size());
    bytes = flat_;
  }
  if (!DecodeFrame(spec_.kind, bytes, &frame_)) {
    Fail("a frame that does not decode");
    return;
  }
  using K = FrameView::Kind;
  switch (frame_.kind) {
    case K::kStarted:
      if (spec_.kind == StreamKind::kStatic) {
        if (ready_) return Fail("a second Started");
        ready_ = true;
        observer_->OnReady(*this, frame_, now);
      } else {
        if (started_frame_) return Fail("a second Started");
        started_frame_ = true;
      }
      break;
    case K::kApplied:
      if (!started_frame_) return Fail("Applied before Started (API-250)");
      if (ready_ || frame_.id != 1) return Fail("an Applied for an update never sent");
      ready_ = true;
      observer_->OnReady(*this, frame_, now);
      break;
    case K::kMessages:
      if (!ready_) return Fail("Messages before the registration was acknowledged");
      observer_->OnMessages(*this, frame_, bytes.size(), now);
      break;
    case K::kPing: {
      v1::SubscribeRequest pong;
      pong.mutable_pong()->set_nonce(frame_.id);
      QueueWrite(ToByteBuffer(pong.SerializeAsString()), /*writes_done=*/false);
      PumpWrites();
      break;
    }
    case K::kKeepalive:
    case K::kPong:
      break;
    case K::kUnknown:
      return Fail("a frame with no known response set");
  }
}

StreamWorker::StreamWorker(StreamObserver* observer)
    : observer_(observer), thread_([this] { Loop(); }) {}

StreamWorker::~StreamWorker() { Shutdown(); }

void StreamWorker::Open(grpc::GenericStub* stub, StreamSpec spec) {
  auto owned = std::unique_ptr<Stream>(new Stream(std::move(spec), observer_));
  Stream* s = owned.get();
  {
    std::lock_guard<std::mutex> lock(mu_);
    streams_.emplace(s, std::move(owned));
  }
  live_.fetch_add(1, std::memory_order_acq_rel);
  s->Begin(stub, &cq_);
}

void StreamWorker::CancelAll() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [s, owned] : streams_) s->Cancel();
}

void StreamWorker::Shutdown() {
  if (shut_down_) return;
  shut_down_ = true;
  if (live() > 0) {
    CancelAll();
    const auto deadline = Clock::now() + kDrainDeadline;
    while (live() > 0) {
      if (Clock::now() > deadline) {
        std::fprintf(stderr, "loadgen: %zu streams did not end within 60 s of being cancelled\n",
                     live());
        std::_Exit(1);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  cq_.Shutdown();
  thread_.join();
}

void StreamWorker::Loop() {
  void* tag = nullptr;
  bool ok = false;
  while (cq_.Next(&tag, &ok)) {
    auto* t = static_cast<Stream::Tag*>(tag);
    if (t->stream->OnEvent(t->op, ok)) {
      std::unique_ptr<Stream> dead;
      {
        std::lock_guard<std::mutex> lock(mu_);
        auto it = streams_.find(t->stream);
        dead = std::move(it->second);
        streams_.erase(it);
      }
      dead.reset();
      live_.fetch_sub(1, std::memory_order_acq_rel);
    }
  }
}

}  // namespace xb::bench
