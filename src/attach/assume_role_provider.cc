// kind = "assume_role" and a profile's role_arn: STS AssumeRole signed with the credentials of a
// source provider, like the SDKs' assume-role provider.
#include "attach/endpoint_answer.h"
#include "attach/http_sources.h"
#include "attach/sts_client.h"

namespace xb::attach {
namespace {

class AssumeRoleProvider final : public CredentialProvider {
 public:
  AssumeRoleProvider(ProviderContext context, AssumeRoleSettings settings,
                     std::unique_ptr<CredentialProvider> source)
      : context_(std::move(context)), settings_(std::move(settings)), source_(std::move(source)) {}

  // implements: ATCH-073
  boost::asio::awaitable<CredentialResult> Fetch() override {
    if (settings_.role_arn.empty() || source_ == nullptr) {
      co_return InvalidConfiguration("the role to assume is not configured");
    }
    // The source's failure is this provider's failure, with its kind and words.
    XB_TRY_CO(AwsCredentials source, co_await source_->Fetch());
    StsCall call{.action = "AssumeRole", .signer = std::move(source)};
    call.params.emplace_back("RoleArn", settings_.role_arn);
    call.params.emplace_back("RoleSessionName", settings_.session_name.empty()
                                                    ? GeneratedSessionName(context_.now())
                                                    : settings_.session_name);
    if (!settings_.external_id.empty()) {
      call.params.emplace_back("ExternalId", settings_.external_id);
    }
    // DurationSeconds is not sent: the role's default (one hour), as the SDKs do.
    co_return co_await CallSts(context_, std::move(call));
  }

 private:
  // Const after construction.
  const ProviderContext context_;
  const AssumeRoleSettings settings_;
  const std::unique_ptr<CredentialProvider> source_;
};

}  // namespace

std::unique_ptr<CredentialProvider> MakeAssumeRoleProvider(
    const ProviderContext& context, AssumeRoleSettings settings,
    std::unique_ptr<CredentialProvider> source) {
  return std::make_unique<AssumeRoleProvider>(context, std::move(settings), std::move(source));
}

}  // namespace xb::attach
