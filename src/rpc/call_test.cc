#include "rpc/call.h"

#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>

#include "base/encoding.h"
#include "rpc/frame.h"
#include "rpc/grpc_web.h"
#include "rpc/response_budget.h"
#include "rpc/unary.h"

namespace xb::rpc {
namespace {

namespace asio = boost::asio;

struct Recorder : CallObserver {
  int done = 0;
  void OnCallDone(Call&) override { ++done; }
};

struct Fixture {
  asio::io_context io;
  Recorder observer;
  int wakes = 0;

  std::shared_ptr<Call> Make(Dialect dialect, CallKind kind = CallKind::kUnary,
                             uint64_t max_request = 1024) {
    return std::make_shared<Call>(
        CallOptions{.route = &telemetry::LookupRoute("/grpc.health.v1.Health/Check"),
                    .dialect = dialect,
                    .kind = kind,
                    .request_id = "00000000-0000-4000-8000-000000000000",
                    .max_request_bytes = max_request,
                    .observer = &observer},
        io.get_executor(), [this] { ++wakes; });
  }

  static std::string Drain(Call& call) {
    std::string out(call.pending_body(), '\0');
    call.PullBody(out.data(), out.size());
    return out;
  }
};

// An echo handler: reads one request message and answers it.
HandlerFn Echo() {
  return [](std::shared_ptr<Call> call) -> asio::awaitable<void> {
    auto request = co_await ReadUnaryRequest(*call);
    if (!request.ok()) {
      call->Finish(request.status());
      co_return;
    }
    if ((co_await call->Write(*request)).ok()) {
      call->Finish(Status::Ok());
    }
  };
}

TEST(Call, NativeGrpcPutsStatusInTrailers) {
  Fixture f;
  auto call = f.Make(Dialect::kGrpc);
  std::string body;
  AppendFrame(body, "ping");
  call->OnRequestBody(body);
  call->OnRequestEnd();
  asio::co_spawn(f.io, Echo()(call), asio::detached);
  f.io.run();
  ASSERT_NE(call->head(), nullptr);
  EXPECT_EQ(call->head()->status, 200);
  EXPECT_TRUE(call->body_complete());
  std::string expected;
  AppendFrame(expected, "ping");
  EXPECT_EQ(Fixture::Drain(*call), expected);
  ASSERT_EQ(call->trailers().size(), 1u);
  EXPECT_EQ(call->trailers()[0].name, "grpc-status");
  EXPECT_EQ(call->trailers()[0].value, "0");
  call->OnResponseComplete();
  EXPECT_EQ(f.observer.done, 1);
  EXPECT_EQ(call->outcome(), StatusCode::kOk);
}

// verifies: docs/v3-api.md G4 — the head goes out before any message, the body stays open, and
// a later status ends the response with trailers.
TEST(Call, SendHeadersHandsTheHeadOverBeforeAnyMessage) {
  for (const Dialect dialect : {Dialect::kGrpc, Dialect::kGrpcWeb}) {
    Fixture f;
    auto call = f.Make(dialect, CallKind::kServerStream);
    ASSERT_EQ(call->head(), nullptr);
    call->SendHeaders();
    ASSERT_NE(call->head(), nullptr);
    EXPECT_EQ(call->head()->status, 200);
    EXPECT_EQ(f.wakes, 1);
    EXPECT_EQ(call->pending_body(), 0u);
    EXPECT_FALSE(call->body_complete());
    call->SendHeaders();  // idempotent
    EXPECT_EQ(f.wakes, 1);
    EXPECT_EQ(call->head()->headers.size(), dialect == Dialect::kGrpc ? 2u : 4u);
    call->Finish(Status::Ok());
    EXPECT_TRUE(call->body_complete());
    if (dialect == Dialect::kGrpc) {
      ASSERT_EQ(call->trailers().size(), 1u);
      EXPECT_EQ(call->trailers()[0].value, "0");
    } else {
      std::string trailer;
      AppendFrame(trailer, "grpc-status: 0\r\n", kFlagTrailer);
      EXPECT_EQ(Fixture::Drain(*call), trailer);
    }
  }
}

TEST(Call, SendHeadersAfterTheEndDoesNothing) {
  Fixture f;
  auto call = f.Make(Dialect::kGrpc, CallKind::kServerStream);
  call->OnReset();
  const int wakes = f.wakes;
  call->SendHeaders();
  EXPECT_EQ(call->head(), nullptr);
  EXPECT_EQ(f.wakes, wakes);
}

TEST(Call, GrpcWebTextDecodesAndEncodesBase64WithTrailerFrame) {
  Fixture f;
  auto call = f.Make(Dialect::kGrpcWebText);
  std::string frame;
  AppendFrame(frame, "hello");
  const std::string text = Base64(frame);
  call->OnRequestBody(text.substr(0, 3));  // split inside a base64 group
  call->OnRequestBody(text.substr(3));
  call->OnRequestEnd();
  asio::co_spawn(f.io, Echo()(call), asio::detached);
  f.io.run();
  std::string expected_message;
  AppendFrame(expected_message, "hello");
  std::string expected_trailer;
  AppendFrame(expected_trailer, "grpc-status: 0\r\n", kFlagTrailer);
  EXPECT_EQ(Fixture::Drain(*call), Base64(expected_message) + Base64(expected_trailer));
  EXPECT_TRUE(call->trailers().empty());
}

TEST(Call, OversizedRequestFinishesOutOfRangeBeforeTheHandler) {
  Fixture f;
  auto call = f.Make(Dialect::kGrpcWeb, CallKind::kUnary, /*max_request=*/4);
  std::string body;
  AppendFrame(body, "too long");
  call->OnRequestBody(body);
  EXPECT_TRUE(call->finished());
  EXPECT_EQ(call->final_status().code(), StatusCode::kOutOfRange);
  const std::string out = Fixture::Drain(*call);
  EXPECT_NE(out.find("grpc-status: 11"), std::string::npos);
}

std::shared_ptr<Call> MakeBudgeted(Fixture& f, ResponseBudget& budget, const void* connection,
                                   CallKind kind = CallKind::kUnary) {
  return std::make_shared<Call>(
      CallOptions{.route = &telemetry::LookupRoute("/grpc.health.v1.Health/Check"),
                  .dialect = Dialect::kGrpc,
                  .kind = kind,
                  .request_id = "00000000-0000-4000-8000-000000000000",
                  .max_request_bytes = 8 << 20,
                  .observer = &f.observer,
                  .connection = connection,
                  .budget = &budget},
      f.io.get_executor(), [&f] { ++f.wakes; });
}

// Issue 28: request bodies over 64 KiB count against the response memory bounds while their call
// lives; one beside others that does not fit ends RESOURCE_EXHAUSTED, a call alone always fits,
// and a completed call gives its bytes back.
TEST(CallRequestMemory, LargeBodiesAreChargedUntilTheCallCompletes) {
  Fixture f;
  ResponseBudget budget({.worker_bytes = 1 << 20, .connection_bytes = 1 << 20});
  const int connection = 0;
  std::string frame;
  AppendFrame(frame, std::string(600 << 10, 'x'));  // 600 KiB
  auto first = MakeBudgeted(f, budget, &connection);
  first->OnRequestBody(frame.substr(0, 32 << 10));
  EXPECT_EQ(budget.held(), 0u);  // small so far: not charged
  first->OnRequestBody(frame.substr(32 << 10));
  EXPECT_FALSE(first->finished());
  EXPECT_EQ(budget.held(), frame.size());
  auto second = MakeBudgeted(f, budget, &connection);
  second->OnRequestBody(frame);  // 600 KiB more does not fit the 1 MiB beside the first
  EXPECT_TRUE(second->finished());
  EXPECT_EQ(second->final_status().code(), StatusCode::kResourceExhausted);
  second->OnResponseComplete();
  EXPECT_EQ(budget.held(), frame.size());  // the refused call's charge is back
  first->Finish(Status::Ok());
  first->OnResponseComplete();
  EXPECT_EQ(budget.held(), 0u);
  std::string big;
  AppendFrame(big, std::string(3 << 20, 'y'));  // alone, larger than both bounds
  auto alone = MakeBudgeted(f, budget, &connection);
  alone->OnRequestBody(big);
  EXPECT_FALSE(alone->finished());
  EXPECT_EQ(budget.held(), big.size());
}

// A streaming call holds only what its handler has not taken.
TEST(CallRequestMemory, AStreamingCallGivesBackWhatItsHandlerTakes) {
  Fixture f;
  ResponseBudget budget({.worker_bytes = 1 << 20, .connection_bytes = 1 << 20});
  const int connection = 0;
  auto call = MakeBudgeted(f, budget, &connection, CallKind::kBidiStream);
  std::string frame;
  AppendFrame(frame, std::string(100 << 10, 'z'));
  call->OnRequestBody(frame);
  EXPECT_EQ(budget.held(), 100u << 10);
  ASSERT_TRUE(call->HasMessage());
  EXPECT_EQ(call->TakeMessage().size(), 100u << 10);
  EXPECT_EQ(budget.held(), 0u);
}

TEST(Call, ResetBeforeFinishCountsCancelledAndStopsTheHandler) {
  Fixture f;
  auto call = f.Make(Dialect::kGrpc, CallKind::kServerStream);
  bool handler_saw_error = false;
  asio::co_spawn(
      f.io,
      [call, &handler_saw_error]() -> asio::awaitable<void> {
        auto r = co_await call->Read();  // nothing arrives: waits until the reset
        handler_saw_error = !r.ok();
      },
      asio::detached);
  f.io.poll();
  call->OnReset();
  f.io.run();
  EXPECT_TRUE(handler_saw_error);
  EXPECT_EQ(f.observer.done, 1);
  EXPECT_EQ(call->outcome(), StatusCode::kCancelled);
  call->Finish(Status::Ok());  // too late: ignored
  EXPECT_FALSE(call->finished());
}

TEST(Call, TruncatedRequestIsMalformed) {
  Fixture f;
  auto call = f.Make(Dialect::kGrpc);
  std::string body;
  AppendFrame(body, "abc");
  body.pop_back();
  call->OnRequestBody(body);
  call->OnRequestEnd();
  EXPECT_EQ(call->final_status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(call->final_status().message(), "request is malformed");
}

TEST(Call, FinishKeepsOnlyTheFirstStatusAndPercentEncodesTheMessage) {
  Fixture f;
  auto call = f.Make(Dialect::kGrpc);
  call->Finish(Status(StatusCode::kUnavailable, "100% down\n"));
  call->Finish(Status::Ok());
  ASSERT_EQ(call->trailers().size(), 2u);
  EXPECT_EQ(call->trailers()[0].value, "14");
  EXPECT_EQ(call->trailers()[1].value, "100%25 down%0A");
}

TEST(Call, DeadlineFinishesDeadlineExceeded) {
  Fixture f;
  auto call = f.Make(Dialect::kGrpc, CallKind::kUnary);
  call->SetDeadline(std::chrono::milliseconds(1));
  bool slept_fully = true;
  asio::co_spawn(
      f.io,
      [call, &slept_fully]() -> asio::awaitable<void> {
        slept_fully = co_await call->SleepFor(std::chrono::seconds(30));
      },
      asio::detached);
  f.io.run();
  EXPECT_FALSE(slept_fully);
  EXPECT_EQ(call->final_status().code(), StatusCode::kDeadlineExceeded);
}

// A streaming handler waiting in WaitEvent is woken by the connection taking response bytes only
// when it asked for room (WakeOnRoom), once per ask: a stream pushing live rows does not resume
// for every frame the connection pulls.
TEST(Call, PulledResponseBytesWakeOnlyAHandlerThatAskedForRoom) {
  Fixture f;
  auto call = f.Make(Dialect::kGrpc, CallKind::kServerStream);
  int wakes = 0;
  const auto far = Call::Clock::now() + std::chrono::hours(1);
  asio::co_spawn(
      f.io,
      [call, far, &wakes]() -> asio::awaitable<void> {
        while (!call->ended()) {
          co_await call->WaitEvent(far);
          ++wakes;
        }
      },
      asio::detached);
  f.io.poll();
  ASSERT_TRUE(call->WriteNow("one").ok());
  char out[64];
  EXPECT_GT(call->PullBody(out, sizeof(out)), 0u);
  f.io.poll();
  EXPECT_EQ(wakes, 0);

  call->WakeOnRoom();
  ASSERT_TRUE(call->WriteNow("two").ok());
  EXPECT_GT(call->PullBody(out, sizeof(out)), 0u);
  f.io.poll();
  EXPECT_EQ(wakes, 1);

  ASSERT_TRUE(call->WriteNow("three").ok());  // the ask was used up
  EXPECT_GT(call->PullBody(out, sizeof(out)), 0u);
  f.io.poll();
  EXPECT_EQ(wakes, 1);

  call->Finish(Status::Ok());
  f.io.poll();
  EXPECT_EQ(wakes, 2);  // the end always wakes it
}

// A gathered message with shared pieces comes out byte for byte where it was queued, between
// copied messages, however the connection slices its pulls; a piece's owner is released once the
// piece has been pulled.
TEST(Call, SharedPiecesGoOutInPlaceAndAreReleasedOncePulled) {
  Fixture f;
  auto call = f.Make(Dialect::kGrpc, CallKind::kServerStream);
  auto row = std::make_shared<std::string>("SHARED-ENVELOPE-BYTES");
  auto other = std::make_shared<std::string>("YZ");
  ASSERT_TRUE(call->can_share());

  ASSERT_TRUE(call->WriteNow("ab").ok());
  ASSERT_TRUE(call->BeginMessage(2 + row->size()).ok());
  call->AppendCopy("<");
  call->AppendShared(*row, row);
  call->AppendCopy(">");
  call->EndMessage();
  ASSERT_TRUE(call->WriteNow("cd").ok());
  ASSERT_TRUE(call->BeginMessage(1 + other->size()).ok());
  call->AppendShared(std::string_view(*row).substr(0, 1), row);
  call->AppendShared(*other, other);
  call->EndMessage();

  std::string expected;
  AppendFrame(expected, "ab");
  AppendFrame(expected, "<" + *row + ">");
  AppendFrame(expected, "cd");
  AppendFrame(expected, "S" + *other);
  EXPECT_EQ(call->queued_messages(), 4u);
  EXPECT_EQ(call->pending_body(), expected.size());
  EXPECT_EQ(row.use_count(), 3);
  EXPECT_EQ(other.use_count(), 2);

  std::string got;
  char slice[3];
  while (call->pending_body() > 0) {
    const size_t n = call->PullBody(slice, sizeof(slice));
    ASSERT_GT(n, 0u);
    got.append(slice, n);
  }
  EXPECT_EQ(got, expected);
  EXPECT_EQ(call->queued_messages(), 0u);
  EXPECT_EQ(row.use_count(), 1);
  EXPECT_EQ(other.use_count(), 1);
}

// verifies: OPS-007 (Abort drops queued messages, shared pieces included, and keeps the one the
// connection is in the middle of whole)
TEST(Call, AbortDropsQueuedSharedPiecesAndKeepsTheMessageBeingSent) {
  Fixture f;
  auto call = f.Make(Dialect::kGrpc, CallKind::kServerStream);
  auto first = std::make_shared<std::string>(300, 'a');
  auto second = std::make_shared<std::string>(300, 'b');
  ASSERT_TRUE(call->BeginMessage(1 + first->size()).ok());
  call->AppendCopy("[");
  call->AppendShared(*first, first);
  call->EndMessage();
  char head[10];
  ASSERT_EQ(call->PullBody(head, sizeof(head)), sizeof(head));  // mid-way through the first

  ASSERT_TRUE(call->BeginMessage(second->size() + 1).ok());
  call->AppendShared(*second, second);
  call->AppendCopy("]");
  call->EndMessage();
  ASSERT_TRUE(call->WriteNow("tail").ok());
  EXPECT_EQ(second.use_count(), 2);

  call->Abort(Status(StatusCode::kUnavailable, "shutting down"));
  std::string expected;
  AppendFrame(expected, "[" + *first);
  EXPECT_EQ(call->pending_body(), expected.size() - sizeof(head));
  EXPECT_EQ(second.use_count(), 1);
  EXPECT_EQ(std::string(head, sizeof(head)) + Fixture::Drain(*call), expected);
  EXPECT_EQ(first.use_count(), 1);
  EXPECT_TRUE(call->body_complete());
}

}  // namespace
}  // namespace xb::rpc

namespace xb::rpc {
namespace {

// Regression (issue 28, defect 6): 20 responses stalled by a zero window were logged OK.
TEST(CallOutcome, AResponseResetBeforeItEndedIsCancelledWhateverTheHandlerDecided) {
  Fixture f;
  auto call = f.Make(Dialect::kGrpc);
  ASSERT_TRUE(call->WriteNow("response").ok());
  call->Finish(Status::Ok());
  call->OnReset();  // the body and the trailers never left
  EXPECT_EQ(f.observer.done, 1);
  EXPECT_EQ(call->outcome(), StatusCode::kCancelled);
}

TEST(CallOutcome, ACancelledResponseCompletesWithItsOutcomeOnceTheConnectionResetsIt) {
  Fixture f;
  auto call = f.Make(Dialect::kGrpc);
  ASSERT_TRUE(call->WriteNow("response").ok());
  call->Finish(Status::Ok());
  const int wakes = f.wakes;
  call->Cancel(StatusCode::kDeadlineExceeded);
  EXPECT_TRUE(call->cancelled());
  EXPECT_GT(f.wakes, wakes);  // the connection is told, and resets the stream
  EXPECT_EQ(f.observer.done, 0);
  call->OnReset();
  EXPECT_EQ(call->outcome(), StatusCode::kDeadlineExceeded);
}

TEST(CallOutcome, ADeliveredResponseKeepsItsStatus) {
  Fixture f;
  auto call = f.Make(Dialect::kGrpc);
  call->Finish(InvalidArgument("bad"));
  call->OnResponseComplete();
  EXPECT_EQ(call->outcome(), StatusCode::kInvalidArgument);
}

TEST(CallStall, AFinishedCallIsStalledOnlyWhileTheConnectionTakesNothing) {
  Fixture f;
  auto call = f.Make(Dialect::kGrpc);
  ASSERT_TRUE(call->WriteNow(std::string(100, 'x')).ok());
  EXPECT_FALSE(call->StalledSinceLastCheck());  // still running: never stalled
  call->Finish(Status::Ok());
  EXPECT_TRUE(call->StalledSinceLastCheck());  // nothing taken yet
  char some[10];
  call->PullBody(some, sizeof(some));
  EXPECT_FALSE(call->StalledSinceLastCheck());  // it took bytes since
  EXPECT_TRUE(call->StalledSinceLastCheck());
  call->OnResponseComplete();
  EXPECT_FALSE(call->StalledSinceLastCheck());  // done
}

TEST(CallEndedFlag, IsSetWhenTheCallEnds) {
  Fixture f;
  auto call = f.Make(Dialect::kGrpc);
  CancelFlag flag = call->ended_flag();
  EXPECT_FALSE(flag->load());
  call->OnReset();
  EXPECT_TRUE(flag->load());
  EXPECT_TRUE(call->ended_flag()->load());  // and a flag taken afterwards starts set
}

}  // namespace
}  // namespace xb::rpc
