// Section 1 of spec/CONF.md: sources, the document, env:NAME indirection, refusing to start;
// and the defaults of section 2.
#include "config/load.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "config/test_support.h"

namespace xb::config {
namespace {

using testing::FakeEnv;
using testing::kMinimal;
using testing::ParseMinimalWith;
using testing::Refused;

constexpr char kSecret[] = "SECRETVALUE123";

// A private temporary directory, removed at the end of the test.
class TempDir {
 public:
  TempDir() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "xb_config_test_XXXXXX").string();
    char* made = mkdtemp(pattern.data());
    EXPECT_NE(made, nullptr);
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  std::string Write(const std::string& name, const std::string& contents) const {
    std::string file = (path_ / name).string();
    std::ofstream(file) << contents;
    return file;
  }
  std::string path() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

// ---- 1.1 Sources -------------------------------------------------------------------------------

TEST(LoadSources, InlineConfigFlagIsTheDocument) {
  Result<Config> config = Load({.inline_text = std::string(kMinimal)}, FakeEnv());
  ASSERT_TRUE(config.ok()) << config.status().message();
  EXPECT_EQ(config->server.identifier, "org.example.xmtp");
}

TEST(LoadSources, XmtpConfigUsedWhenConfigFlagAbsent) {
  Result<Config> config = Load({}, FakeEnv({{"XMTP_CONFIG", std::string(kMinimal)}}));
  ASSERT_TRUE(config.ok()) << config.status().message();
  EXPECT_EQ(config->database.url, "sqlite://./data/xmtp.db");
}

TEST(LoadSources, ConfigFlagTakesPrecedenceOverXmtpConfig) {
  std::string flag_doc =
      "server.identifier = \"from.flag\"\ndatabase.url = \"sqlite://./data/xmtp.db\"\n";
  Result<Config> config =
      Load({.inline_text = flag_doc}, FakeEnv({{"XMTP_CONFIG", "this is not toml ="}}));
  ASSERT_TRUE(config.ok()) << config.status().message();
  EXPECT_EQ(config->server.identifier, "from.flag");
}

TEST(LoadSources, ConfigFileIsRead) {
  TempDir dir;
  std::string path = dir.Write("xmtp.toml", std::string(kMinimal));
  Result<Config> config = Load({.file_path = path}, FakeEnv());
  ASSERT_TRUE(config.ok()) << config.status().message();
  EXPECT_EQ(config->server.identifier, "org.example.xmtp");
}

TEST(LoadSources, NeitherSourceRefused) {
  EXPECT_TRUE(Refused(Load({}, FakeEnv()), "--config-file"));
}

TEST(LoadSources, ConfigTogetherWithConfigFileRefused) {
  TempDir dir;
  std::string path = dir.Write("xmtp.toml", std::string(kMinimal));
  EXPECT_TRUE(Refused(Load({.inline_text = std::string(kMinimal), .file_path = path}, FakeEnv()),
                      "--config/--config-file", {path}));
}

// verifies: CONF section 7 point 8 ([interpretation]: XMTP_CONFIG with --config-file refused)
TEST(LoadSources, XmtpConfigTogetherWithConfigFileRefused) {
  TempDir dir;
  std::string path = dir.Write("xmtp.toml", std::string(kMinimal));
  std::string env_doc = std::string(kMinimal) + "# " + kSecret + "\n";
  EXPECT_TRUE(Refused(Load({.file_path = path}, FakeEnv({{"XMTP_CONFIG", env_doc}})), "XMTP_CONFIG",
                      {kSecret, path}));
}

TEST(LoadSources, InlineTextNamingAFileRefusedWithoutRepeatingIt) {
  TempDir dir;
  std::string path = dir.Write(std::string(kSecret) + ".toml", std::string(kMinimal));
  Result<Config> result = Load({.inline_text = path}, FakeEnv());
  EXPECT_TRUE(Refused(result, "--config", {kSecret}));
  EXPECT_NE(result.status().message().find("--config-file"), std::string::npos);
}

TEST(LoadSources, XmtpConfigNamingADirectoryRefused) {
  TempDir dir;
  std::filesystem::create_directory(dir.path() + "/" + kSecret);
  Result<Config> result = Load({}, FakeEnv({{"XMTP_CONFIG", dir.path() + "/" + kSecret}}));
  EXPECT_TRUE(Refused(result, "XMTP_CONFIG", {kSecret}));
  EXPECT_NE(result.status().message().find("--config-file"), std::string::npos);
}

TEST(LoadSources, UnreadableFileRefused) {
  TempDir dir;
  std::string missing = dir.path() + "/" + kSecret + ".toml";
  Result<Config> result = Load({.file_path = missing}, FakeEnv());
  EXPECT_TRUE(Refused(result, "--config-file", {kSecret}));
  EXPECT_NE(result.status().message().find("could not read configuration file"), std::string::npos);
  // A directory is not readable as a document either.
  EXPECT_TRUE(Refused(Load({.file_path = dir.path()}, FakeEnv()), "could not read"));
}

TEST(LoadSources, FileContentsNeverEchoed) {
  TempDir dir;
  std::string path =
      dir.Write("bad.toml", std::string(kMinimal) + "server.listen = " + kSecret + "\n");
  Result<Config> result = Load({.file_path = path}, FakeEnv());
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().message().find(kSecret), std::string::npos);
  EXPECT_NE(result.status().message().find("line 3"), std::string::npos)
      << result.status().message();
}

TEST(LoadSources, SchemaCommentHasNoEffect) {
  Result<Config> config = Parse(
      "#:schema https://example.com/xmtp-backend.schema.json\n" + std::string(kMinimal), FakeEnv());
  EXPECT_TRUE(config.ok()) << config.status().message();
}

TEST(LoadSources, LogLevelFlagReplacesServerLogLevel) {
  std::string doc = std::string(kMinimal) + "server.log_level = \"warn\"\n";
  Result<Config> config = Load({.inline_text = doc, .log_level = "trace"}, FakeEnv());
  ASSERT_TRUE(config.ok()) << config.status().message();
  EXPECT_EQ(config->server.log_level, LogLevel::kTrace);
  Result<Config> without_flag = Load({.inline_text = doc}, FakeEnv());
  ASSERT_TRUE(without_flag.ok());
  EXPECT_EQ(without_flag->server.log_level, LogLevel::kWarn);
}

TEST(LoadSources, LogLevelFlagValidated) {
  EXPECT_TRUE(Refused(Load({.inline_text = std::string(kMinimal), .log_level = kSecret}, FakeEnv()),
                      "--log-level", {kSecret}));
}

TEST(LoadSources, LogLevelFlagDoesNotExcuseABadDocumentLevel) {
  std::string doc = std::string(kMinimal) + "server.log_level = \"" + kSecret + "\"\n";
  EXPECT_TRUE(Refused(Load({.inline_text = doc, .log_level = "info"}, FakeEnv()),
                      "server.log_level", {kSecret}));
}

TEST(LoadSources, ProcessEnvReadsTheEnvironment) {
  ASSERT_EQ(setenv("XB_CONFIG_TEST_VARIABLE", "value", /*overwrite=*/1), 0);
  EnvLookup env = ProcessEnv();
  EXPECT_EQ(env("XB_CONFIG_TEST_VARIABLE"), "value");
  EXPECT_EQ(env("XB_CONFIG_TEST_VARIABLE_UNSET"), std::nullopt);
  unsetenv("XB_CONFIG_TEST_VARIABLE");
}

// ---- 1.2 The document ---------------------------------------------------------------------------

TEST(LoadDocument, SyntaxErrorReportsLineAndColumnOnly) {
  std::string doc = std::string(kMinimal) + "\nserver.listen = \"" + kSecret + "\n";
  Result<Config> result = Parse(doc, FakeEnv());
  ASSERT_FALSE(result.ok());
  const std::string& message = result.status().message();
  EXPECT_EQ(message.find(kSecret), std::string::npos) << message;
  EXPECT_EQ(message.find("server.listen ="), std::string::npos) << message;
  EXPECT_NE(message.find("line 4"), std::string::npos) << message;
  EXPECT_NE(message.find("column"), std::string::npos) << message;
}

TEST(LoadDocument, InvalidUtf8IsASyntaxError) {
  std::string doc = std::string(kMinimal) + "server.min_libxmtp_version = \"\xff\xfe\"\n";
  Result<Config> result = Parse(doc, FakeEnv());
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().message().find("line 3"), std::string::npos);
}

