// kind = "environment" (ATTACH.md section 7), as the SDKs' environment provider: the AWS_*
// variables, read again at each Fetch so a changed environment (tests, a wrapper) is seen.
#include "attach/iso8601.h"
#include "attach/local_sources.h"

namespace xb::attach {
namespace {

std::string Variable(const EnvironmentLookup& env, const char* name) {
  std::optional<std::string> value = env(name);
  return value.has_value() ? std::move(*value) : std::string();
}

// implements: ATCH-073 (environment)
class EnvironmentProvider final : public CredentialProvider {
 public:
  explicit EnvironmentProvider(EnvironmentLookup env) : env_(std::move(env)) {}

  boost::asio::awaitable<CredentialResult> Fetch() override { co_return Read(); }

 private:
  CredentialResult Read() const {
    AwsCredentials credentials{
        .access_key_id = Variable(env_, "AWS_ACCESS_KEY_ID"),
        .secret_access_key = Variable(env_, "AWS_SECRET_ACCESS_KEY"),
        .session_token = Variable(env_, "AWS_SESSION_TOKEN"),
    };
    // Both keys or nothing: one without the other is "not configured here" (the SDKs move on
    // to the next source of the chain).
    if (credentials.access_key_id.empty() || credentials.secret_access_key.empty()) {
      return CredentialError{CredentialFailure::kUnavailable,
                             "the credential environment variables are not set"};
    }
    const std::string expiration = Variable(env_, "AWS_CREDENTIAL_EXPIRATION");
    if (!expiration.empty()) {
      credentials.expiry = ParseIso8601(expiration);
      if (!credentials.expiry.has_value()) {
        return CredentialError{CredentialFailure::kUnavailable,
                               "the credential expiration variable is not a timestamp"};
      }
    }
    return credentials;
  }

  EnvironmentLookup env_;
};

}  // namespace

std::unique_ptr<CredentialProvider> MakeEnvironmentProvider(const ProviderContext& context) {
  return std::make_unique<EnvironmentProvider>(context.env);
}

}  // namespace xb::attach
