// kind = "static" (ATTACH.md section 7): the configured keys, answered as they are.
#include "attach/local_sources.h"

namespace xb::attach {
namespace {

// implements: ATCH-073 (static: never expires)
class StaticProvider final : public CredentialProvider {
 public:
  explicit StaticProvider(AwsCredentials credentials) : credentials_(std::move(credentials)) {
    credentials_.expiry.reset();
  }

  boost::asio::awaitable<CredentialResult> Fetch() override { co_return credentials_; }

 private:
  AwsCredentials credentials_;
};

}  // namespace

std::unique_ptr<CredentialProvider> MakeStaticProvider(AwsCredentials credentials) {
  return std::make_unique<StaticProvider>(std::move(credentials));
}

}  // namespace xb::attach
