// The provider chain (default_chain is one): each link is asked in order at every Fetch and the
// first answer wins, as the SDKs' chains do.
#include "attach/local_sources.h"

namespace xb::attach {
namespace {

// implements: ATCH-073 (default_chain: first source that answers)
class ChainProvider final : public CredentialProvider {
 public:
  explicit ChainProvider(std::vector<std::unique_ptr<CredentialProvider>> links)
      : links_(std::move(links)) {}

  boost::asio::awaitable<CredentialResult> Fetch() override {
    // Every failure, kInvalidConfiguration included, moves on to the next link (the C++ SDK's
    // chain; botocore stops at some configuration errors). A link's own words are dropped: the
    // chain's answer names no source, and which links exist is the operator's configuration.
    for (const std::unique_ptr<CredentialProvider>& link : links_) {
      CredentialResult result = co_await link->Fetch();
      if (result.ok()) {
        co_return result;
      }
    }
    co_return CredentialError{CredentialFailure::kUnavailable,
                              "no credential source in the chain answered"};
  }

 private:
  std::vector<std::unique_ptr<CredentialProvider>> links_;
};

}  // namespace

std::unique_ptr<CredentialProvider> MakeChainProvider(
    std::vector<std::unique_ptr<CredentialProvider>> links) {
  return std::make_unique<ChainProvider>(std::move(links));
}

}  // namespace xb::attach
