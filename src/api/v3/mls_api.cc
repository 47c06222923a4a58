#include "api/v3/mls_api.h"

#include <google/protobuf/empty.pb.h>

#include <string>
#include <utility>

#include "api/publish_service.h"
#include "api/v3/publish_wrap.h"
#include "rpc/unary.h"
#include "validate/wire_fields.h"

namespace xb::api::v3 {

namespace asio = boost::asio;
using Empty = google::protobuf::Empty;

namespace {

constexpr uint32_t kKeyPackageUpload = 1;  // UploadKeyPackageRequest.key_package
constexpr uint32_t kMessages = 1;          // SendGroupMessagesRequest.messages

asio::awaitable<Result<Empty>> PublishedAsEmpty(const ApiContext& ctx, std::string request,
                                                telemetry::SpanContext parent) {
  XB_TRY_CO(auto published, co_await PublishEncoded(ctx, std::move(request), parent));
  (void)published;
  co_return Empty();
}

// implements: issue 33 (docs/v3-api.md 3.1); an empty list is INVALID_ARGUMENT, as node-go
// answers (a v1 Publish of nothing succeeds).
asio::awaitable<Result<Empty>> SendGroupMessages(const ApiContext& ctx, std::string request,
                                                 telemetry::SpanContext parent) {
  const std::optional<size_t> messages = validate::CountField(request, kMessages, 1);
  if (!messages) {
    co_return InvalidArgument("request is malformed");
  }
  if (*messages == 0) {
    co_return InvalidArgument("no messages in the request");
  }
  co_return co_await PublishedAsEmpty(ctx, std::move(request), parent);
}

// implements: issue 33 (docs/v3-api.md 3.3)
asio::awaitable<Result<Empty>> UploadKeyPackage(const ApiContext& ctx, std::string request,
                                                telemetry::SpanContext parent) {
  const std::optional<std::string_view> upload = LastMessageField(request, kKeyPackageUpload);
  if (!upload) {
    co_return InvalidArgument("request is malformed");
  }
  std::string wrapped = OneEnvelopeRequest(kEnvelopeKeyPackage, *upload);
  co_return co_await PublishedAsEmpty(ctx, std::move(wrapped), parent);
}

}  // namespace

void AddMlsApi(rpc::Router& router, const ApiContext& context) {
  router.Add("/xmtp.mls.api.v1.MlsApi/SendGroupMessages", rpc::CallKind::kUnary,
             rpc::UnaryBytes<Empty>(
                 [&context](std::string request, rpc::Call& call) {
                   return SendGroupMessages(context, std::move(request), call.trace_parent());
                 },
                 context.limits.max_response_bytes));
  router.Add("/xmtp.mls.api.v1.MlsApi/UploadKeyPackage", rpc::CallKind::kUnary,
             rpc::UnaryBytes<Empty>(
                 [&context](std::string request, rpc::Call& call) {
                   return UploadKeyPackage(context, std::move(request), call.trace_parent());
                 },
                 context.limits.max_response_bytes));
}

}  // namespace xb::api::v3
