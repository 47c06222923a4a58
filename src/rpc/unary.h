// Adapts a typed unary function to a HandlerFn: reads exactly one request message, decodes it
// (undecodable -> INVALID_ARGUMENT "request is malformed", DECISIONS.md), runs the function,
// checks the encoded response against the response budget (OUT_OF_RANGE, API.md 1.4) and
// writes it with OK.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "rpc/call.h"
#include "rpc/router.h"

namespace xb::rpc {

// Reads the single message of a unary request. Suspends.
boost::asio::awaitable<Result<std::string>> ReadUnaryRequest(Call& call);

// Fn: (const Req&, Call&) -> boost::asio::awaitable<Result<Resp>>.
// `max_response_bytes` = 0 means unbounded (GetConfiguration is bounded by CONF-009 instead).
template <typename Req, typename Resp, typename Fn>
HandlerFn Unary(Fn fn, uint64_t max_response_bytes) {
  return [fn = std::move(fn),
          max_response_bytes](std::shared_ptr<Call> call) -> boost::asio::awaitable<void> {
    auto bytes = co_await ReadUnaryRequest(*call);
    if (!bytes.ok()) {
      call->Finish(bytes.status());
      co_return;
    }
    Req request;
    if (!request.ParseFromString(*bytes)) {
      call->Finish(InvalidArgument("request is malformed"));
      co_return;
    }
    Result<Resp> response = co_await fn(request, *call);
    if (call->ended()) {
      co_return;
    }
    if (!response.ok()) {
      call->Finish(response.status());
      co_return;
    }
    std::string out;
    response->SerializeToString(&out);
    if (max_response_bytes != 0 && out.size() > max_response_bytes) {
      call->Finish(OutOfRange("response is larger than the response budget"));
      co_return;
    }
    Status written = co_await call->Write(out);
    if (written.ok()) {
      call->Finish(Status::Ok());
    }
  };
}

}  // namespace xb::rpc
