#include "server/health_service.h"

#include <boost/asio/post.hpp>

#include "grpc/health/v1/health.pb.h"
#include "rpc/unary.h"

namespace xb::server {

namespace asio = boost::asio;
using grpc::health::v1::HealthCheckRequest;
using grpc::health::v1::HealthCheckResponse;
using grpc::health::v1::HealthListRequest;
using grpc::health::v1::HealthListResponse;

namespace {

HealthCheckResponse::ServingStatus StatusOf(bool serving) {
  return serving ? HealthCheckResponse::SERVING : HealthCheckResponse::NOT_SERVING;
}

std::string Encode(HealthCheckResponse::ServingStatus status) {
  HealthCheckResponse response;
  response.set_status(status);
  return response.SerializeAsString();
}

// Watch: the current status at once, then every change, until the call ends.
asio::awaitable<void> Watch(std::shared_ptr<rpc::Call> call, HealthState& health) {
  auto bytes = co_await rpc::ReadUnaryRequest(*call);
  if (!bytes.ok()) {
    call->Finish(bytes.status());
    co_return;
  }
  HealthCheckRequest request;
  if (!request.ParseFromString(*bytes)) {
    call->Finish(InvalidArgument("request is malformed"));
    co_return;
  }
  if (!health.Known(request.service())) {
    (void)call->WriteNow(Encode(HealthCheckResponse::SERVICE_UNKNOWN));
    while (co_await call->WaitForNotify()) {
    }
    co_return;
  }
  // The last status sent lives on the call's executor; changes are posted there in order, and
  // written with WriteNow so a NOT_SERVING frame precedes the UNAVAILABLE end of a drain.
  auto last_sent = std::make_shared<int>(-1);
  auto send = [call, last_sent](bool serving) {
    const int value = serving ? 1 : 0;
    if (*last_sent != value) {
      *last_sent = value;
      (void)call->WriteNow(Encode(StatusOf(serving)));
    }
  };
  std::weak_ptr<rpc::Call> weak = call;
  const uint64_t id = health.AddWatcher([weak, send](bool serving) {
    if (auto c = weak.lock()) {
      asio::post(c->executor(), [send, serving] { send(serving); });
    }
  });
  send(health.serving());
  while (co_await call->WaitForNotify()) {
  }
  health.RemoveWatcher(id);
}

}  // namespace

void AddHealthService(rpc::Router& router, HealthState& health) {
  router.Add("/grpc.health.v1.Health/Check", rpc::CallKind::kUnary,
             rpc::Unary<HealthCheckRequest, HealthCheckResponse>(
                 [&health](const HealthCheckRequest& request,
                           rpc::Call&) -> asio::awaitable<Result<HealthCheckResponse>> {
                   if (!health.Known(request.service())) {
                     co_return NotFound("unknown service");
                   }
                   HealthCheckResponse response;
                   response.set_status(StatusOf(health.serving()));
                   co_return response;
                 },
                 /*max_response_bytes=*/0));
  router.Add("/grpc.health.v1.Health/List", rpc::CallKind::kUnary,
             rpc::Unary<HealthListRequest, HealthListResponse>(
                 [&health](const HealthListRequest&,
                           rpc::Call&) -> asio::awaitable<Result<HealthListResponse>> {
                   HealthListResponse response;
                   const auto status = StatusOf(health.serving());
                   for (const auto& name : health.names()) {
                     (*response.mutable_statuses())[name].set_status(status);
                   }
                   co_return response;
                 },
                 /*max_response_bytes=*/0));
  router.Add("/grpc.health.v1.Health/Watch", rpc::CallKind::kServerStream,
             [&health](std::shared_ptr<rpc::Call> call) { return Watch(std::move(call), health); });
}

}  // namespace xb::server
