#include "server/test_hooks.h"

#include <charconv>

#include "grpc/health/v1/health.pb.h"
#include "rpc/unary.h"

namespace xb::server {

void AddTestHooks(rpc::Router& router) {
  using grpc::health::v1::HealthCheckRequest;
  using grpc::health::v1::HealthCheckResponse;
  router.Add("/xb.test.v1.TestService/Sleep", rpc::CallKind::kUnary,
             rpc::Unary<HealthCheckRequest, HealthCheckResponse>(
                 [](const HealthCheckRequest& request,
                    rpc::Call& call) -> boost::asio::awaitable<Result<HealthCheckResponse>> {
                   uint64_t ms = 0;
                   const auto& s = request.service();
                   std::from_chars(s.data(), s.data() + s.size(), ms);
                   if (!co_await call.SleepFor(std::chrono::milliseconds(ms))) {
                     co_return Status(StatusCode::kCancelled, "call ended");
                   }
                   HealthCheckResponse response;
                   response.set_status(HealthCheckResponse::SERVING);
                   co_return response;
                 },
                 /*max_response_bytes=*/0));
}

}  // namespace xb::server
