// rpc::Call: one gRPC request as a handler sees it, whatever the wire dialect (native gRPC on
// HTTP/2, gRPC-Web binary or text on HTTP/1.1 or HTTP/2). Handlers read request messages, write
// response messages and finish with a Status; they never see HTTP (ARCHITECTURE.md section 3).
//
// A Call is also the net::Exchange its connection feeds and drains. Everything happens on the
// connection's executor: the handler coroutine is spawned there, and every method below must be
// called there. Methods marked "Suspends" are coroutines.
#pragma once

#include <atomic>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/intrusive/list_hook.hpp>
#include <chrono>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/byte_buffer.h"
#include "base/cancel_flag.h"
#include "base/status.h"
#include "net/exchange.h"
#include "rpc/frame.h"
#include "rpc/grpc_web.h"
#include "rpc/response_budget.h"
#include "telemetry/route.h"
#include "telemetry/span.h"

namespace xb::rpc {

enum class Dialect { kGrpc, kGrpcWeb, kGrpcWebText };
enum class CallKind { kUnary, kServerStream, kBidiStream };

class Call;

// Who a call's credential names (AUTH-028; issue 32 quotas): the admitting API key's configured
// name, or the verified JWT's `sub`. Both empty with auth off, on a public path, or for a JWT
// without `sub`. Never logged (OPS-014).
struct Principal {
  std::string_view api_key_name;  // owned by the Authenticator, which outlives every call
  std::string jwt_subject;
};

// Told once when a call's response completed or was reset (for metrics, logs, drain tracking).
class CallObserver {
 public:
  virtual ~CallObserver() = default;
  virtual void OnCallDone(Call& call) = 0;
};

struct CallOptions {
  const telemetry::Route* route = nullptr;
  // The path of the handler the router matched (Handler::path, owned by the Router, which
  // outlives every call); empty when no handler serves the request's path.
  std::string_view served_path = {};
  Dialect dialect = Dialect::kGrpc;
  CallKind kind = CallKind::kUnary;
  std::string request_id;
  uint64_t max_request_bytes = 0;  // per request message (wire length)
  CallObserver* observer = nullptr;
  const void* connection = nullptr;  // net::RequestHead::connection
  net::PeerAddress peer = {};        // net::RequestHead::peer
  // The worker's response memory (ReserveResponse, and request bodies over 64 KiB); nullptr:
  // unbounded.
  ResponseBudget* budget = nullptr;
};

// The dispatcher keeps its live calls on an intrusive list (no allocation per call); a call
// leaves it on completion or destruction.
using LiveCallHook =
    boost::intrusive::list_base_hook<boost::intrusive::link_mode<boost::intrusive::auto_unlink>>;

class Call final : public net::Exchange,
                   public std::enable_shared_from_this<Call>,
                   public LiveCallHook,
                   public ResponseBudget::Waiter {
  // First in the object: what delivering one response message touches (the handler queues it,
  // the connection pulls it), in as few cache lines as possible. A topic with 1,000 subscribers
  // touches 1,000 calls per envelope, and between envelopes they leave the cache.
  bool ended_ = false;  // finished or reset: the handler should stop
  bool finished_ = false;
  bool reset_ = false;
  bool head_ready_ = false;
  bool room_wanted_ = false;
  size_t out_len_ = 0;
  size_t out_pos_ = 0;
  size_t shared_front_pulled_ = 0;  // bytes of shared_.front() already pulled
  size_t shared_pending_ = 0;       // bytes of shared_ not pulled yet
  uint64_t response_bytes_ = 0;
  uint64_t appended_bytes_ = 0;  // bytes ever queued: appended to out_ or shared pieces
  uint64_t owned_appended_ = 0;  // bytes ever appended to out_
  uint64_t owned_pulled_ = 0;    // of those, pulled by the connection
  ByteBuffer out_;  // bytes [out_pos_, out_len_) wait for the connection; the rest is spare
  net::Waker wake_;
  std::deque<uint64_t> queued_ends_;  // per queued message: appended_bytes_ at its end
  // Shared pieces (AppendShared), in order. Each goes out once `owned_pulled_` reaches its
  // `after_owned` (the out_ bytes appended before it); `at` is its place among all appended bytes.
  struct SharedPiece {
    uint64_t after_owned = 0;
    uint64_t at = 0;
    std::string_view bytes;
    std::shared_ptr<const void> keep;
  };
  std::deque<SharedPiece> shared_;
  CallOptions options_;

 public:
  using Clock = std::chrono::steady_clock;

  Call(CallOptions options, boost::asio::any_io_executor executor, net::Waker wake);
  ~Call() override;

  // --- Handler side ---
  const telemetry::Route& route() const { return *options_.route; }
  // The matched handler's registered path (router-owned, never the request's bytes); empty for a
  // path no handler serves.
  std::string_view served_path() const { return options_.served_path; }
  const std::string& request_id() const { return options_.request_id; }
  // The connection's identity (net::RequestHead::connection); nullptr when unknown.
  const void* connection() const { return options_.connection; }
  // The client's address (net::RequestHead::peer).
  const net::PeerAddress& peer() const { return options_.peer; }
  CallKind kind() const { return options_.kind; }
  Dialect dialect() const { return options_.dialect; }
  boost::asio::any_io_executor executor() const { return executor_; }

  // The next request message; nullopt once the client half-closed. An error once the call has
  // ended (cancelled, reset, deadline, drain). Suspends.
  boost::asio::awaitable<Result<std::optional<std::string>>> Read();

  // Non-suspending reads for a handler that also waits on other events (streams): whether a
  // request message is ready, take it (precondition: HasMessage()), and whether the client
  // half-closed (after the last message was taken).
  bool HasMessage() const { return next_message_ < messages_.size(); }
  std::string TakeMessage();
  bool request_ended() const { return request_ended_; }

  // Suspends until the next wake-up (a request message, the client half-closing, room in the
  // response queue, Notify(), the call ending) or `until`, whichever is first. Spurious returns
  // are allowed: callers re-check their conditions.
  boost::asio::awaitable<void> WaitEvent(Clock::time_point until);

  // Response messages queued and not yet fully handed to the connection, and their bytes.
  size_t queued_messages() const { return queued_ends_.size(); }

  // Hands the response head (status 200 and the response headers) to the connection now, before
  // any response message: HTTP/2 sends its HEADERS frame, HTTP/1.1 (gRPC-Web) writes and flushes
  // the status line and headers. For a server stream that may have nothing to send for a while
  // and no first frame of its own (docs/v3-api.md G4: clients that wait for the headers before
  // they hand the stream to the caller). Idempotent; nothing once the call has ended. A Finish
  // afterwards ends the response with trailers (never a trailers-only response).
  void SendHeaders();

  // Queues one response message. Streaming calls suspend while the queued bytes are above the
  // high-water mark (the client is slow). An error once the call has ended. Suspends.
  boost::asio::awaitable<Status> Write(std::string_view message);

  // Queues one response message without waiting for room (for small control messages that must
  // keep their order relative to a later Finish). An error once the call has ended.
  Status WriteNow(std::string_view message);

  // Queues one response message of `size` bytes that `fill` writes in place (no intermediate
  // copy). Same contract as WriteNow.
  template <typename Fill>
  Status WriteNowInPlace(size_t size, Fill&& fill) {
    if (ended_) {
      return Status(StatusCode::kCancelled, "call ended");
    }
    if (options_.dialect == Dialect::kGrpcWebText) {
      std::string message(size, '\0');
      fill(message.data());
      return WriteNow(message);
    }
    EnsureHead();
    char* dst = ReserveFrame(size);
    fill(dst);
    wake_();
    return Status::Ok();
  }

  // Gathered writing (not in the gRPC-Web text dialect: can_share() is false there). A response
  // message of `size` bytes is BeginMessage, then pieces totalling exactly `size` bytes, then
  // EndMessage; nothing else is written in between. AppendShared queues `bytes` without copying
  // them: the connection reads them when it sends, and `keep` holds them alive until then (a live
  // row shared by many streams is copied once, into the socket buffer, instead of twice).
  bool can_share() const { return options_.dialect != Dialect::kGrpcWebText; }
  Status BeginMessage(size_t size);
  void AppendCopy(std::string_view bytes);
  void AppendShared(std::string_view bytes, std::shared_ptr<const void> keep);
  void EndMessage();

  // Ends the call with `status` (status and details to the trailers). Only the first call counts.
  void Finish(Status status);
  // Like Finish, but first drops the response messages not yet handed to the connection (the one
  // being sent is kept whole), so the status is not stuck behind them (OPS-007: a stream ends at
  // once, however much catch-up it had queued).
  void Abort(Status status);

  // Suspends until `duration` elapses (true) or the call ends (false).
  boost::asio::awaitable<bool> SleepFor(Clock::duration duration);

  // Wake the handler (WaitEvent) the next time the connection takes response bytes. Only wanted
  // by a handler waiting for room: every other pull leaves it asleep.
  void WakeOnRoom() { room_wanted_ = true; }

  // Suspends until Notify() is called or the call ends; returns false once the call has ended.
  boost::asio::awaitable<bool> WaitForNotify();
  void Notify();

  // At `timeout` from now, a call still running ends DEADLINE_EXCEEDED; a response its reader has
  // not taken whole by then is reset (grpc-timeout: the client gave up on it).
  void SetDeadline(Clock::duration timeout);

  // Response memory (ResponseBudget): reserves `bytes` for this call's response, waiting while
  // the worker's or the connection's budget is spent. OK once held; RESOURCE_EXHAUSTED when the
  // wait bound passed; CANCELLED when the call ended meanwhile. Suspends.
  boost::asio::awaitable<Status> ReserveResponse(uint64_t bytes);
  // Keeps at most `bytes` of this call's reservation (what the encoded response really holds);
  // the rest goes back to the budget. The whole reservation goes back when the call completes.
  void TrimReservation(uint64_t bytes);
  uint64_t reserved() const { return reserved_; }

  // Set once the call has ended: hand it with work for another thread so work not started by
  // then is skipped (store::DbPool::Run).
  CancelFlag ended_flag();

  // Ends a response its reader will not take whole: the connection resets the stream (HTTP/1.1:
  // closes), and the call completes with `outcome` (never OK: the client got no trailers).
  void Cancel(StatusCode outcome);
  // For the dispatcher's stalled-write sweep: true when the call has finished, its response has
  // not completed, and the connection took none of its bytes since the sweep last asked.
  bool StalledSinceLastCheck();

  bool ended() const { return ended_; }
  bool finished() const { return finished_; }
  const Status& final_status() const { return final_status_; }
  // The code recorded at completion: the finished status, or Cancelled when reset unfinished.
  StatusCode outcome() const { return outcome_; }
  // The connection reported the stream reset (or gone) before the response completed, whether or
  // not the call had finished.
  bool reset() const { return reset_; }
  uint64_t request_bytes() const { return request_bytes_; }
  uint64_t response_bytes() const { return response_bytes_; }
  Clock::time_point started_at() const { return started_at_; }
  // Set by the dispatcher when it spawned the handler of a unary call (drain accounting).
  bool admitted_unary = false;
  // Set by the dispatcher once authentication admitted the call.
  Principal principal;
  // The stalled-write sweep's record: when it first saw this call take no bytes (zero: taking).
  Clock::time_point stalled_since{};
  // The request span (route table name) and the handler span (rpc.*), started and ended by the
  // dispatcher; inert when there is no tracer or no handler span for the route.
  telemetry::Span request_span;
  telemetry::Span handler_span;
  // The parent for a handler's own spans: the handler span, else the request span.
  const telemetry::SpanContext& trace_parent() const {
    return handler_span.active() ? handler_span.context() : request_span.context();
  }

  // --- net::Exchange ---
  void OnRequestBody(std::string_view bytes) override;
  void OnRequestEnd() override;
  void OnReset() override;
  void OnResponseComplete() override;
  bool streaming() const override { return options_.kind != CallKind::kUnary; }
  const net::ResponseHead* head() const override { return head_ready_ ? &head_ : nullptr; }
  size_t PullBody(char* dst, size_t max) override;
  size_t pending_body() const override { return out_len_ - out_pos_ + shared_pending_; }
  bool body_complete() const override { return finished_; }
  const std::vector<net::Header>& trailers() const override { return trailers_; }
  bool cancelled() const override { return cancelled_; }

  // --- ResponseBudget::Waiter ---
  void OnGranted(uint64_t bytes) override;

 private:
  void EnsureHead();
  void CompactOut();
  void AppendOut(std::string_view frame);
  // Appends a frame header for a `size`-byte message and returns where its bytes go; ReserveFrame
  // also counts it as a queued message.
  char* ReserveFrame(size_t size);
  // With `with_body` false, only the header is appended (the body follows in pieces).
  char* PutFrameHeader(size_t size, bool with_body = true);
  // Extends the logical end of out_ by n bytes (uninitialized when reused) and returns them.
  char* GrowOut(size_t n);
  // Records that the bytes queued so far end a response message (streaming calls only).
  void QueueMessageEnd();
  void WakeHandler();
  boost::asio::awaitable<void> WaitHandler();
  void Complete(StatusCode outcome);
  void OnDeadline();
  void MarkEnded();
  void GiveBackReservation();
  // The request bytes this call holds: a unary call everything it received, until it ends (its
  // handler may still hold the body, e.g. queued on the CPU pool); a streaming call the frame in
  // progress and the messages not taken yet.
  uint64_t HeldRequestBytes() const;
  // Charges what HeldRequestBytes() passes kUnchargedRequestBytes by (or gives back what it no
  // longer holds); false when it does not fit, and the call has then ended RESOURCE_EXHAUSTED.
  bool ChargeRequestMemory();

  Clock::time_point started_at_;
  boost::asio::any_io_executor executor_;

  // Request side.
  FrameDecoder decoder_;
  Base64StreamDecoder text_decoder_;
  std::vector<std::string> messages_;
  size_t next_message_ = 0;
  bool request_ended_ = false;
  uint64_t request_bytes_ = 0;

  // Response side (the rest is at the top).
  net::ResponseHead head_;
  std::vector<net::Header> trailers_;
  Status final_status_;

  // Lifecycle.
  bool completed_ = false;  // observer told
  StatusCode outcome_ = StatusCode::kUnknown;
  boost::asio::steady_timer handler_timer_;
  bool handler_wake_pending_ = false;
  bool notified_ = false;
  std::unique_ptr<boost::asio::steady_timer> deadline_timer_;
  bool cancelled_ = false;  // Cancel(): the connection resets the response
  StatusCode cancel_outcome_ = StatusCode::kCancelled;
  uint64_t stall_mark_ = 0;  // response_bytes_ when the stall sweep last looked
  std::shared_ptr<std::atomic<bool>> ended_flag_;

  // Response memory held (ResponseBudget), and a reservation granted while waiting.
  uint64_t reserved_ = 0;
  bool granted_ = false;
  // Request bytes charged to the same budget (ChargeRequestMemory), and the bytes of received
  // messages the handler has not taken yet.
  uint64_t request_charged_ = 0;
  uint64_t queued_message_bytes_ = 0;
};

}  // namespace xb::rpc