TEST(LoadDocument, UnknownKeyInSectionNamed) {
  EXPECT_TRUE(Refused(ParseMinimalWith(std::string("server.bogus = \"") + kSecret + "\""),
                      "server.bogus", {kSecret}));
}

TEST(LoadDocument, UnknownTopLevelTableNamed) {
  EXPECT_TRUE(Refused(ParseMinimalWith("[bogus]\nx = 1"), "bogus (unknown key)"));
  // Named before the keys the misspelt section was meant to hold are found missing.
  EXPECT_TRUE(Refused(Parse("[sever]\nidentifier = \"a\"\n", FakeEnv()), "sever (unknown key)"));
}

TEST(LoadDocument, UnknownKeyDeepInsideNamed) {
  EXPECT_TRUE(Refused(ParseMinimalWith("[server.tls]\ncert_file = \"c\"\nkey_file = \"k\"\nx = 1"),
                      "server.tls.x"));
  EXPECT_TRUE(Refused(ParseMinimalWith("[push.apns]\nkey = \"k\"\nkey_id = \"i\"\nteam_id = "
                                       "\"t\"\nbundle_id = \"b\"\nenvironment = \"sandbox\"\nfoo "
                                       "= 1"),
                      "push.apns.foo"));
  EXPECT_TRUE(Refused(ParseMinimalWith("[attachments.target.GCS]\nx = 1"),
                      "attachments.target.GCS (unknown key)"));
  // An unknown key is named before a required key of the same table is missed: a misspelt key
  // is reported as written.
  EXPECT_TRUE(Refused(ParseMinimalWith("[attachments]\nbase_ur = \"https://f.example.com\""),
                      "attachments.base_ur (unknown key)"));
  EXPECT_TRUE(
      Refused(ParseMinimalWith("[limits]\nmax_query_limitt = 5"), "limits.max_query_limitt"));
}

