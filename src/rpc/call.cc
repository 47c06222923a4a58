#include "rpc/call.h"

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cstring>

#include "base/background_release.h"
#include "base/encoding.h"

namespace xb::rpc {

namespace asio = boost::asio;

namespace {

// Request bytes a call holds before they count against the response memory bounds.
constexpr uint64_t kUnchargedRequestBytes = 64 * 1024;

// A streaming handler waits above this many queued response bytes (a slow client).
constexpr size_t kOutboundHighWater = 4 * 1024 * 1024;

const std::string kExposeHeaders = "grpc-status,grpc-message,grpc-status-details-bin,x-request-id";

std::string_view ContentType(Dialect dialect) {
  switch (dialect) {
    case Dialect::kGrpc:
      return "application/grpc";
    case Dialect::kGrpcWeb:
      return "application/grpc-web+proto";
    case Dialect::kGrpcWebText:
      return "application/grpc-web-text+proto";
  }
  return "application/grpc";
}

}  // namespace

Call::Call(CallOptions options, asio::any_io_executor executor, net::Waker wake)
    : wake_(std::move(wake)),
      options_(std::move(options)),
      started_at_(Clock::now()),
      executor_(executor),
      decoder_(options_.max_request_bytes),
      handler_timer_(executor_) {}

Call::~Call() {
  // A call reset before its response went out: its large pieces are freed off this I/O thread
  // too.
  for (SharedPiece& piece : shared_) {
    ReleaseInBackground(std::move(piece.keep), piece.bytes.size());
  }
}

void Call::EnsureHead() {
  if (head_ready_) {
    return;
  }
  head_ready_ = true;
  head_.status = 200;
  head_.headers.reserve(4);
  head_.headers.push_back({"content-type", std::string(ContentType(options_.dialect))});
  // implements: OPS-011 (a fresh server-generated id on every response)
  head_.headers.push_back({"x-request-id", options_.request_id});
  if (options_.dialect != Dialect::kGrpc) {
    head_.headers.push_back({"access-control-allow-origin", "*"});
    head_.headers.push_back({"access-control-expose-headers", kExposeHeaders});
  }
}

// Before appending: drop the bytes the connection already took, so that the buffer of a stream
// that never fully drains under load keeps its size (no growth, no fresh pages) instead of
// growing with everything it ever sent. The move is amortized: at most once per its own size.
void Call::CompactOut() {
  if (out_pos_ == out_len_) {
    out_len_ = 0;
    out_pos_ = 0;
  } else if (out_pos_ >= 64 * 1024 && out_pos_ >= out_len_ - out_pos_) {
    std::memmove(out_.data(), out_.data() + out_pos_, out_len_ - out_pos_);
    out_len_ -= out_pos_;
    out_pos_ = 0;
  }
}

char* Call::GrowOut(size_t n) {
  // The buffer only grows: bytes past out_len_ are reused without being cleared, and growing
  // moves only the bytes not yet pulled by the connection.
  const size_t moved = out_.Reserve(out_len_ + n, out_pos_, out_len_);
  out_pos_ -= moved;
  out_len_ -= moved;
  char* at = out_.data() + out_len_;
  out_len_ += n;
  appended_bytes_ += n;
  owned_appended_ += n;
  return at;
}

Status Call::BeginMessage(size_t size) {
  if (ended_) {
    return Status(StatusCode::kCancelled, "call ended");
  }
  EnsureHead();
  PutFrameHeader(size, /*with_body=*/false);
  return Status::Ok();
}

void Call::AppendCopy(std::string_view bytes) {
  if (!bytes.empty()) {
    std::memcpy(GrowOut(bytes.size()), bytes.data(), bytes.size());
  }
}

void Call::AppendShared(std::string_view bytes, std::shared_ptr<const void> keep) {
  if (bytes.empty()) {
    return;
  }
  shared_.push_back(SharedPiece{owned_appended_, appended_bytes_, bytes, std::move(keep)});
  shared_pending_ += bytes.size();
  appended_bytes_ += bytes.size();
}

void Call::EndMessage() {
  QueueMessageEnd();
  wake_();
}

void Call::QueueMessageEnd() {
  if (streaming()) {
    queued_ends_.push_back(appended_bytes_);
  }
}

void Call::AppendOut(std::string_view frame) {
  CompactOut();
  if (options_.dialect == Dialect::kGrpcWebText) {
    const std::string text = Base64(frame);
    std::memcpy(GrowOut(text.size()), text.data(), text.size());
  } else if (!frame.empty()) {
    std::memcpy(GrowOut(frame.size()), frame.data(), frame.size());
  }
}

char* Call::ReserveFrame(size_t size) {
  char* message = PutFrameHeader(size);
  QueueMessageEnd();
  return message;
}

char* Call::PutFrameHeader(size_t size, bool with_body) {
  CompactOut();
  char* header = GrowOut(kFrameHeaderBytes + (with_body ? size : 0));
  header[0] = 0;
  header[1] = static_cast<char>((size >> 24) & 0xff);
  header[2] = static_cast<char>((size >> 16) & 0xff);
  header[3] = static_cast<char>((size >> 8) & 0xff);
  header[4] = static_cast<char>(size & 0xff);
  return header + kFrameHeaderBytes;
}

std::string Call::TakeMessage() {
  std::string message = std::move(messages_[next_message_++]);
  if (next_message_ == messages_.size()) {
    messages_.clear();
    next_message_ = 0;
  }
  queued_message_bytes_ -= std::min<uint64_t>(queued_message_bytes_, message.size());
  if (streaming()) {
    ChargeRequestMemory();  // gives back what the handler now holds (it only shrinks here)
  }
  return message;
}

asio::awaitable<void> Call::WaitEvent(Clock::time_point until) {
  auto self = shared_from_this();
  if (!handler_wake_pending_ && !ended_) {
    handler_timer_.expires_at(until);
    boost::system::error_code ec;
    co_await handler_timer_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  }
  handler_wake_pending_ = false;
}

void Call::WakeHandler() {
  handler_wake_pending_ = true;
  handler_timer_.cancel();
}

asio::awaitable<void> Call::WaitHandler() {
  if (!handler_wake_pending_) {
    handler_timer_.expires_at(Clock::time_point::max());
    boost::system::error_code ec;
    co_await handler_timer_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  }
  handler_wake_pending_ = false;
}

asio::awaitable<Result<std::optional<std::string>>> Call::Read() {
  auto self = shared_from_this();
  while (true) {
    if (next_message_ < messages_.size()) {
      std::string message = std::move(messages_[next_message_++]);
      if (next_message_ == messages_.size()) {
        messages_.clear();
        next_message_ = 0;
      }
      co_return std::optional<std::string>(std::move(message));
    }
    if (ended_) {
      co_return Status(StatusCode::kCancelled, "call ended");
    }
    if (request_ended_) {
      co_return std::optional<std::string>();
    }
    co_await WaitHandler();
  }
}

// implements: docs/v3-api.md G4 (response headers at stream open)
void Call::SendHeaders() {
  if (ended_ || head_ready_) {
    return;
  }
  EnsureHead();
  wake_();  // the connection submits the head when woken; the body stays open
}

Status Call::WriteNow(std::string_view message) {
  if (ended_) {
    return Status(StatusCode::kCancelled, "call ended");
  }
  EnsureHead();
  if (options_.dialect == Dialect::kGrpcWebText) {
    std::string frame;
    frame.reserve(kFrameHeaderBytes + message.size());
    AppendFrame(frame, message);
    AppendOut(frame);
  } else {
    char* frame = PutFrameHeader(message.size());
    if (!message.empty()) {
      std::memcpy(frame, message.data(), message.size());
    }
  }
  if (streaming()) {
    queued_ends_.push_back(appended_bytes_);
  }
  wake_();
  return Status::Ok();
}

asio::awaitable<Status> Call::Write(std::string_view message) {
  auto self = shared_from_this();
  if (Status queued = WriteNow(message); !queued.ok()) {
    co_return queued;
  }
  if (streaming()) {
    while (pending_body() > kOutboundHighWater && !ended_) {
      room_wanted_ = true;
      co_await WaitHandler();
    }
  }
  co_return ended_ ? Status(StatusCode::kCancelled, "call ended") : Status::Ok();
}

void Call::Finish(Status status) {
  if (finished_ || reset_ || cancelled_) {
    return;
  }
  finished_ = true;
  MarkEnded();
  final_status_ = std::move(status);
  EnsureHead();
  if (options_.dialect == Dialect::kGrpc) {
    trailers_.push_back({"grpc-status", std::to_string(static_cast<int>(final_status_.code()))});
    if (!final_status_.message().empty()) {
      trailers_.push_back({"grpc-message", PercentEncode(final_status_.message())});
    }
    if (!final_status_.details().empty()) {
      trailers_.push_back({"grpc-status-details-bin", Base64Unpadded(final_status_.details())});
    }
  } else {
    std::string frame;
    AppendFrame(frame, TrailerBlock(final_status_), kFlagTrailer);
    AppendOut(frame);
  }
  // The deadline timer keeps running: a response still not taken whole at the deadline is reset.
  WakeHandler();
  wake_();
}

void Call::Abort(Status status) {
  if (finished_ || reset_) {
    return;
  }
  if (!queued_ends_.empty()) {
    // Keep through the end of the message the connection is in the middle of (or the next one).
    const uint64_t keep_through = queued_ends_.front();
    uint64_t drop = appended_bytes_ - keep_through;
    // Shared pieces past the kept message go too (none is partly pulled: pulling stops inside
    // the kept message at the latest); the rest of the dropped bytes are out_'s.
    while (!shared_.empty() && shared_.back().at >= keep_through) {
      const size_t size = shared_.back().bytes.size();
      drop -= size;
      shared_pending_ -= size;
      shared_.pop_back();
    }
    out_len_ -= static_cast<size_t>(drop);
    owned_appended_ -= drop;
    appended_bytes_ = keep_through;
    queued_ends_.erase(queued_ends_.begin() + 1, queued_ends_.end());
  }
  Finish(std::move(status));
}

asio::awaitable<bool> Call::SleepFor(Clock::duration duration) {
  auto self = shared_from_this();
  const auto until = Clock::now() + duration;
  while (!ended_ && Clock::now() < until) {
    handler_timer_.expires_at(until);
    boost::system::error_code ec;
    co_await handler_timer_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  }
  handler_wake_pending_ = false;
  co_return !ended_;
}

asio::awaitable<bool> Call::WaitForNotify() {
  auto self = shared_from_this();
  while (!notified_ && !ended_) {
    co_await WaitHandler();
  }
  notified_ = false;
  co_return !ended_;
}

void Call::Notify() {
  notified_ = true;
  WakeHandler();
}

void Call::SetDeadline(Clock::duration timeout) {
  deadline_timer_ = std::make_unique<asio::steady_timer>(executor_);
  deadline_timer_->expires_after(timeout);
  std::weak_ptr<Call> weak = weak_from_this();
  deadline_timer_->async_wait([weak](boost::system::error_code ec) {
    if (ec) {
      return;
    }
    if (auto call = weak.lock()) {
      call->OnDeadline();
    }
  });
}

// implements: issue 28 (2) — grpc-timeout ends a response stuck in flow control, not just a
// handler still running.
void Call::OnDeadline() {
  if (completed_) {
    return;
  }
  if (pending_body() > 0) {
    // The reader has not taken what was queued by its deadline: it will not get the rest.
    Cancel(StatusCode::kDeadlineExceeded);
    return;
  }
  Finish(Status(StatusCode::kDeadlineExceeded, "deadline exceeded"));
}

void Call::MarkEnded() {
  ended_ = true;
  if (ended_flag_) {
    ended_flag_->store(true, std::memory_order_release);
  }
}

CancelFlag Call::ended_flag() {
  if (!ended_flag_) {
    ended_flag_ = std::make_shared<std::atomic<bool>>(ended_);
  }
  return ended_flag_;
}

void Call::Cancel(StatusCode outcome) {
  if (completed_ || cancelled_) {
    return;
  }
  cancelled_ = true;
  cancel_outcome_ = outcome;
  MarkEnded();
  WakeHandler();
  wake_();  // the connection sees cancelled() and resets the stream
}

bool Call::StalledSinceLastCheck() {
  if (completed_ || !finished_) {
    return false;
  }
  // Nothing taken: the body, or the trailers behind it, wait for flow-control window.
  const bool stalled = response_bytes_ == stall_mark_;
  stall_mark_ = response_bytes_;
  return stalled;
}

asio::awaitable<Status> Call::ReserveResponse(uint64_t bytes) {
  auto self = shared_from_this();
  ResponseBudget* budget = options_.budget;
  if (budget == nullptr || bytes == 0) {
    co_return Status::Ok();
  }
  if (ended_) {
    co_return Status(StatusCode::kCancelled, "call ended");
  }
  granted_ = false;
  if (budget->TryTake(options_.connection, bytes, weak_from_this())) {
    reserved_ += bytes;
    co_return Status::Ok();
  }
  const auto until = Clock::now() + budget->limits().max_wait;
  while (!granted_) {
    if (ended_ || Clock::now() >= until) {
      // Granted meanwhile (Withdraw fails): the bytes are in reserved_ and go back on completion.
      budget->Withdraw(this);
      if (granted_) {
        break;
      }
      co_return ended_ ? Status(StatusCode::kCancelled, "call ended")
                       : Status(StatusCode::kResourceExhausted,
                                "the server's response memory is in use; retry later");
    }
    co_await WaitEvent(until);
  }
  co_return ended_ ? Status(StatusCode::kCancelled, "call ended") : Status::Ok();
}

void Call::OnGranted(uint64_t bytes) {
  reserved_ += bytes;
  granted_ = true;
  if (completed_) {
    GiveBackReservation();
    return;
  }
  WakeHandler();
}

void Call::TrimReservation(uint64_t bytes) {
  if (options_.budget != nullptr && reserved_ > bytes) {
    options_.budget->Give(options_.connection, reserved_ - bytes);
    reserved_ = bytes;
  }
}

void Call::GiveBackReservation() {
  if (options_.budget != nullptr && reserved_ + request_charged_ > 0) {
    options_.budget->Give(options_.connection, reserved_ + request_charged_);
    reserved_ = 0;
    request_charged_ = 0;
  }
}

uint64_t Call::HeldRequestBytes() const {
  return streaming() ? decoder_.buffered() + queued_message_bytes_ : request_bytes_;
}

bool Call::ChargeRequestMemory() {
  ResponseBudget* budget = options_.budget;
  if (budget == nullptr || completed_) {
    return true;
  }
  // implements: issue 28 — request bodies count against the response memory bounds: 100 streams
  // of 26 MB uploads, or large requests queued for the CPU pool, held gigabytes per connection.
  // A small request is not charged (at most max_http2_streams x this per connection).
  const uint64_t held = HeldRequestBytes();
  const uint64_t target = held > kUnchargedRequestBytes ? held : 0;
  if (target < request_charged_) {
    budget->Give(options_.connection, request_charged_ - target);
    request_charged_ = target;
    return true;
  }
  if (target == request_charged_) {
    return true;
  }
  if (!budget->TryTakeNow(options_.connection, target - request_charged_,
                          reserved_ + request_charged_)) {
    Finish(Status(StatusCode::kResourceExhausted,
                  "the server's request memory is in use; retry later"));
    // What was received is dropped now; the charge goes back when the call completes.
    decoder_ = FrameDecoder(options_.max_request_bytes);
    messages_.clear();
    next_message_ = 0;
    queued_message_bytes_ = 0;
    return false;
  }
  request_charged_ = target;
  return true;
}

void Call::OnRequestBody(std::string_view bytes) {
  request_bytes_ += bytes.size();
  if (ended_) {
    return;  // the response is decided; the rest of the upload is discarded
  }
  const size_t before = messages_.size();
  Status status;
  if (options_.dialect == Dialect::kGrpcWebText) {
    std::string decoded;
    status = text_decoder_.Feed(bytes, decoded);
    if (status.ok()) {
      status = decoder_.Feed(decoded, messages_);
    }
  } else {
    status = decoder_.Feed(bytes, messages_);
  }
  if (!status.ok()) {
    Finish(std::move(status));
    return;
  }
  for (size_t i = before; i < messages_.size(); ++i) {
    queued_message_bytes_ += messages_[i].size();
  }
  if (!ChargeRequestMemory()) {
    return;
  }
  if (messages_.size() != before) {
    WakeHandler();
  }
}

void Call::OnRequestEnd() {
  if (!ended_ && (decoder_.mid_frame() || !text_decoder_.aligned())) {
    Finish(InvalidArgument("request is malformed"));  // DECISIONS.md: undecodable body
    return;
  }
  request_ended_ = true;
  WakeHandler();
}

void Call::OnReset() {
  if (completed_) {
    return;
  }
  reset_ = true;  // also after Finish: the client got neither trailers nor the rest of the body
  if (!finished_) {
    MarkEnded();
    WakeHandler();
  }
  // implements: issue 28 (6) — a response that did not end never counts as delivered: the client
  // got neither the whole body nor the trailers, whatever the handler had decided.
  Complete(cancelled_ ? cancel_outcome_ : StatusCode::kCancelled);
}

void Call::OnResponseComplete() {
  if (completed_) {
    return;
  }
  Complete(final_status_.code());
}

void Call::Complete(StatusCode outcome) {
  completed_ = true;
  outcome_ = outcome;
  if (deadline_timer_) {
    deadline_timer_->cancel();
  }
  GiveBackReservation();
  if (options_.observer != nullptr) {
    options_.observer->OnCallDone(*this);
  }
}

size_t Call::PullBody(char* dst, size_t max) {
  size_t n = 0;
  while (n < max) {
    if (!shared_.empty() && shared_.front().after_owned == owned_pulled_) {
      const std::string_view piece = shared_.front().bytes;
      const size_t k = std::min(max - n, piece.size() - shared_front_pulled_);
      std::memcpy(dst + n, piece.data() + shared_front_pulled_, k);
      n += k;
      shared_front_pulled_ += k;
      shared_pending_ -= k;
      if (shared_front_pulled_ == piece.size()) {
        ReleaseInBackground(std::move(shared_.front().keep), piece.size());
        shared_.pop_front();
        shared_front_pulled_ = 0;
      }
      continue;
    }
    size_t owned = out_len_ - out_pos_;
    if (!shared_.empty()) {
      owned = std::min<uint64_t>(owned, shared_.front().after_owned - owned_pulled_);
    }
    const size_t k = std::min(max - n, owned);
    if (k == 0) {
      break;
    }
    std::memcpy(dst + n, out_.data() + out_pos_, k);
    n += k;
    out_pos_ += k;
    owned_pulled_ += k;
  }
  response_bytes_ += n;
  while (!queued_ends_.empty() && queued_ends_.front() <= response_bytes_) {
    queued_ends_.pop_front();
  }
  if (out_pos_ == out_len_) {
    out_len_ = 0;
    out_pos_ = 0;
  }
  if (n > 0 && room_wanted_ && !ended_) {
    room_wanted_ = false;
    WakeHandler();  // a writer waits for room
  }
  return n;
}

}  // namespace xb::rpc
