// The profile source (local_sources.h MakeProfileProvider) over temp config/credentials files,
// with fake delegates that record what the profile asked for.
#include <gtest/gtest.h>

#include <map>

#include "attach/local_sources.h"
#include "attach/testing/run_fetch.h"
#include "attach/testing/temp_dir.h"

namespace xb::attach {
namespace {

using testing::RunFetch;

// Answers "<tag>(<the source's key id>)" or "<tag>" without a source.
class TaggedProvider final : public CredentialProvider {
 public:
  TaggedProvider(std::string tag, std::unique_ptr<CredentialProvider> source)
      : tag_(std::move(tag)), source_(std::move(source)) {}
  boost::asio::awaitable<CredentialResult> Fetch() override {
    std::string key = tag_;
    if (source_ != nullptr) {
      CredentialResult inner = co_await source_->Fetch();
      if (!inner.ok()) {
        co_return inner;
      }
      key += "(" + inner->access_key_id + ")";
    }
    co_return AwsCredentials{.access_key_id = key, .secret_access_key = "S"};
  }

 private:
  std::string tag_;
  std::unique_ptr<CredentialProvider> source_;
};

class ProfileProviderTest : public ::testing::Test {
 protected:
  ProfileProviderTest() {
    env_["AWS_CONFIG_FILE"] = dir_.path() + "/config";
    env_["AWS_SHARED_CREDENTIALS_FILE"] = dir_.path() + "/credentials";
    env_["HOME"] = dir_.path() + "/home";
    context_.env = testing::MapEnvironment(&env_);
  }

  ProfileDelegates Delegates() {
    return ProfileDelegates{
        .assume_role =
            [this](std::string role_arn, std::string external_id, std::string session_name,
                   std::unique_ptr<CredentialProvider> source) {
              asked_.push_back("assume_role " + role_arn + " " + external_id + " " + session_name);
              return std::make_unique<TaggedProvider>("role:" + role_arn, std::move(source));
            },
        .web_identity =
            [this](std::string token_file, std::string role_arn, std::string session_name) {
              asked_.push_back("web_identity " + token_file + " " + role_arn + " " + session_name);
              return std::make_unique<TaggedProvider>("web:" + role_arn, nullptr);
            },
        .sso =
            [this](std::string account_id, std::string region, std::string role_name,
                   std::string start_url, std::string session_name) {
              asked_.push_back("sso " + account_id + " " + region + " " + role_name + " " +
                               start_url + " " + session_name);
              return std::make_unique<TaggedProvider>("sso", nullptr);
            },
        .named_source =
            [this](std::string credential_source) {
              asked_.push_back("named " + credential_source);
              return std::make_unique<TaggedProvider>("named:" + credential_source, nullptr);
            },
    };
  }

  void Files(const std::string& config, const std::string& credentials = "") {
    dir_.Write("config", config);
    dir_.Write("credentials", credentials);
  }

  CredentialResult Fetch(const std::string& name) {
    return RunFetch(*MakeProfileProvider(context_, name, Delegates()));
  }

  std::string KeyOf(const std::string& name) {
    CredentialResult result = Fetch(name);
    return result.ok() ? result->access_key_id : "error: " + result.error().message;
  }

  static void ExpectInvalid(const CredentialResult& result, const std::string& words) {
    ASSERT_FALSE(result.ok());
    EXPECT_EQ(result.error().kind, CredentialFailure::kInvalidConfiguration);
    EXPECT_EQ(result.error().message, words);
  }

