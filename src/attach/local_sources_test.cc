// The static, environment and chain sources (local_sources.h).
#include "attach/local_sources.h"

#include <gtest/gtest.h>

#include <map>

#include "attach/testing/run_fetch.h"

namespace xb::attach {
namespace {

using testing::MapEnvironment;
using testing::RunFetch;

ProviderContext ContextWith(const std::map<std::string, std::string>* env) {
  ProviderContext context;
  context.env = MapEnvironment(env);
  return context;
}

// verifies: ATCH-073 (static: never expires)
TEST(StaticProvider, AnswersTheConfiguredKeysWithoutExpiry) {
  auto provider = MakeStaticProvider(AwsCredentials{.access_key_id = "AKID",
                                                    .secret_access_key = "SECRET",
                                                    .session_token = "TOKEN",
                                                    .expiry = WallClock::now()});
  for (int i = 0; i < 2; ++i) {
    CredentialResult result = RunFetch(*provider);
    ASSERT_TRUE(result.ok());
    EXPECT_EQ(result->access_key_id, "AKID");
    EXPECT_EQ(result->secret_access_key, "SECRET");
    EXPECT_EQ(result->session_token, "TOKEN");
    EXPECT_FALSE(result->expiry.has_value());
  }
}

// verifies: ATCH-073 (environment)
TEST(EnvironmentProvider, ReadsTheVariablesAtEachFetch) {
  std::map<std::string, std::string> env{{"AWS_ACCESS_KEY_ID", "AKID1"},
                                         {"AWS_SECRET_ACCESS_KEY", "SECRET1"}};
  const ProviderContext context = ContextWith(&env);
  auto provider = MakeEnvironmentProvider(context);
  CredentialResult first = RunFetch(*provider);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->access_key_id, "AKID1");
  EXPECT_EQ(first->secret_access_key, "SECRET1");
  EXPECT_EQ(first->session_token, "");
  EXPECT_FALSE(first->expiry.has_value());

  env["AWS_ACCESS_KEY_ID"] = "AKID2";
  env["AWS_SESSION_TOKEN"] = "TOKEN2";
  env["AWS_CREDENTIAL_EXPIRATION"] = "2026-12-05T10:00:00Z";
  CredentialResult second = RunFetch(*provider);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->access_key_id, "AKID2");
  EXPECT_EQ(second->session_token, "TOKEN2");
  ASSERT_TRUE(second->expiry.has_value());
  EXPECT_EQ(WallClock::to_time_t(*second->expiry), 1796464800);
}

// verifies: ATCH-073 (environment: missing or empty is unavailable)
TEST(EnvironmentProvider, MissingOrEmptyKeysAreUnavailable) {
  for (const auto& env : std::vector<std::map<std::string, std::string>>{
           {},
           {{"AWS_ACCESS_KEY_ID", "AKID"}},
           {{"AWS_SECRET_ACCESS_KEY", "SECRET"}},
           {{"AWS_ACCESS_KEY_ID", ""}, {"AWS_SECRET_ACCESS_KEY", "SECRET"}},
           {{"AWS_ACCESS_KEY_ID", "AKID"}, {"AWS_SECRET_ACCESS_KEY", ""}}}) {
    const ProviderContext context = ContextWith(&env);
    CredentialResult result = RunFetch(*MakeEnvironmentProvider(context));
    ASSERT_FALSE(result.ok());
    EXPECT_EQ(result.error().kind, CredentialFailure::kUnavailable);
    EXPECT_EQ(result.error().message, "the credential environment variables are not set");
  }
}

TEST(EnvironmentProvider, AnUnreadableExpirationIsUnavailableAndNotEchoed) {
  const std::map<std::string, std::string> env{{"AWS_ACCESS_KEY_ID", "AKID"},
                                               {"AWS_SECRET_ACCESS_KEY", "SECRET"},
                                               {"AWS_CREDENTIAL_EXPIRATION", "tomorrow-ish"}};
  const ProviderContext context = ContextWith(&env);
  CredentialResult result = RunFetch(*MakeEnvironmentProvider(context));
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().kind, CredentialFailure::kUnavailable);
  EXPECT_EQ(result.error().message.find("tomorrow"), std::string::npos);
}

// A link that answers `result` and counts its calls.
class ScriptedProvider final : public CredentialProvider {
 public:
  ScriptedProvider(CredentialResult result, int* calls)
      : result_(std::move(result)), calls_(calls) {}
  boost::asio::awaitable<CredentialResult> Fetch() override {
    ++*calls_;
    co_return result_;
  }

 private:
  CredentialResult result_;
  int* calls_;
};

// verifies: ATCH-073 (default_chain: the first source that answers wins)
TEST(ChainProvider, FirstSuccessWinsAndLaterLinksAreNotAsked) {
  int calls[3] = {0, 0, 0};
  std::vector<std::unique_ptr<CredentialProvider>> links;
  links.push_back(std::make_unique<ScriptedProvider>(
      CredentialError{CredentialFailure::kInvalidConfiguration, "bad profile"}, &calls[0]));
  links.push_back(std::make_unique<ScriptedProvider>(
      AwsCredentials{.access_key_id = "SECOND", .secret_access_key = "S"}, &calls[1]));
  links.push_back(std::make_unique<ScriptedProvider>(
      AwsCredentials{.access_key_id = "THIRD", .secret_access_key = "S"}, &calls[2]));
  auto chain = MakeChainProvider(std::move(links));
  for (int round = 1; round <= 2; ++round) {
    CredentialResult result = RunFetch(*chain);
    ASSERT_TRUE(result.ok());
    EXPECT_EQ(result->access_key_id, "SECOND");
    EXPECT_EQ(calls[0], round);  // asked again at every Fetch: nothing is remembered
    EXPECT_EQ(calls[1], round);
    EXPECT_EQ(calls[2], 0);
  }
}

// verifies: ATCH-073 (default_chain: no source answered)
TEST(ChainProvider, AllLinksFailingIsUnavailable) {
  int calls[2] = {0, 0};
  std::vector<std::unique_ptr<CredentialProvider>> links;
  links.push_back(std::make_unique<ScriptedProvider>(
      CredentialError{CredentialFailure::kInvalidConfiguration, "bad profile"}, &calls[0]));
  links.push_back(std::make_unique<ScriptedProvider>(
      CredentialError{CredentialFailure::kUnavailable, "no answer"}, &calls[1]));
  CredentialResult result = RunFetch(*MakeChainProvider(std::move(links)));
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().kind, CredentialFailure::kUnavailable);
  EXPECT_EQ(result.error().message, "no credential source in the chain answered");
  EXPECT_EQ(calls[0], 1);
  EXPECT_EQ(calls[1], 1);

  CredentialResult empty = RunFetch(*MakeChainProvider({}));
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.error().kind, CredentialFailure::kUnavailable);
}

}  // namespace
}  // namespace xb::attach
