// Adapts a typed unary function to a HandlerFn: reads exactly one request message, decodes it
// (undecodable -> INVALID_ARGUMENT "request is malformed", DECISIONS.md), runs the function,
// checks the encoded response against the response budget (OUT_OF_RANGE, API.md 1.4) and
// writes it with OK.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "rpc/call.h"
#include "rpc/router.h"

namespace xb::rpc {

// Reads the single message of a unary request. Suspends.
boost::asio::awaitable<Result<std::string>> ReadUnaryRequest(Call& call);

// A check of a request's bytes before they are parsed, so that a request whose parse would cost
// far more than its size (millions of empty sub-messages) is refused first (issue 28). Empty: none.
using RequestCheck = std::function<Status(std::string_view request)>;

// Parses a unary request after `check`: its status, or INVALID_ARGUMENT "request is malformed".
template <typename Req>
Status ParseUnaryRequest(const std::string& bytes, const RequestCheck& check, Req& request) {
  if (check) {
    XB_RETURN_IF_ERROR(check(bytes));
  }
  if (!request.ParseFromString(bytes)) {
    return InvalidArgument("request is malformed");  // DECISIONS.md
  }
  return Status::Ok();
}

// Writes a handler's result and finishes the call (OUT_OF_RANGE over `max_response_bytes`; 0 =
// unbounded). Nothing once the call has ended. Suspends.
template <typename Resp>
boost::asio::awaitable<void> WriteUnaryResponse(Call& call, Result<Resp> response,
                                                uint64_t max_response_bytes) {
  if (call.ended()) {
    co_return;
  }
  if (!response.ok()) {
    call.Finish(response.status());
    co_return;
  }
  std::string out;
  response->SerializeToString(&out);
  if (max_response_bytes != 0 && out.size() > max_response_bytes) {
    call.Finish(OutOfRange("response is larger than the response budget"));
    co_return;
  }
  Status written = co_await call.Write(out);
  if (written.ok()) {
    call.Finish(Status::Ok());
  }
}

// Fn: (const Req&, Call&) -> boost::asio::awaitable<Result<Resp>>.
// `max_response_bytes` = 0 means unbounded (GetConfiguration is bounded by CONF-009 instead).
template <typename Req, typename Resp, typename Fn>
HandlerFn Unary(Fn fn, uint64_t max_response_bytes, RequestCheck check = {}) {
  return [fn = std::move(fn), max_response_bytes,
          check = std::move(check)](std::shared_ptr<Call> call) -> boost::asio::awaitable<void> {
    auto bytes = co_await ReadUnaryRequest(*call);
    if (!bytes.ok()) {
      call->Finish(bytes.status());
      co_return;
    }
    Req request;
    if (Status parsed = ParseUnaryRequest(*bytes, check, request); !parsed.ok()) {
      call->Finish(std::move(parsed));
      co_return;
    }
    Result<Resp> response = co_await fn(request, *call);
    co_await WriteUnaryResponse(*call, std::move(response), max_response_bytes);
  };
}

// Like Unary, for a handler that reads the request bytes itself (Publish reads its envelopes one at
// a time and stops at the first that fails).
// Fn: (std::string request, Call&) -> boost::asio::awaitable<Result<Resp>>.
template <typename Resp, typename Fn>
HandlerFn UnaryBytes(Fn fn, uint64_t max_response_bytes) {
  return [fn = std::move(fn),
          max_response_bytes](std::shared_ptr<Call> call) -> boost::asio::awaitable<void> {
    auto bytes = co_await ReadUnaryRequest(*call);
    if (!bytes.ok()) {
      call->Finish(bytes.status());
      co_return;
    }
    Result<Resp> response = co_await fn(std::move(*bytes), *call);
    co_await WriteUnaryResponse(*call, std::move(response), max_response_bytes);
  };
}

// Like Unary, for a handler that queues its response message itself (Call::WriteNowInPlace), so a
// large response is encoded once, straight into the call's buffer, with no message objects.
// Fn: (const Req&, Call&) -> boost::asio::awaitable<Status>; OK means the handler queued exactly
// one response message, and the call finishes OK.
template <typename Req, typename Fn>
HandlerFn UnaryWritten(Fn fn, RequestCheck check = {}) {
  return [fn = std::move(fn),
          check = std::move(check)](std::shared_ptr<Call> call) -> boost::asio::awaitable<void> {
    auto bytes = co_await ReadUnaryRequest(*call);
    if (!bytes.ok()) {
      call->Finish(bytes.status());
      co_return;
    }
    Req request;
    if (Status parsed = ParseUnaryRequest(*bytes, check, request); !parsed.ok()) {
      call->Finish(std::move(parsed));
      co_return;
    }
    Status written = co_await fn(request, *call);
    if (!call->ended()) {
      call->Finish(std::move(written));
    }
  };
}

}  // namespace xb::rpc
