#include "stream_client.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

namespace xb::bench {
namespace {

constexpr char kSubscribeStaticMethod[] = "/xmtp.backend.v1.SubscriptionService/SubscribeStatic";
constexpr char kSubscribeMethod[] = "/xmtp.backend.v1.SubscriptionService/Subscribe";

grpc::ByteBuffer ToByteBuffer(const std::string& bytes) {
  grpc::Slice slice(bytes);
  return grpc::ByteBuffer(&slice, 1);
}

}  // namespace

// One call. Its completions come back to the worker's queue tagged with one of its Tags.
class GrpcStream final : public Stream {
 public:
  enum class Op { kStart, kWrite, kRead, kFinish };
  struct Tag {
    GrpcStream* stream;
    Op op;
  };

  GrpcStream(StreamSpec spec, StreamObserver* observer) : Stream(std::move(spec), observer) {
    QueueWrite(ToByteBuffer(RegistrationRequest(spec_.kind, spec_.topics, spec_.cursor)),
               /*writes_done=*/false);
    // A server-streaming client half-closes after its one request; a bidi client keeps its
    // request side open (API-259: the half-close would end the stream).
    if (spec_.kind == StreamKind::kStatic) QueueWrite(grpc::ByteBuffer(), /*writes_done=*/true);
  }

  void Cancel() override {
    MarkCancelled();
    ctx_.TryCancel();
  }

  void Begin(grpc::GenericStub* stub, grpc::CompletionQueue* cq) {
    call_ = stub->PrepareCall(
        &ctx_, spec_.kind == StreamKind::kStatic ? kSubscribeStaticMethod : kSubscribeMethod, cq);
    ++pending_;
    call_->StartCall(&start_tag_);
  }

  // Handles one completion; returns true when the stream is finished and no op is pending.
  bool OnEvent(Op op, bool ok);

 private:
  struct PendingWrite {
    grpc::ByteBuffer bytes;
    bool writes_done = false;  // a half-close instead of a message
  };

  void Send(std::string message) override {
    QueueWrite(ToByteBuffer(message), /*writes_done=*/false);
    PumpWrites();
  }
  void OnFrame();
  void QueueWrite(grpc::ByteBuffer bytes, bool writes_done) {
    writes_.push_back(PendingWrite{std::move(bytes), writes_done});
  }
  void PumpWrites();
  void Read() {
    ++pending_;
    call_->Read(&in_, &read_tag_);
  }
  void Finish() {
    finishing_ = true;
    ++pending_;
    call_->Finish(&status_, &finish_tag_);
  }

  grpc::ClientContext ctx_;
  std::unique_ptr<grpc::GenericClientAsyncReaderWriter> call_;
  grpc::ByteBuffer in_;
  grpc::Status status_;
  std::deque<PendingWrite> writes_;
  bool writing_ = false;
  bool finishing_ = false;
  bool done_ = false;
  int pending_ = 0;   // ops issued and not yet completed
  std::string flat_;  // a multi-slice frame, flattened
  Tag start_tag_{this, Op::kStart};
  Tag write_tag_{this, Op::kWrite};
  Tag read_tag_{this, Op::kRead};
  Tag finish_tag_{this, Op::kFinish};
};

void GrpcStream::PumpWrites() {
  if (writing_ || writes_.empty() || finishing_) return;
  writing_ = true;
  ++pending_;
  if (writes_.front().writes_done) {
    call_->WritesDone(&write_tag_);
  } else {
    call_->Write(writes_.front().bytes, &write_tag_);
  }
}

bool GrpcStream::OnEvent(Op op, bool ok) {
  --pending_;
  switch (op) {
    case Op::kStart:
      if (ok) {
        PumpWrites();
        Read();
      } else {
        Finish();
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
        Finish();
      }
      break;
    case Op::kFinish:
      done_ = true;
      NotifyDone(status_);
      break;
  }
  return done_ && pending_ == 0;
}

void GrpcStream::OnFrame() {
  const auto now = Clock::now();
  grpc::Slice single;
  if (in_.TrySingleSlice(&single).ok()) {
    OnMessage(std::string_view(reinterpret_cast<const char*>(single.begin()), single.size()), now);
    return;
  }
  std::vector<grpc::Slice> slices;
  (void)in_.Dump(&slices);
  flat_.clear();
  for (const auto& s : slices) flat_.append(reinterpret_cast<const char*>(s.begin()), s.size());
  OnMessage(flat_, now);
}

GrpcStreamWorker::GrpcStreamWorker(std::string target, StreamObserver* observer)
    : target_(std::move(target)), observer_(observer), thread_([this] { Loop(); }) {}

GrpcStreamWorker::~GrpcStreamWorker() { Shutdown(); }

void GrpcStreamWorker::Open(StreamSpec spec) {
  const size_t c = spec.channel;
  auto owned = std::make_unique<GrpcStream>(std::move(spec), observer_);
  GrpcStream* s = owned.get();
  grpc::GenericStub* stub = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto [it, inserted] = channels_.try_emplace(c);
    if (inserted) {
      it->second.channel = MakeChannel(target_, static_cast<int>(c));
      it->second.stub = std::make_unique<grpc::GenericStub>(it->second.channel);
    }
    stub = it->second.stub.get();
    streams_.emplace(s, std::move(owned));
  }
  live_.fetch_add(1, std::memory_order_acq_rel);
  s->Begin(stub, &cq_);
}

void GrpcStreamWorker::CancelAll() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [s, owned] : streams_) s->Cancel();
}

void GrpcStreamWorker::Shutdown() {
  if (shut_down_) return;
  shut_down_ = true;
  CancelAndDrain();
  cq_.Shutdown();
  thread_.join();
}

void GrpcStreamWorker::Loop() {
  void* tag = nullptr;
  bool ok = false;
  while (cq_.Next(&tag, &ok)) {
    auto* t = static_cast<GrpcStream::Tag*>(tag);
    if (t->stream->OnEvent(t->op, ok)) {
      std::unique_ptr<GrpcStream> dead;
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
