#include "rpc/unary.h"

namespace xb::rpc {

boost::asio::awaitable<Result<std::string>> ReadUnaryRequest(Call& call) {
  auto first = co_await call.Read();
  if (!first.ok()) {
    co_return first.status();
  }
  if (!first->has_value()) {
    co_return InvalidArgument("request is malformed");  // no message at all
  }
  auto rest = co_await call.Read();
  if (!rest.ok()) {
    co_return rest.status();
  }
  if (rest->has_value()) {
    co_return InvalidArgument("request is malformed");  // a unary call carries one message
  }
  co_return std::move(**first);
}

}  // namespace xb::rpc
