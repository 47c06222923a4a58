// docs/config.example.toml must load, and must mention every key of spec/CONF.md section 2.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "config/load.h"
#include "config/test_keys.h"
#include "config/test_support.h"

namespace xb::config {
namespace {

using testing::FakeEnv;
using testing::Pems;
using testing::TestKey;

std::string ReadExample() {
  std::ifstream in(XB_CONFIG_EXAMPLE_PATH);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string ServiceAccountJson() {
  std::string key;
  for (char c : Pems(TestKey::kRsa).pkcs8_pem) {
    key += c == '\n' ? std::string("\\n") : std::string(1, c);
  }
  return "{\"type\": \"service_account\", \"project_id\": \"example-project\", \"private_key\": "
         "\"" +
         key +
         "\", \"client_email\": \"push@example-project.iam.gserviceaccount.com\", "
         "\"token_uri\": \"https://oauth2.googleapis.com/token\"}";
}

// The variables the example names with env:.
EnvLookup ExampleEnv() {
  return FakeEnv({{"XMTP_WORKER_API_KEY", std::string(48, 'w')},
                  {"XMTP_RPC_MAINNET", "https://eth-mainnet.example.com/v2/key"},
                  {"XMTP_APNS_KEY", Pems(TestKey::kEcP256).pkcs8_pem},
                  {"XMTP_FCM_SERVICE_ACCOUNT", ServiceAccountJson()},
                  {"XMTP_S3_ACCESS_KEY_ID", "AKIAEXAMPLE"},
                  {"XMTP_S3_SECRET_ACCESS_KEY", "example-secret"}});
}

TEST(ConfigExample, Loads) {
  std::string text = ReadExample();
  ASSERT_FALSE(text.empty()) << "cannot read " << XB_CONFIG_EXAMPLE_PATH;
  Result<Config> loaded = Parse(text, ExampleEnv());
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  EXPECT_EQ(loaded->server.identifier, "org.example.xmtp");
  EXPECT_EQ(loaded->database.url, "sqlite://./data/xmtp.db");
  EXPECT_TRUE(loaded->auth.enabled);
  EXPECT_EQ(loaded->auth.api_keys.at("worker"), std::string(48, 'w'));
  EXPECT_EQ(loaded->chains.size(), 2u);
  ASSERT_TRUE(loaded->push.has_value());
  EXPECT_TRUE(loaded->push->apns.has_value());
  EXPECT_TRUE(loaded->push->fcm.has_value());
  EXPECT_TRUE(loaded->push->http.has_value());
  ASSERT_TRUE(loaded->attachments.has_value());
  EXPECT_EQ(loaded->attachments->s3.credentials.kind, "static");
}

TEST(ConfigExample, LoadsThroughConfigFile) {
  Result<Config> loaded = Load({.file_path = XB_CONFIG_EXAMPLE_PATH}, ExampleEnv());
  EXPECT_TRUE(loaded.ok()) << loaded.status().message();
}

TEST(ConfigExample, MissingVariableIsNamed) {
  Result<Config> loaded = Parse(ReadExample(), FakeEnv());
  ASSERT_FALSE(loaded.ok());
  EXPECT_NE(loaded.status().message().find("environment variable XMTP_"), std::string::npos)
      << loaded.status().message();
}

// The keys of section 2 (and [server.tls]) and the tables among them, as the example writes them.
constexpr const char* kSectionTwoKeys[] = {
    "identifier",
    "min_libxmtp_version",
    "listen",
    "log_level",
    "log_format",
    "request_logger",
    "max_drain_duration_ms",
    "stalled_write_timeout_ms",
    "max_connections",
    "handshake_timeout_ms",
    "header_read_timeout_ms",
    "idle_timeout_ms",
    "[server.tls]",
    "cert_file",
    "key_file",
    "metrics_listen",
    "otlp_endpoint",
    "otlp_logs",
    "service_name",
    "sample_ratio",
    "[telemetry.resource_attributes]",
    "url",
    "replica_url",
    "max_connections",
    "max_statement_timeout_ms",
    "max_publish_duration_ms",
    "max_barrier_wait_ms",
    "poll_interval_ms",
    "max_gap_ranges",
    "keepalive_interval_ms",
    "max_pong_wait_ms",
    "group_message_seconds",
    "welcome_seconds",
    "key_package_seconds",
    "prune",
    "prune_interval_seconds",
    "prune_batch",
    "enabled",
    "jwks_url",
    "[[auth.keys]]",
    "kid",
    "alg",
    "public_key",
    "[auth.api_keys]",
    "audiences",
    "issuers",
    "required_scopes",
    "leeway_seconds",
    "jwks_refresh_seconds",
    "jwks_max_stale_seconds",
    "[chains]",
    "max_scw_cache_entries",
    "max_envelope_bytes",
    "max_request_bytes",
    "max_response_bytes",
    "max_publish_topics",
    "max_query_topics",
    "max_query_limit",
    "default_query_limit",
    "max_newest_metadata_topics",
    "max_newest_full_topics",
    "max_update_adds",
    "max_update_removes",
    "max_stream_topics",
    "max_static_topics",
    "max_lookup_identifiers",
    "max_scw_signatures",
    "max_identity_entries",
    "max_update_frames_per_second",
    "max_update_burst",
    "max_ping_frames_per_second",
    "max_ping_burst",
    "max_http2_streams",
    "max_push_topics",
    "max_response_memory_bytes",
    "max_connection_response_bytes",
    "max_header_list_bytes",
    "max_control_frames_per_second",
    "max_control_frame_burst",
    "[quotas.principal]",
    "[quotas.address]",
    "publish_per_second",
    "publish_burst",
    "stream_opens_per_second",
    "stream_opens_burst",
    "max_group_members",
    "max_installations_per_inbox",
    "commit_log_enabled",
    "recipient_ttl_seconds",
    "max_attempts",
    "[push.apns]",
    "key",
    "key_id",
    "team_id",
    "bundle_id",
    "environment",
    "[push.fcm]",
    "service_account",
    "[push.http]",
    "allowed_domains",
    "allow_private_addresses",
    "base_url",
    "max_upload_bytes",
    "retention_seconds",
    "[attachments.target.S3]",
    "endpoint",
    "region",
    "bucket",
    "key_prefix",
    "presign_ttl_seconds",
    "[attachments.target.S3.credentials]",
    "kind",
    "access_key_id",
    "secret_access_key",
};

// Every key of section 2 (and [server.tls]) is written in the example, set or commented out.
TEST(ConfigExample, MentionsEveryKey) {
  std::string text = ReadExample();
  for (const char* key : kSectionTwoKeys) {
    std::string needle = std::string(key);
    if (needle.front() != '[') {
      needle = "\n" + needle + " = ";
      bool found = text.find(needle) != std::string::npos ||
                   text.find("\n# " + std::string(key) + " = ") != std::string::npos;
      EXPECT_TRUE(found) << key;
    } else {
      EXPECT_NE(text.find(needle), std::string::npos) << key;
    }
  }
}

}  // namespace
}  // namespace xb::config