  testing::TempDir dir_;
  std::map<std::string, std::string> env_;
  ProviderContext context_{};
  std::vector<std::string> asked_;
};

// verifies: ATCH-073 (profile: static keys)
TEST_F(ProfileProviderTest, StaticKeysFromEitherFileCredentialsFileWinning) {
  Files(
      "[profile dev]\naws_access_key_id = FROM_CONFIG\naws_secret_access_key = S1\n"
      "[profile cfg]\naws_access_key_id = CFG\naws_secret_access_key = S2\n"
      "aws_session_token = T2\n",
      "[dev]\naws_access_key_id = FROM_CREDENTIALS\n");
  CredentialResult dev = Fetch("dev");
  ASSERT_TRUE(dev.ok()) << dev.error().message;
  EXPECT_EQ(dev->access_key_id, "FROM_CREDENTIALS");
  EXPECT_EQ(dev->secret_access_key, "S1");
  EXPECT_FALSE(dev->expiry.has_value());
  CredentialResult cfg = Fetch("cfg");
  ASSERT_TRUE(cfg.ok());
  EXPECT_EQ(cfg->session_token, "T2");
  EXPECT_TRUE(asked_.empty());
}

// verifies: ATCH-073 (profile: credential_process)
TEST_F(ProfileProviderTest, CredentialProcess) {
  const std::string script =
      dir_.Write("creds.sh",
                 "#!/bin/sh\necho "
                 "'{\"Version\":1,\"AccessKeyId\":\"FROM_PROCESS\",\"SecretAccessKey\":\"S\"}'\n",
                 /*executable=*/true);
  Files("[profile proc]\ncredential_process = " + script + "\n");
  EXPECT_EQ(KeyOf("proc"), "FROM_PROCESS");
}

// verifies: ATCH-073 (profile: role_arn with source_profile, recursively)
TEST_F(ProfileProviderTest, RoleChainsThroughSourceProfiles) {
  Files(
      "[profile top]\nrole_arn = arn:top\nsource_profile = middle\nexternal_id = ext\n"
      "role_session_name = sess\n"
      "[profile middle]\nrole_arn = arn:middle\nsource_profile = base\n"
      "[profile base]\naws_access_key_id = BASE\naws_secret_access_key = S\n"
      // A source profile with static keys is used as it is: its own role is not assumed.
      "[profile keyed]\nrole_arn = arn:keyed\naws_access_key_id = KEYED\n"
      "aws_secret_access_key = S\n"
      "[profile via_keyed]\nrole_arn = arn:via\nsource_profile = keyed\n");
  EXPECT_EQ(KeyOf("top"), "role:arn:top(role:arn:middle(BASE))");
  EXPECT_EQ(asked_,
            (std::vector<std::string>{"assume_role arn:middle  ", "assume_role arn:top ext sess"}));
  EXPECT_EQ(KeyOf("via_keyed"), "role:arn:via(KEYED)");
  // Asked for directly, a role needs source_profile or credential_source (botocore refuses).
  ExpectInvalid(Fetch("keyed"), "the profile's role names no source credentials");
}

// verifies: ATCH-073 (profile: a role chain that loops is an invalid configuration)
TEST_F(ProfileProviderTest, RoleLoopsAreInvalidButASelfSourceWithKeysIsNot) {
  Files(
      "[profile a]\nrole_arn = arn:a\nsource_profile = b\n"
      "[profile b]\nrole_arn = arn:b\nsource_profile = a\n"
      "[profile self]\nrole_arn = arn:self\nsource_profile = self\n"
      "[profile self_keyed]\nrole_arn = arn:sk\nsource_profile = self_keyed\n"
      "aws_access_key_id = SELF\naws_secret_access_key = S\n");
  ExpectInvalid(Fetch("a"), "the profile's role chain loops");
  ExpectInvalid(Fetch("self"), "the profile's role chain loops");
  EXPECT_EQ(KeyOf("self_keyed"), "role:arn:sk(SELF)");
}

// verifies: ATCH-073 (profile: credential_source)
TEST_F(ProfileProviderTest, CredentialSources) {
  Files(
      "[profile env]\nrole_arn = arn:env\ncredential_source = Environment\n"
      "[profile ec2]\nrole_arn = arn:ec2\ncredential_source = Ec2InstanceMetadata\n"
      "[profile ecs]\nrole_arn = arn:ecs\ncredential_source = EcsContainer\n"
      "[profile odd]\nrole_arn = arn:odd\ncredential_source = environment\n"
      "[profile both]\nrole_arn = arn:both\ncredential_source = Environment\n"
      "source_profile = env\n"
      "[profile none]\nrole_arn = arn:none\n"
      "[profile ghost]\nrole_arn = arn:ghost\nsource_profile = nowhere\n");
  EXPECT_EQ(KeyOf("env"), "role:arn:env(named:Environment)");
  EXPECT_EQ(KeyOf("ec2"), "role:arn:ec2(named:Ec2InstanceMetadata)");
  EXPECT_EQ(KeyOf("ecs"), "role:arn:ecs(named:EcsContainer)");
  ExpectInvalid(Fetch("odd"), "the profile's credential source is not a known one");
  ExpectInvalid(Fetch("both"), "the profile names both a source profile and a credential source");
  ExpectInvalid(Fetch("none"), "the profile's role names no source credentials");
  ExpectInvalid(Fetch("ghost"), "the profile's source profile does not exist");
}

// verifies: ATCH-073 (profile: role_arn with web_identity_token_file)
TEST_F(ProfileProviderTest, WebIdentity) {
  Files(
      "[profile web]\nrole_arn = arn:web\nweb_identity_token_file = /var/token\n"
      "role_session_name = s1\nsource_profile = ignored\n");
  EXPECT_EQ(KeyOf("web"), "web:arn:web");
  EXPECT_EQ(asked_, (std::vector<std::string>{"web_identity /var/token arn:web s1"}));
}

// verifies: ATCH-073 (profile: sso_* keys or sso_session)
TEST_F(ProfileProviderTest, SsoLegacyAndSession) {
  Files(
      "[profile legacy]\nsso_start_url = https://a.example/start\nsso_region = us-east-1\n"
      "sso_account_id = 111\nsso_role_name = Reader\n"
      "[profile session]\nsso_session = corp\nsso_account_id = 222\nsso_role_name = Writer\n"
      "[sso-session corp]\nsso_start_url = https://corp.example/start\nsso_region = eu-west-1\n"
      "[profile partial]\nsso_account_id = 333\n"
      "[profile clash]\nsso_session = corp\nsso_region = us-west-2\nsso_account_id = 4\n"
      "sso_role_name = R\n"
      "[profile lost]\nsso_session = nowhere\nsso_account_id = 5\nsso_role_name = R\n");
  EXPECT_EQ(KeyOf("legacy"), "sso");
  EXPECT_EQ(KeyOf("session"), "sso");
  EXPECT_EQ(asked_,
            (std::vector<std::string>{"sso 111 us-east-1 Reader https://a.example/start ",
                                      "sso 222 eu-west-1 Writer https://corp.example/start corp"}));
  ExpectInvalid(Fetch("partial"), "the profile's SSO settings are incomplete");
  ExpectInvalid(Fetch("clash"), "the profile's SSO settings contradict its sso-session");
  ExpectInvalid(Fetch("lost"), "the profile's sso-session does not exist");
}

// verifies: ATCH-073 (profile: no such profile, or no source: invalid configuration)
TEST_F(ProfileProviderTest, MissingOrSourcelessProfilesAreInvalid) {
  Files(
      "[profile empty]\nregion = us-east-1\n"
      "[profile half]\naws_access_key_id = AKID\n");
  ExpectInvalid(Fetch("absent"), "the named profile does not exist");
  ExpectInvalid(Fetch("empty"), "the profile names no credential source");
  ExpectInvalid(Fetch("half"), "the profile has an access key id without its secret");
  // No files at all: every profile is missing.
  env_["AWS_CONFIG_FILE"] = dir_.path() + "/nope";
  env_["AWS_SHARED_CREDENTIALS_FILE"] = dir_.path() + "/nope2";
  ExpectInvalid(Fetch("default"), "the named profile does not exist");
}

TEST_F(ProfileProviderTest, AnEmptyNameIsAwsProfileElseDefault) {
  Files(
      "[default]\naws_access_key_id = DEFAULT\naws_secret_access_key = S\n"
      "[profile chosen]\naws_access_key_id = CHOSEN\naws_secret_access_key = S\n");
  EXPECT_EQ(KeyOf(""), "DEFAULT");
  env_["AWS_PROFILE"] = "chosen";
  EXPECT_EQ(KeyOf(""), "CHOSEN");
}

TEST_F(ProfileProviderTest, DefaultPathsAreUnderHome) {
  env_.erase("AWS_CONFIG_FILE");
  env_.erase("AWS_SHARED_CREDENTIALS_FILE");
  std::filesystem::create_directories(dir_.path() + "/home/.aws");
  dir_.Write("home/.aws/credentials", "[default]\naws_access_key_id = HOME\n");
  dir_.Write("home/.aws/config", "[default]\naws_secret_access_key = S\n");
  EXPECT_EQ(KeyOf("default"), "HOME");
}

// The built provider is kept while the files do not change, and rebuilt when they do.
TEST_F(ProfileProviderTest, RebuildsOnlyWhenTheFilesChange) {
  Files("[profile r]\nrole_arn = arn:one\ncredential_source = Environment\n");
  auto provider = MakeProfileProvider(context_, "r", Delegates());
  CredentialResult first = RunFetch(*provider);
  CredentialResult second = RunFetch(*provider);
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_EQ(asked_.size(), 2u);  // named + assume_role, once
  Files("[profile r]\nrole_arn = arn:two\ncredential_source = Environment\n");
  CredentialResult third = RunFetch(*provider);
  ASSERT_TRUE(third.ok());
  EXPECT_EQ(third->access_key_id, "role:arn:two(named:Environment)");
  EXPECT_EQ(asked_.size(), 4u);
  Files("[profile r]\nregion = x\n");
  ExpectInvalid(RunFetch(*provider), "the profile names no credential source");
}

TEST_F(ProfileProviderTest, AMissingDelegateIsUnavailable) {
  Files("[profile env]\nrole_arn = arn:env\ncredential_source = Environment\n");
  CredentialResult result = RunFetch(*MakeProfileProvider(context_, "env", ProfileDelegates{}));
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().kind, CredentialFailure::kUnavailable);
}

TEST_F(ProfileProviderTest, ErrorsNeverCarryValues) {
  Files("[profile x]\nrole_arn = arn:aws:iam::123:role/Secret\nsource_profile = x\n");
  CredentialResult result = Fetch("x");
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().message.find("Secret"), std::string::npos);
  EXPECT_EQ(result.error().message.find("arn"), std::string::npos);
}

}  // namespace
}  // namespace xb::attach