TEST(LoadDocument, UnknownKeyInArrayOfTablesNamedWithIndex) {
  std::string doc =
      "[auth]\nenabled = true\n"
      "[[auth.keys]]\nkid = \"a\"\nalg = \"EdDSA\"\npublic_key = \"x\"\nfoo = 1\n";
  EXPECT_TRUE(Refused(ParseMinimalWith(doc), "auth.keys[0].foo"));
}

// verifies: CONF section 2.15 (application_components is an unknown key)
TEST(LoadDocument, ApplicationComponentsRefused) {
  EXPECT_TRUE(Refused(ParseMinimalWith("[[application_components]]\nname = \"x\""),
                      "application_components"));
}

TEST(LoadDocument, QuotedUnknownKeyNamedQuoted) {
  EXPECT_TRUE(Refused(ParseMinimalWith("\"odd key\" = 1"), "\"odd key\""));
}

TEST(LoadDocument, WrongTypeNamesTheKey) {
  EXPECT_TRUE(Refused(ParseMinimalWith("server.listen = 5050"), "server.listen"));
  EXPECT_TRUE(Refused(ParseMinimalWith(std::string("server.request_logger = \"") + kSecret + "\""),
                      "server.request_logger", {kSecret}));
  EXPECT_TRUE(
      Refused(ParseMinimalWith("[limits]\nmax_query_limit = 10.0"), "limits.max_query_limit"));
  EXPECT_TRUE(
      Refused(ParseMinimalWith(std::string("[limits]\nmax_query_limit = \"") + kSecret + "\""),
              "limits.max_query_limit", {kSecret}));
  EXPECT_TRUE(Refused(ParseMinimalWith("[streams]\npoll_interval_ms = 1979-05-27"),
                      "streams.poll_interval_ms"));
  EXPECT_TRUE(
      Refused(ParseMinimalWith("[telemetry]\nsample_ratio = true"), "telemetry.sample_ratio"));
  EXPECT_TRUE(Refused(ParseMinimalWith("[telemetry]\nresource_attributes = { a = 1 }"),
                      "telemetry.resource_attributes.a"));
  EXPECT_TRUE(Refused(ParseMinimalWith("[chains]\n\"eip155:1\" = 5"), "chains.\"eip155:1\""));
  EXPECT_TRUE(Refused(Parse("server = 5\ndatabase.url = \"sqlite://x\"\n", FakeEnv()), "server"));
  EXPECT_TRUE(Refused(ParseMinimalWith("[auth]\nenabled = true\naudiences = [\"a\", 2]"),
                      "auth.audiences[1]"));
  EXPECT_TRUE(Refused(ParseMinimalWith("[auth]\nenabled = true\nkeys = [1]"), "auth.keys[0]"));
}

TEST(LoadDocument, SampleRatioTakesAnInteger) {
  Result<Config> config = ParseMinimalWith("[telemetry]\nsample_ratio = 0");
  ASSERT_TRUE(config.ok()) << config.status().message();
  EXPECT_EQ(config->telemetry.sample_ratio, 0.0);
}

TEST(LoadDocument, NegativeIntegerIsOutOfRange) {
  Result<Config> result = ParseMinimalWith("database.max_connections = -987654321987");
  EXPECT_TRUE(Refused(result, "database.max_connections", {"987654321987"}));
  EXPECT_NE(result.status().message().find("out of range"), std::string::npos);
  EXPECT_TRUE(Refused(ParseMinimalWith("[attachments]\nretention_seconds = -1"),
                      "attachments.retention_seconds"));
}

