#include "api/v3/mls_api.h"

#include <google/protobuf/empty.pb.h>

#include <string>
#include <utility>

#include "api/publish_service.h"
#include "api/v3/mls_reads.h"
#include "api/v3/publish_wrap.h"
#include "mls/api/v1/mls.pb.h"
#include "mls/message_contents/commit_log.pb.h"
#include "rpc/unary.h"
#include "validate/wire_fields.h"

namespace xb::api::v3 {

namespace asio = boost::asio;
namespace mls = xmtp::mls::api::v1;
namespace v1 = xmtp::backend::v1;
using Empty = google::protobuf::Empty;

namespace {

constexpr uint32_t kKeyPackageUpload = 1;   // Upload/RegisterInstallationRequest.key_package
constexpr uint32_t kMessages = 1;           // Send{Group,Welcome}MessagesRequest.messages
constexpr uint32_t kCommitLogRequests = 1;  // BatchPublishCommitLogRequest.requests
constexpr size_t kMaxCommitLogWrites = 10;  // node-go's maxBatchInserts (3.7)

// The shape check a V3 write starts with: the request's top level decodes and holds field
// `number` at least once (node-go refuses an empty request with INVALID_ARGUMENT, `none`).
Status RequirePresent(std::string_view request, uint32_t number, const char* none) {
  const std::optional<size_t> count = validate::CountField(request, number, 1);
  if (!count) {
    return InvalidArgument("request is malformed");
  }
  if (*count == 0) {
    return InvalidArgument(none);
  }
  return Status::Ok();
}

asio::awaitable<Result<Empty>> PublishedAsEmpty(const ApiContext& ctx, std::string request,
                                                PublishOrigin origin) {
  XB_TRY_CO(auto published, co_await PublishEncoded(ctx, std::move(request), std::move(origin)));
  (void)published;
  co_return Empty();
}

// implements: issue 33 (docs/v3-api.md 3.1); an empty list is INVALID_ARGUMENT, as node-go
// answers (a v1 Publish of nothing succeeds).
asio::awaitable<Result<Empty>> SendGroupMessages(const ApiContext& ctx, std::string request,
                                                 PublishOrigin origin) {
  XB_RETURN_IF_ERROR_CO(RequirePresent(request, kMessages, "no messages in the request"));
  co_return co_await PublishedAsEmpty(ctx, std::move(request), std::move(origin));
}

// 3.2: the request has at least one Welcome; each is published with the stored numbering.
asio::awaitable<Result<Empty>> SendWelcomeMessages(const ApiContext& ctx, std::string request,
                                                   PublishOrigin origin) {
  XB_RETURN_IF_ERROR_CO(RequirePresent(request, kMessages, "no messages in the request"));
  std::optional<std::string> wrapped = WelcomesAsPublish(request);
  if (!wrapped) {
    co_return InvalidArgument("request is malformed");
  }
  co_return co_await PublishedAsEmpty(ctx, std::move(*wrapped), std::move(origin));
}

// 3.3: the KeyPackageUpload is published as one key-package envelope; its topic names the
// installation (0x03 ‖ leaf signature key).
asio::awaitable<Result<v1::PublishResponse>> PublishKeyPackage(const ApiContext& ctx,
                                                               std::string request,
                                                               PublishOrigin origin) {
  XB_RETURN_IF_ERROR_CO(
      RequirePresent(request, kKeyPackageUpload, "no key package in the request"));
  const std::optional<std::string_view> upload = LastMessageField(request, kKeyPackageUpload);
  if (!upload) {
    co_return InvalidArgument("request is malformed");
  }
  co_return co_await PublishEncoded(ctx, OneEnvelopeRequest(kEnvelopeKeyPackage, *upload),
                                    std::move(origin));
}

// implements: issue 33 (docs/v3-api.md 3.3)
asio::awaitable<Result<Empty>> UploadKeyPackage(const ApiContext& ctx, std::string request,
                                                PublishOrigin origin) {
  XB_TRY_CO(auto published, co_await PublishKeyPackage(ctx, std::move(request), std::move(origin)));
  (void)published;
  co_return Empty();
}

// implements: issue 33 (docs/v3-api.md 3.3) — deprecated, served as node-go serves it: the
// upload, answering the installation key (the stored topic's identifier).
asio::awaitable<Result<mls::RegisterInstallationResponse>> RegisterInstallation(
    const ApiContext& ctx, std::string request, PublishOrigin origin) {
  XB_TRY_CO(auto published, co_await PublishKeyPackage(ctx, std::move(request), std::move(origin)));
  mls::RegisterInstallationResponse response;
  if (published.envelope_metas_size() == 1) {
    response.set_installation_key(published.envelope_metas(0).topic().topic().substr(1));
  }
  co_return response;
}

// 3.7 (G8, G11): node-go's shape checks, then the request's group id must be the one the entry
// names (the entry's routes the topic, TOPIC-001); an entry that does not decode is left to
// Publish, which answers MALFORMED at its index.
Status CheckCommitLogWrite(const mls::PublishCommitLogRequest& write) {
  if (write.group_id().empty() || write.serialized_commit_log_entry().empty() ||
      !write.has_signature()) {
    return InvalidArgument("invalid commit log entry");
  }
  xmtp::mls::message_contents::PlaintextCommitLogEntry entry;
  if (entry.ParseFromString(write.serialized_commit_log_entry()) &&
      entry.group_id() != write.group_id()) {
    return InvalidArgument("commit log entry names another group than the request");
  }
  return Status::Ok();
}

// implements: issue 33 (docs/v3-api.md 3.7)
asio::awaitable<Result<Empty>> BatchPublishCommitLog(const ApiContext& ctx, std::string request,
                                                     PublishOrigin origin) {
  const std::optional<size_t> count =
      validate::CountField(request, kCommitLogRequests, kMaxCommitLogWrites);
  if (!count) {
    co_return InvalidArgument("request is malformed");
  }
  if (*count == 0 || *count > kMaxCommitLogWrites) {
    co_return InvalidArgument("a commit log batch holds 1 to 10 entries");
  }
  mls::BatchPublishCommitLogRequest batch;
  if (!batch.ParseFromString(request)) {
    co_return InvalidArgument("request is malformed");
  }
  v1::PublishRequest publish;
  for (const auto& write : batch.requests()) {
    XB_RETURN_IF_ERROR_CO(CheckCommitLogWrite(write));
    auto* entry = publish.add_envelopes()->mutable_commit_log_entry();
    entry->set_serialized_commit_log_entry(write.serialized_commit_log_entry());
    *entry->mutable_signature() = write.signature();
  }
  co_return co_await PublishedAsEmpty(ctx, publish.SerializeAsString(), std::move(origin));
}

// implements: issue 33 (docs/v3-api.md 3.9) — deprecated methods node-go answers UNIMPLEMENTED,
// registered so that they carry their own route labels.
void AddDeprecatedMlsMethods(rpc::Router& router, const ApiContext& context) {
  router.Add("/xmtp.mls.api.v1.MlsApi/RevokeInstallation", rpc::CallKind::kUnary,
             rpc::UnaryBytes<Empty>(
                 [](std::string, rpc::Call&) -> asio::awaitable<Result<Empty>> {
                   co_return Unimplemented(
                       "RevokeInstallation is deprecated: revoke through an identity update");
                 },
                 context.limits.max_response_bytes));
  router.Add(
      "/xmtp.mls.api.v1.MlsApi/GetIdentityUpdates", rpc::CallKind::kUnary,
      rpc::UnaryBytes<mls::GetIdentityUpdatesResponse>(
          [](std::string, rpc::Call&) -> asio::awaitable<Result<mls::GetIdentityUpdatesResponse>> {
            co_return Unimplemented(
                "MlsApi.GetIdentityUpdates is deprecated: use IdentityApi.GetIdentityUpdates");
          },
          context.limits.max_response_bytes));
}

// A write served through Publish: `handler` gets the request bytes and the publish's origin.
template <typename Response>
void AddWrite(rpc::Router& router, const ApiContext& context, std::string path,
              asio::awaitable<Result<Response>> (*handler)(const ApiContext&, std::string,
                                                           PublishOrigin)) {
  router.Add(std::move(path), rpc::CallKind::kUnary,
             rpc::UnaryBytes<Response>(
                 [&context, handler](std::string request, rpc::Call& call) {
                   return handler(context, std::move(request), OriginOf(context, call));
                 },
                 context.limits.max_response_bytes));
}

}  // namespace

void AddMlsApi(rpc::Router& router, const ApiContext& context) {
  constexpr std::string_view kService = "/xmtp.mls.api.v1.MlsApi/";
  const auto path = [&](std::string_view method) { return std::string(kService) += method; };
  AddWrite(router, context, path("SendGroupMessages"), SendGroupMessages);
  AddWrite(router, context, path("SendWelcomeMessages"), SendWelcomeMessages);
  AddWrite(router, context, path("UploadKeyPackage"), UploadKeyPackage);
  AddWrite(router, context, path("RegisterInstallation"), RegisterInstallation);
  AddWrite(router, context, path("BatchPublishCommitLog"), BatchPublishCommitLog);
  AddDeprecatedMlsMethods(router, context);
  AddMlsReads(router, context);
}

}  // namespace xb::api::v3
