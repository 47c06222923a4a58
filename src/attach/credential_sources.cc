// MakeCredentialProvider: the configured `kind` to its source (ATTACH.md section 7, ATCH-073).
#include <utility>

#include "attach/credentials.h"

namespace xb::attach {
namespace {

std::string Field(const std::map<std::string, std::string>& fields, const std::string& name) {
  auto it = fields.find(name);
  return it == fields.end() ? std::string() : it->second;
}

class StaticSource final : public CredentialProvider {
 public:
  explicit StaticSource(AwsCredentials credentials) : credentials_(std::move(credentials)) {}
  boost::asio::awaitable<CredentialResult> Fetch() override { co_return credentials_; }

 private:
  const AwsCredentials credentials_;
};

}  // namespace

// implements: ATCH-073
Expected<std::unique_ptr<CredentialProvider>, std::string> MakeCredentialProvider(
    const std::string& kind, const std::map<std::string, std::string>& fields,
    const ProviderContext& /*context*/) {
  if (kind == "static") {
    return std::unique_ptr<CredentialProvider>(std::make_unique<StaticSource>(
        AwsCredentials{.access_key_id = Field(fields, "access_key_id"),
                       .secret_access_key = Field(fields, "secret_access_key"),
                       .session_token = Field(fields, "session_token"),
                       .expiry = std::nullopt}));
  }
  return std::string("this credentials kind is not available");
}

}  // namespace xb::attach