TEST(LoadDocument, IntegerAboveTheFieldTypeIsOutOfRange) {
  EXPECT_TRUE(Refused(ParseMinimalWith("[limits]\nmax_query_topics = 4294967296"),
                      "limits.max_query_topics", {"4294967296"}));
  EXPECT_TRUE(Refused(ParseMinimalWith("[mls]\nmax_group_members = 9999999999"),
                      "mls.max_group_members", {"9999999999"}));
}

// verifies: CONF-002 (absent)
TEST(LoadDocument, IdentifierRequired) {
  EXPECT_TRUE(Refused(Parse("database.url = \"sqlite://x.db\"\n", FakeEnv()), "server.identifier"));
}

TEST(LoadDocument, DatabaseUrlRequired) {
  EXPECT_TRUE(Refused(Parse("server.identifier = \"a\"\n", FakeEnv()), "database.url"));
}

// verifies: CONF-005
TEST(LoadDocument, AuthTableWithoutEnabledRefused) {
  EXPECT_TRUE(Refused(ParseMinimalWith("[auth]\njwks_url = \"https://example.com/jwks\""),
                      "auth.enabled", {"example.com"}));
  EXPECT_TRUE(Refused(ParseMinimalWith("[auth]\n"), "auth.enabled"));
}

TEST(LoadDocument, EnumeratedStringsValidated) {
  EXPECT_TRUE(Refused(ParseMinimalWith(std::string("server.log_level = \"") + kSecret + "\""),
                      "server.log_level", {kSecret}));
  EXPECT_TRUE(Refused(ParseMinimalWith(std::string("server.log_format = \"") + kSecret + "\""),
                      "server.log_format", {kSecret}));
  for (const auto& [name, level] : std::map<std::string, LogLevel>{{"off", LogLevel::kOff},
                                                                   {"error", LogLevel::kError},
                                                                   {"warn", LogLevel::kWarn},
                                                                   {"info", LogLevel::kInfo},
                                                                   {"debug", LogLevel::kDebug},
                                                                   {"trace", LogLevel::kTrace}}) {
    Result<Config> config = ParseMinimalWith("server.log_level = \"" + name + "\"");
    ASSERT_TRUE(config.ok()) << name;
    EXPECT_EQ(config->server.log_level, level);
  }
  Result<Config> json = ParseMinimalWith("server.log_format = \"json\"");
  ASSERT_TRUE(json.ok());
  EXPECT_EQ(json->server.log_format, LogFormat::kJson);
}

// Every default of section 2 from the smallest document, a few sections per test.
class LoadMinimalDocument : public ::testing::Test {
 protected:
  void SetUp() override {
    Result<Config> loaded = Parse(std::string(kMinimal), FakeEnv());
    ASSERT_TRUE(loaded.ok()) << loaded.status().message();
    config_ = *std::move(loaded);
  }

  Config config_;
};

TEST_F(LoadMinimalDocument, GivesServerDefaults) {
  const Config& c = config_;
  EXPECT_EQ(c.server.identifier, "org.example.xmtp");
  EXPECT_FALSE(c.server.min_libxmtp_version.has_value());
  EXPECT_EQ(c.server.listen, "0.0.0.0:5050");
  EXPECT_EQ(c.server.log_level, LogLevel::kInfo);
  EXPECT_EQ(c.server.log_format, LogFormat::kText);
  EXPECT_TRUE(c.server.request_logger);
  EXPECT_EQ(c.server.max_drain_duration_ms, 10000u);
  EXPECT_FALSE(c.server.tls.has_value());
  EXPECT_EQ(c.server.max_connections, 10000u);
  EXPECT_EQ(c.server.handshake_timeout_ms, 10000u);
  EXPECT_EQ(c.server.header_read_timeout_ms, 10000u);
  EXPECT_EQ(c.server.idle_timeout_ms, 900000u);
}

TEST_F(LoadMinimalDocument, GivesTelemetryDatabaseStreamsAndRetentionDefaults) {
  const Config& c = config_;
  EXPECT_EQ(c.telemetry.metrics_listen, "0.0.0.0:9464");
  EXPECT_FALSE(c.telemetry.otlp_endpoint.has_value());
  EXPECT_FALSE(c.telemetry.otlp_logs);
  EXPECT_EQ(c.telemetry.service_name, "xmtp-backend");
  EXPECT_EQ(c.telemetry.sample_ratio, 1.0);
  EXPECT_TRUE(c.telemetry.resource_attributes.empty());

  EXPECT_EQ(c.database.url, "sqlite://./data/xmtp.db");
  EXPECT_FALSE(c.database.replica_url.has_value());
  EXPECT_EQ(c.database.max_connections, 20u);
  EXPECT_EQ(c.database.max_statement_timeout_ms, 5000u);

  EXPECT_EQ(c.publishing.max_publish_duration_ms, 10000u);
  EXPECT_EQ(c.publishing.max_barrier_wait_ms, 1000u);

  EXPECT_EQ(c.streams.poll_interval, std::chrono::milliseconds(100));
  EXPECT_EQ(c.streams.max_gap_ranges, 10000u);
  EXPECT_EQ(c.streams.keepalive_interval_ms, 30000u);
  EXPECT_EQ(c.streams.max_pong_wait_ms, 90000u);

  EXPECT_EQ(c.retention.group_message_seconds, 7776000u);
  EXPECT_EQ(c.retention.welcome_seconds, 7776000u);
  EXPECT_EQ(c.retention.key_package_seconds, 7776000u);
}

