// The shared config and credentials files reader (shared_config.h).
#include "attach/shared_config.h"

#include <gtest/gtest.h>

#include <map>

#include "attach/testing/run_fetch.h"
#include "attach/testing/temp_dir.h"

namespace xb::attach {
namespace {

SharedConfig Parse(std::string_view config, std::string_view credentials = "") {
  SharedConfig out;
  ParseSharedFile(config, SharedFileKind::kConfig, out);
  ParseSharedFile(credentials, SharedFileKind::kCredentials, out);
  return out;
}

// verifies: ATCH-073 (profile: the config file's sections)
TEST(SharedConfig, ConfigFileSections) {
  const SharedConfig config = Parse(
      "[default]\n"
      "region = us-east-1\n"
      "[profile dev]\n"
      "aws_access_key_id=AKID\n"
      "[profile  spaced  ]\n"
      "region: eu-west-1\n"
      "[sso-session corp]\n"
      "sso_start_url = https://corp.awsapps.com/start\n"
      "[plain]\n"
      "ignored = yes\n"
      "[profile]\n"
      "ignored = yes\n");
  ASSERT_EQ(config.profiles.size(), 3u);
  EXPECT_EQ(config.profiles.at("default").at("region"), "us-east-1");
  EXPECT_EQ(config.profiles.at("dev").at("aws_access_key_id"), "AKID");
  EXPECT_EQ(config.profiles.at("spaced").at("region"), "eu-west-1");
  ASSERT_EQ(config.sso_sessions.size(), 1u);
  EXPECT_EQ(config.sso_sessions.at("corp").at("sso_start_url"), "https://corp.awsapps.com/start");
}

TEST(SharedConfig, ProfileDefaultIsTheDefaultProfile) {
  const SharedConfig config = Parse("[profile default]\nregion = r1\n");
  EXPECT_EQ(config.profiles.at("default").at("region"), "r1");
}

// verifies: ATCH-073 (profile: credentials file sections are bare names)
TEST(SharedConfig, CredentialsFileSectionsAreBareNames) {
  const SharedConfig config =
      Parse("", "[default]\naws_access_key_id = A\n[dev]\naws_access_key_id = B\n");
  EXPECT_EQ(config.profiles.at("default").at("aws_access_key_id"), "A");
  EXPECT_EQ(config.profiles.at("dev").at("aws_access_key_id"), "B");
}

TEST(SharedConfig, CommentsKeysAndValues) {
  const SharedConfig config = Parse(
      "# a comment\n"
      "; another\n"
      "[profile dev]\r\n"
      "  # an indented comment\n"
      "AWS_Access_Key_ID = AKID\r\n"
      "credential_process = /bin/tool --flag # kept\n"
      "empty =\n"
      "novalue\n"
      "= nokey\n");
  const ConfigSection& dev = config.profiles.at("dev");
  EXPECT_EQ(dev.at("aws_access_key_id"), "AKID");
  EXPECT_EQ(dev.at("credential_process"), "/bin/tool --flag # kept");
  EXPECT_EQ(dev.at("empty"), "");
  EXPECT_EQ(dev.size(), 3u);
}

TEST(SharedConfig, NestedSubSectionsAreSkipped) {
  const SharedConfig config = Parse(
      "[profile dev]\n"
      "s3 =\n"
      "  max_concurrent_requests = 10\n"
      "  aws_access_key_id = NESTED\n"
      "region = us-west-2\n"
      "  [profile indented]\n"
      "aws_secret_access_key = S\n");
  const ConfigSection& dev = config.profiles.at("dev");
  EXPECT_EQ(dev.at("s3"), "");
  EXPECT_EQ(dev.count("aws_access_key_id"), 0u);
  EXPECT_EQ(dev.count("max_concurrent_requests"), 0u);
  EXPECT_EQ(dev.at("region"), "us-west-2");
  EXPECT_EQ(dev.at("aws_secret_access_key"), "S");
  EXPECT_EQ(config.profiles.count("indented"), 0u);
}

TEST(SharedConfig, LaterValuesAndRepeatedSectionsOverride) {
  const SharedConfig config =
      Parse("[profile dev]\nregion = a\nregion = b\n[profile dev]\nregion = c\noutput = json\n");
  EXPECT_EQ(config.profiles.at("dev").at("region"), "c");
  EXPECT_EQ(config.profiles.at("dev").at("output"), "json");
}

// verifies: ATCH-073 (profile: credentials-file values win over config-file values)
TEST(SharedConfig, CredentialsFileWinsWhateverTheOrder) {
  const std::string config = "[profile dev]\naws_access_key_id = FROM_CONFIG\nregion = r\n";
  const std::string credentials = "[dev]\naws_access_key_id = FROM_CREDENTIALS\n";
  for (bool credentials_first : {false, true}) {
    SharedConfig out;
    if (credentials_first) {
      ParseSharedFile(credentials, SharedFileKind::kCredentials, out);
      ParseSharedFile(config, SharedFileKind::kConfig, out);
    } else {
      ParseSharedFile(config, SharedFileKind::kConfig, out);
      ParseSharedFile(credentials, SharedFileKind::kCredentials, out);
    }
    EXPECT_EQ(out.profiles.at("dev").at("aws_access_key_id"), "FROM_CREDENTIALS");
    EXPECT_EQ(out.profiles.at("dev").at("region"), "r");
  }
}

TEST(SharedConfig, LocatesTheFilesFromTheEnvironmentOrHome) {
  std::map<std::string, std::string> env{{"HOME", "/home/op"}};
  SharedConfigPaths paths = LocateSharedConfig(testing::MapEnvironment(&env));
  EXPECT_EQ(paths.config, "/home/op/.aws/config");
  EXPECT_EQ(paths.credentials, "/home/op/.aws/credentials");

  env["AWS_CONFIG_FILE"] = "/etc/aws/config";
  env["AWS_SHARED_CREDENTIALS_FILE"] = "~/creds";
  paths = LocateSharedConfig(testing::MapEnvironment(&env));
  EXPECT_EQ(paths.config, "/etc/aws/config");
  EXPECT_EQ(paths.credentials, "/home/op/creds");

  env.erase("HOME");
  paths = LocateSharedConfig(testing::MapEnvironment(&env));
  EXPECT_EQ(paths.config, "/etc/aws/config");
  EXPECT_EQ(paths.credentials, "");
}

// verifies: ATCH-073 (profile: missing files are empty)
TEST(SharedConfig, MissingFilesAreEmptyAndUnreadableOnesUnavailable) {
  testing::TempDir dir;
  const std::string file = dir.Write("config", "[default]\nregion = r\n");
  Expected<std::string, CredentialError> read = ReadSharedFile(file);
  ASSERT_TRUE(read.ok());
  EXPECT_EQ(*read, "[default]\nregion = r\n");
  for (const std::string& missing :
       {dir.path() + "/absent", dir.path() + "/absent/config", std::string()}) {
    Expected<std::string, CredentialError> empty = ReadSharedFile(missing);
    ASSERT_TRUE(empty.ok()) << missing;
    EXPECT_EQ(*empty, "");
  }
  Expected<std::string, CredentialError> directory = ReadSharedFile(dir.path());
  ASSERT_FALSE(directory.ok());
  EXPECT_EQ(directory.error().kind, CredentialFailure::kUnavailable);
  const std::string huge = dir.Write("huge", std::string(2 * 1024 * 1024, '#'));
  EXPECT_FALSE(ReadSharedFile(huge).ok());
}

}  // namespace
}  // namespace xb::attach
