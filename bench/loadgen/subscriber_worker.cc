#include "subscriber_worker.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <thread>
#include <utility>

#include "xmtp/backend/v1/backend.pb.h"

namespace xb::bench {
namespace {

namespace v1 = ::xmtp::backend::v1;

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

std::string PongRequest(uint64_t nonce) {
  v1::SubscribeRequest pong;
  pong.mutable_pong()->set_nonce(nonce);
  return pong.SerializeAsString();
}

Stream::Stream(StreamSpec spec, StreamObserver* observer)
    : spec_(std::move(spec)), observer_(observer) {}

void Stream::Fail(const std::string& what) {
  observer_->OnProtocolError(*this, what);
  Cancel();
}

void Stream::OnMessage(std::string_view bytes, Clock::time_point now) {
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
    case K::kPing:
      Send(PongRequest(frame_.id));
      break;
    case K::kKeepalive:
    case K::kPong:
      break;
    case K::kUnknown:
      return Fail("a frame with no known response set");
  }
}

void SubscriberWorker::CancelAndDrain() {
  if (live() == 0) return;
  CancelAll();
  const auto deadline = Clock::now() + std::chrono::seconds(60);
  while (live() > 0) {
    if (Clock::now() > deadline) {
      std::fprintf(stderr, "loadgen: %zu streams did not end within 60 s of being cancelled\n",
                   live());
      std::_Exit(1);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

}  // namespace xb::bench