TEST_F(LoadMinimalDocument, GivesAuthChainsAndValidationDefaults) {
  const Config& c = config_;
  EXPECT_FALSE(c.auth.enabled);
  EXPECT_FALSE(c.auth.jwks_url.has_value());
  EXPECT_TRUE(c.auth.keys.empty());
  EXPECT_TRUE(c.auth.api_keys.empty());
  EXPECT_FALSE(c.auth.audiences.has_value());
  EXPECT_FALSE(c.auth.issuers.has_value());
  EXPECT_TRUE(c.auth.required_scopes.empty());
  EXPECT_EQ(c.auth.leeway_seconds, 60u);
  EXPECT_EQ(c.auth.jwks_refresh_seconds, 300u);
  EXPECT_EQ(c.auth.jwks_max_stale_seconds, 3600u);

  EXPECT_TRUE(c.chains.empty());
  EXPECT_EQ(c.validation.max_scw_cache_entries, 10000u);
}

TEST_F(LoadMinimalDocument, GivesLimitsDefaults) {
  const Config& c = config_;
  EXPECT_EQ(c.limits.max_envelope_bytes, 1048576u);
  EXPECT_EQ(c.limits.max_request_bytes, 26214400u);
  EXPECT_EQ(c.limits.max_response_bytes, 26214400u);
  EXPECT_EQ(c.limits.max_publish_topics, 1000u);
  EXPECT_EQ(c.limits.max_query_topics, 1000u);
  EXPECT_EQ(c.limits.max_query_limit, 1000u);
  EXPECT_EQ(c.limits.default_query_limit, 100u);
  EXPECT_EQ(c.limits.max_newest_metadata_topics, 1000u);
  EXPECT_EQ(c.limits.max_newest_full_topics, 100u);
  EXPECT_EQ(c.limits.max_update_adds, 100000u);
  EXPECT_EQ(c.limits.max_update_removes, 100000u);
  EXPECT_EQ(c.limits.max_stream_topics, 100000u);
  EXPECT_EQ(c.limits.max_static_topics, 10000u);
  EXPECT_EQ(c.limits.max_lookup_identifiers, 250u);
  EXPECT_EQ(c.limits.max_scw_signatures, 100u);
  EXPECT_EQ(c.limits.max_identity_entries, 256u);
  EXPECT_EQ(c.limits.max_update_frames_per_second, 10u);
  EXPECT_EQ(c.limits.max_update_burst, 100u);
  EXPECT_EQ(c.limits.max_ping_frames_per_second, 10u);
  EXPECT_EQ(c.limits.max_ping_burst, 100u);
  EXPECT_EQ(c.limits.max_http2_streams, 100u);
  EXPECT_EQ(c.limits.max_push_topics, 100000u);
  EXPECT_EQ(c.limits.max_header_list_bytes, 32768u);
  EXPECT_EQ(c.limits.max_control_frames_per_second, 100u);
  EXPECT_EQ(c.limits.max_control_frame_burst, 1000u);
}

TEST_F(LoadMinimalDocument, GivesMlsDefaultsAndNoOptionalSections) {
  const Config& c = config_;
  EXPECT_EQ(c.mls.max_group_members, 250u);
  EXPECT_EQ(c.mls.max_installations_per_inbox, 10u);
  EXPECT_TRUE(c.mls.commit_log_enabled);

  EXPECT_FALSE(c.push.has_value());
  EXPECT_FALSE(c.attachments.has_value());
}

TEST(LoadDocument, OptionalSectionsTakeTheirDefaultsWhenPresent) {
  Result<Config> loaded = ParseMinimalWith("[push]\n[push.http]\n");
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  ASSERT_TRUE(loaded->push.has_value());
  EXPECT_EQ(loaded->push->recipient_ttl_seconds, 2592000u);
  EXPECT_EQ(loaded->push->max_attempts, 3u);
  EXPECT_FALSE(loaded->push->apns.has_value());
  EXPECT_FALSE(loaded->push->fcm.has_value());
  ASSERT_TRUE(loaded->push->http.has_value());
  EXPECT_FALSE(loaded->push->http->allowed_domains.has_value());
  EXPECT_FALSE(loaded->push->http->allow_private_addresses);

  Result<Config> empty_push = ParseMinimalWith("[push]\n");
  ASSERT_TRUE(empty_push.ok());
  ASSERT_TRUE(empty_push->push.has_value());
  EXPECT_FALSE(empty_push->push->http.has_value());
}

