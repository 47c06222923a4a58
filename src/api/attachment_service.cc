#include "api/attachment_service.h"

#include <string>
#include <utility>

#include "attach/upload_signer.h"
#include "rpc/unary.h"
#include "xmtp/backend/v1/backend.pb.h"

namespace xb::api {

namespace asio = boost::asio;
namespace v1 = xmtp::backend::v1;

namespace {

constexpr size_t kDigestBytes = 32;

// implements: ATCH-021 (rows 4 and 5)
Status CredentialStatus(const attach::CredentialError& error) {
  if (error.kind == attach::CredentialFailure::kInvalidConfiguration) {
    return Status(StatusCode::kFailedPrecondition,
                  "storage credential source configuration is invalid");
  }
  return Unavailable("storage credentials unavailable");
}

v1::CreateUploadResponse ResponseOf(attach::PresignedUpload upload) {
  v1::CreateUploadResponse out;
  out.set_method("PUT");
  out.set_url(std::move(upload.url));
  for (attach::SignedHeader& h : upload.headers) {
    v1::HttpHeader* header = out.add_headers();
    header->set_name(std::move(h.name));
    header->set_value(std::move(h.value));
  }
  out.set_expires_in_seconds(upload.expires_in_seconds);
  return out;
}

// implements: ATCH-020, ATCH-021
asio::awaitable<Result<v1::CreateUploadResponse>> CreateUpload(
    const ApiContext& ctx, const v1::CreateUploadRequest& request) {
  if (ctx.uploads == nullptr) {  // row 1
    co_return Unimplemented("attachment storage is not configured");
  }
  if (request.content_digest().size() != kDigestBytes) {  // row 2
    co_return InvalidArgument("content_digest must contain exactly 32 bytes");
  }
  if (request.content_length() == 0 || request.content_length() > ctx.max_upload_bytes) {  // row 3
    co_return InvalidArgument("content_length is outside the upload limit");
  }
  auto presigned =
      co_await ctx.uploads->Presign(request.content_digest(), request.content_length());
  if (!presigned.ok()) {  // rows 4 and 5; row 6 cannot happen: signing itself never fails
    co_return CredentialStatus(presigned.error());
  }
  co_return ResponseOf(std::move(presigned).value());
}

}  // namespace

void AddAttachmentService(rpc::Router& router, const ApiContext& context) {
  router.Add("/xmtp.backend.v1.AttachmentService/CreateUpload", rpc::CallKind::kUnary,
             rpc::Unary<v1::CreateUploadRequest, v1::CreateUploadResponse>(
                 [&context](const v1::CreateUploadRequest& request, rpc::Call&) {
                   return CreateUpload(context, request);
                 },
                 context.limits.max_response_bytes));
}

}  // namespace xb::api