// The document of EveryKeyIsRead: a value for each key it checks.
constexpr char kEveryKey[] = R"(
[server]
identifier = "org.example.xmtp"
min_libxmtp_version = "1.2.3-rc.1+build.5"
listen = "[::1]:0"
log_level = "debug"
log_format = "json"
request_logger = false
max_drain_duration_ms = 2000
max_connections = 3
handshake_timeout_ms = 4
header_read_timeout_ms = 5
idle_timeout_ms = 6
[server.tls]
cert_file = "/etc/xmtp/tls.crt"
key_file = "/etc/xmtp/tls.key"
[telemetry]
metrics_listen = ""
otlp_endpoint = "http://collector:4317"
otlp_logs = true
service_name = "svc"
sample_ratio = 0.25
resource_attributes = { "deployment.environment" = "prod" }
[database]
url = "postgresql://xmtp@db.internal:5432/xmtp?sslmode=require"
replica_url = "postgres://replica.internal/xmtp"
max_connections = 7
max_statement_timeout_ms = 4000
[publishing]
max_publish_duration_ms = 4001
max_barrier_wait_ms = 50
[streams]
poll_interval_ms = 20
max_gap_ranges = 5
keepalive_interval_ms = 1000
max_pong_wait_ms = 3000
[retention]
group_message_seconds = 1
welcome_seconds = 2
key_package_seconds = 3
[chains]
"eip155:1" = "https://rpc.example.com/mainnet"
"eip155:8453" = "http://localhost:8545"
[validation]
max_scw_cache_entries = 9
[limits]
max_envelope_bytes = 1000
max_request_bytes = 2000
max_response_bytes = 3000
max_publish_topics = 4
max_query_topics = 5
max_query_limit = 60
default_query_limit = 6
max_newest_metadata_topics = 7
max_newest_full_topics = 8
max_update_adds = 9
max_update_removes = 10
max_stream_topics = 11
max_static_topics = 12
max_lookup_identifiers = 13
max_scw_signatures = 14
max_identity_entries = 15
max_update_frames_per_second = 16
max_update_burst = 17
max_ping_frames_per_second = 18
max_ping_burst = 19
max_http2_streams = 20
max_push_topics = 21
max_header_list_bytes = 2048
max_control_frames_per_second = 22
max_control_frame_burst = 23
[mls]
max_group_members = 65535
max_installations_per_inbox = 1
commit_log_enabled = false
[push]
recipient_ttl_seconds = 86400
max_attempts = 10
[push.http]
allowed_domains = ["hooks.example.com", "*.example.org"]
allow_private_addresses = true
)";

TEST(LoadDocument, EveryKeyIsRead) {
  Result<Config> loaded = Parse(std::string(kEveryKey), FakeEnv());
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  const Config& c = *loaded;
  EXPECT_EQ(c.server.min_libxmtp_version, "1.2.3-rc.1+build.5");
  EXPECT_EQ(c.server.listen, "[::1]:0");
  EXPECT_EQ(c.server.log_level, LogLevel::kDebug);
  EXPECT_EQ(c.server.log_format, LogFormat::kJson);
  EXPECT_FALSE(c.server.request_logger);
  EXPECT_EQ(c.server.max_drain_duration_ms, 2000u);
  EXPECT_EQ(c.server.max_connections, 3u);
  EXPECT_EQ(c.server.handshake_timeout_ms, 4u);
  EXPECT_EQ(c.server.header_read_timeout_ms, 5u);
  EXPECT_EQ(c.server.idle_timeout_ms, 6u);
  ASSERT_TRUE(c.server.tls.has_value());
  EXPECT_EQ(c.server.tls->cert_file, "/etc/xmtp/tls.crt");
  EXPECT_EQ(c.server.tls->key_file, "/etc/xmtp/tls.key");
  EXPECT_EQ(c.telemetry.metrics_listen, "");
  EXPECT_EQ(c.telemetry.otlp_endpoint, "http://collector:4317");
  EXPECT_TRUE(c.telemetry.otlp_logs);
  EXPECT_EQ(c.telemetry.service_name, "svc");
  EXPECT_EQ(c.telemetry.sample_ratio, 0.25);
  EXPECT_EQ(c.telemetry.resource_attributes.at("deployment.environment"), "prod");
  EXPECT_EQ(c.database.replica_url, "postgres://replica.internal/xmtp");
  EXPECT_EQ(c.database.max_connections, 7u);
  EXPECT_EQ(c.database.max_statement_timeout_ms, 4000u);
  EXPECT_EQ(c.publishing.max_publish_duration_ms, 4001u);
  EXPECT_EQ(c.publishing.max_barrier_wait_ms, 50u);
  EXPECT_EQ(c.streams.poll_interval, std::chrono::milliseconds(20));
  EXPECT_EQ(c.streams.max_gap_ranges, 5u);
  EXPECT_EQ(c.streams.keepalive_interval_ms, 1000u);
  EXPECT_EQ(c.streams.max_pong_wait_ms, 3000u);
  EXPECT_EQ(c.retention.group_message_seconds, 1u);
  EXPECT_EQ(c.retention.welcome_seconds, 2u);
  EXPECT_EQ(c.retention.key_package_seconds, 3u);
  EXPECT_EQ(c.chains.size(), 2u);
  EXPECT_EQ(c.chains.at("eip155:8453"), "http://localhost:8545");
  EXPECT_EQ(c.validation.max_scw_cache_entries, 9u);
  EXPECT_EQ(c.limits.max_envelope_bytes, 1000u);
  EXPECT_EQ(c.limits.max_request_bytes, 2000u);
  EXPECT_EQ(c.limits.max_response_bytes, 3000u);
  EXPECT_EQ(c.limits.max_publish_topics, 4u);
  EXPECT_EQ(c.limits.max_query_topics, 5u);
  EXPECT_EQ(c.limits.max_query_limit, 60u);
  EXPECT_EQ(c.limits.default_query_limit, 6u);
  EXPECT_EQ(c.limits.max_newest_metadata_topics, 7u);
  EXPECT_EQ(c.limits.max_newest_full_topics, 8u);
  EXPECT_EQ(c.limits.max_update_adds, 9u);
  EXPECT_EQ(c.limits.max_update_removes, 10u);
  EXPECT_EQ(c.limits.max_stream_topics, 11u);
  EXPECT_EQ(c.limits.max_static_topics, 12u);
  EXPECT_EQ(c.limits.max_lookup_identifiers, 13u);
  EXPECT_EQ(c.limits.max_scw_signatures, 14u);
  EXPECT_EQ(c.limits.max_identity_entries, 15u);
  EXPECT_EQ(c.limits.max_update_frames_per_second, 16u);
  EXPECT_EQ(c.limits.max_update_burst, 17u);
  EXPECT_EQ(c.limits.max_ping_frames_per_second, 18u);
  EXPECT_EQ(c.limits.max_ping_burst, 19u);
  EXPECT_EQ(c.limits.max_http2_streams, 20u);
  EXPECT_EQ(c.limits.max_push_topics, 21u);
  EXPECT_EQ(c.limits.max_header_list_bytes, 2048u);
  EXPECT_EQ(c.limits.max_control_frames_per_second, 22u);
  EXPECT_EQ(c.limits.max_control_frame_burst, 23u);
  EXPECT_EQ(c.mls.max_group_members, 65535u);
  EXPECT_EQ(c.mls.max_installations_per_inbox, 1u);
  EXPECT_FALSE(c.mls.commit_log_enabled);
  ASSERT_TRUE(c.push.has_value());
  EXPECT_EQ(c.push->recipient_ttl_seconds, 86400u);
  EXPECT_EQ(c.push->max_attempts, 10u);
  ASSERT_TRUE(c.push->http.has_value());
  EXPECT_EQ(c.push->http->allowed_domains->size(), 2u);
  EXPECT_TRUE(c.push->http->allow_private_addresses);
}

// ---- 1.3 env:NAME -------------------------------------------------------------------------------

TEST(LoadEnv, EveryStringValueIsResolved) {
  const std::string doc = R"(
[server]
identifier = "env:ID"
log_level = "env:LEVEL"
[database]
url = "env:DB"
[telemetry]
resource_attributes = { team = "env:TEAM" }
[auth]
enabled = true
audiences = ["plain", "env:AUD"]
[auth.api_keys]
worker = "env:WORKER_KEY"
)";
  Result<Config> loaded = Parse(doc, FakeEnv({{"ID", "org.from.env"},
                                              {"LEVEL", "debug"},
                                              {"DB", "postgres://db.internal/xmtp"},
                                              {"TEAM", "payments"},
                                              {"AUD", "xmtp"},
                                              {"WORKER_KEY", std::string(40, 'k')}}));
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  EXPECT_EQ(loaded->server.identifier, "org.from.env");
  EXPECT_EQ(loaded->server.log_level, LogLevel::kDebug);
  EXPECT_EQ(loaded->database.url, "postgres://db.internal/xmtp");
  EXPECT_EQ(loaded->telemetry.resource_attributes.at("team"), "payments");
  EXPECT_EQ(*loaded->auth.audiences, (std::vector<std::string>{"plain", "xmtp"}));
  EXPECT_EQ(loaded->auth.api_keys.at("worker"), std::string(40, 'k'));
}

TEST(LoadEnv, ArrayOfTablesElementsResolved) {
  std::string doc = std::string(kMinimal) +
                    "[attachments]\nbase_url = \"env:BASE\"\n"
                    "[attachments.target.S3]\nendpoint = \"https://s3.example.com\"\n"
                    "region = \"us-east-1\"\nbucket = \"b\"\n"
                    "credentials = { kind = \"static\", access_key_id = \"env:AK\", "
                    "secret_access_key = \"env:SK\" }\n";
  Result<Config> loaded = Parse(
      doc,
      FakeEnv({{"BASE", "https://files.example.com"}, {"AK", "AKIDEXAMPLE"}, {"SK", kSecret}}));
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  EXPECT_EQ(loaded->attachments->base_url, "https://files.example.com");
  EXPECT_EQ(loaded->attachments->s3.credentials.fields.at("secret_access_key"), kSecret);
}

TEST(LoadEnv, MissingVariableNamesTheVariable) {
  Result<Config> result = ParseMinimalWith("[telemetry]\nservice_name = \"env:XB_UNSET_VAR\"");
  EXPECT_TRUE(Refused(result, "environment variable XB_UNSET_VAR is not available"));
  EXPECT_TRUE(Refused(result, "telemetry.service_name"));
}

TEST(LoadEnv, EmptyNameRefused) {
  EXPECT_TRUE(
      Refused(ParseMinimalWith("[telemetry]\nservice_name = \"env:\""), "telemetry.service_name"));
}

TEST(LoadEnv, NameNoEnvironmentCanHoldRefusedWithoutEcho) {
  EXPECT_TRUE(Refused(
      ParseMinimalWith(std::string("[telemetry]\nservice_name = \"env:A=") + kSecret + "\""),
      "telemetry.service_name", {kSecret}));
}

TEST(LoadEnv, NoRecursion) {
  Result<Config> loaded =
      ParseMinimalWith("[telemetry]\nservice_name = \"env:SVC\"", FakeEnv({{"SVC", "env:OTHER"}}));
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  EXPECT_EQ(loaded->telemetry.service_name, "env:OTHER");
}

TEST(LoadEnv, TableKeysNeverResolved) {
  Result<Config> loaded = ParseMinimalWith(
      "[telemetry]\nresource_attributes = { \"env:KEY\" = \"v\" }", FakeEnv({{"KEY", "resolved"}}));
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  EXPECT_EQ(loaded->telemetry.resource_attributes.count("env:KEY"), 1u);
  // A chain id is a key too: "env:X" stays as written and fails the CAIP-2 check.
  EXPECT_TRUE(Refused(ParseMinimalWith("[chains]\n\"env:X\" = \"https://rpc.example.com\"",
                                       FakeEnv({{"X", "eip155:1"}})),
                      "chains.\"env:X\""));
}

TEST(LoadEnv, NumericKeyCannotComeFromTheEnvironment) {
  EXPECT_TRUE(
      Refused(ParseMinimalWith("database.max_connections = \"env:N\"", FakeEnv({{"N", "5"}})),
              "database.max_connections"));
}

TEST(LoadEnv, ResolvedEvenInADisabledAuthTable) {
  EXPECT_TRUE(Refused(
      ParseMinimalWith("[auth]\nenabled = false\n[auth.api_keys]\nworker = \"env:XB_NOPE\""),
      "environment variable XB_NOPE is not available"));
}

TEST(LoadEnv, ResolvedValueNeverInAnError) {
  Result<Config> result = Parse("server.identifier = \"a\"\ndatabase.url = \"env:DB\"\n",
                                FakeEnv({{"DB", std::string("mysql://") + kSecret}}));
  EXPECT_TRUE(Refused(result, "database.url", {kSecret, "mysql"}));
}

// verifies: CONF 1.3 ([unconfirmed]: a value that is not valid Unicode counts as missing)
TEST(LoadEnv, InvalidUtf8ValueCountsAsMissing) {
  EXPECT_TRUE(Refused(
      ParseMinimalWith("[telemetry]\nservice_name = \"env:BAD\"", FakeEnv({{"BAD", "a\xff"}})),
      "environment variable BAD is not available"));
}

}  // namespace
}  // namespace xb::config
