// Section 3 of spec/CONF.md: the checks outside [auth], [push] and [attachments].
#include <gtest/gtest.h>

#include <chrono>
#include <limits>
#include <string>

#include "config/load.h"
#include "config/test_support.h"

namespace xb::config {
namespace {

using testing::FakeEnv;
using testing::ParseMinimalWith;
using testing::Refused;

constexpr char kSecret[] = "SECRETVALUE123";
constexpr char kDistinctNumber[] = "987654321987";

Result<Config> WithIdentifier(const std::string& identifier) {
  return Parse("server.identifier = \"" + identifier + "\"\ndatabase.url = \"sqlite://x.db\"\n",
               FakeEnv());
}

// ---- 3.1 ----------------------------------------------------------------------------------------

// verifies: CONF-002
TEST(Conf002, IdentifierRefusedWhenEmptyTooLongOrWithWhitespaceOrControl) {
  EXPECT_TRUE(Refused(WithIdentifier(""), "server.identifier"));
  EXPECT_TRUE(
      Refused(WithIdentifier(std::string(257, 'a')), "server.identifier", {std::string(257, 'a')}));
  // TOML basic-string escapes for: space, tab, U+0085, U+00A0, U+1680, U+2000, U+200A, U+2028,
  // U+2029, U+202F, U+205F, U+3000, and the controls U+0000, U+001F, U+007F, U+009F.
  for (const char* bad :
       {"SECRETVALUE123 x", "SECRETVALUE123\\tx", "SECRETVALUE123\\u0085", "SECRETVALUE123\\u00A0",
        "SECRETVALUE123\\u1680", "SECRETVALUE123\\u2000", "SECRETVALUE123\\u200A",
        "SECRETVALUE123\\u2028", "SECRETVALUE123\\u2029", "SECRETVALUE123\\u202F",
        "SECRETVALUE123\\u205F", "SECRETVALUE123\\u3000", "SECRETVALUE123\\u0000",
        "SECRETVALUE123\\u001F", "SECRETVALUE123\\u007F", "SECRETVALUE123\\u009F"}) {
    EXPECT_TRUE(Refused(WithIdentifier(bad), "server.identifier", {kSecret})) << bad;
  }
}

// verifies: CONF-002
TEST(Conf002, IdentifierAcceptedAtTheBounds) {
  EXPECT_TRUE(WithIdentifier("a").ok());
  EXPECT_TRUE(WithIdentifier(std::string(256, 'a')).ok());
  // Non-ASCII letters are fine; U+200B (zero width space) is not White_Space and not Cc.
  EXPECT_TRUE(WithIdentifier("org.example.\\u00E9\\u200B").ok());
  // 128 two-byte characters = 256 bytes; one more is 258 bytes.
  std::string two_byte;
  for (int i = 0; i < 128; ++i) {
    two_byte += "\\u00E9";
  }
  EXPECT_TRUE(WithIdentifier(two_byte).ok());
  EXPECT_TRUE(Refused(WithIdentifier(two_byte + "\\u00E9"), "server.identifier"));
}

// verifies: CONF-067
TEST(Conf067, MinLibxmtpVersionMustBeSemVer) {
  for (const char* bad : {"", "1", "1.2", "1.2.3.4", "01.2.3", "1.2.3-", "1.2.3+", "1.2.3-01",
                          "v1.2.3", "1.2.3-a..b", "SECRETVALUE123"}) {
    EXPECT_TRUE(
        Refused(ParseMinimalWith(std::string("server.min_libxmtp_version = \"") + bad + "\""),
                "server.min_libxmtp_version", {kSecret}))
        << bad;
  }
  for (const char* good : {"0.0.0", "1.2.3", "1.2.3-rc.1", "1.2.3+build.007", "1.0.0-alpha-1.0"}) {
    Result<Config> loaded =
        ParseMinimalWith(std::string("server.min_libxmtp_version = \"") + good + "\"");
    ASSERT_TRUE(loaded.ok()) << good << ": " << loaded.status().message();
    EXPECT_EQ(loaded->server.min_libxmtp_version, good);
  }
}

// verifies: CONF-008
TEST(Conf008, RequestAndResponseBudgetsBoundedByTheTransport) {
  EXPECT_TRUE(Refused(ParseMinimalWith("[limits]\nmax_request_bytes = 26214401"),
                      "limits.max_request_bytes", {"26214401"}));
  EXPECT_TRUE(Refused(ParseMinimalWith("[limits]\nmax_response_bytes = 26214401"),
                      "limits.max_response_bytes", {"26214401"}));
  EXPECT_TRUE(ParseMinimalWith("[limits]\nmax_request_bytes = 26214400\nmax_response_bytes = "
                               "26214400")
                  .ok());
}

// ---- 3.3 ----------------------------------------------------------------------------------------

// verifies: OPS-021
TEST(Ops021, EnvelopeMustFitResponseFrameAndRequest) {
  // The largest envelope a 2 MiB frame admits: 2097152 - 256.
  EXPECT_TRUE(ParseMinimalWith("[limits]\nmax_envelope_bytes = 2096896").ok());
  EXPECT_TRUE(Refused(ParseMinimalWith("[limits]\nmax_envelope_bytes = 2096897"),
                      "limits.max_envelope_bytes", {"2096897"}));
  // Response budget: envelope + 256.
  EXPECT_TRUE(
      ParseMinimalWith("[limits]\nmax_envelope_bytes = 1000\nmax_response_bytes = 1256").ok());
  EXPECT_TRUE(
      Refused(ParseMinimalWith("[limits]\nmax_envelope_bytes = 1000\nmax_response_bytes = 1255"),
              "limits.max_envelope_bytes"));
  // Request budget: envelope + 1 tag byte + varint length (1000 needs 2 bytes) = 1003.
  EXPECT_TRUE(
      ParseMinimalWith("[limits]\nmax_envelope_bytes = 1000\nmax_request_bytes = 1003").ok());
  EXPECT_TRUE(
      Refused(ParseMinimalWith("[limits]\nmax_envelope_bytes = 1000\nmax_request_bytes = 1002"),
              "limits.max_envelope_bytes"));
  // At the default the prefix is 1 + 3 bytes (CONF says 4 at the default).
  EXPECT_TRUE(ParseMinimalWith("[limits]\nmax_request_bytes = 1048580").ok());
  EXPECT_TRUE(Refused(ParseMinimalWith("[limits]\nmax_request_bytes = 1048579"),
                      "limits.max_envelope_bytes"));
  // The DOC row "max_envelope_bytes > max_request_bytes" is subsumed.
  EXPECT_TRUE(Refused(ParseMinimalWith("[limits]\nmax_envelope_bytes = 5000\nmax_request_bytes = "
                                       "4000"),
                      "limits.max_envelope_bytes"));
}

// verifies: OPS-022
TEST(Ops022, OtlpEndpointKeyMustBeHttpUrlWithHost) {
  for (std::string bad :
       {std::string("grpc://") + kSecret + ":4317", std::string(kSecret), std::string("http://"),
        std::string("http:///path"), std::string("https://") + kSecret + " x", std::string("")}) {
    EXPECT_TRUE(Refused(ParseMinimalWith("[telemetry]\notlp_endpoint = \"" + bad + "\""),
                        "telemetry.otlp_endpoint", {kSecret}))
        << bad;
  }
  Result<Config> ok = ParseMinimalWith("[telemetry]\notlp_endpoint = \"HTTPS://otel.example.com\"");
  ASSERT_TRUE(ok.ok()) << ok.status().message();
}

// verifies: OPS-022
TEST(Ops022, OtelEnvironmentVariableIsTheFallbackAndNamedOnError) {
  Result<Config> bad = ParseMinimalWith(
      "", FakeEnv({{"OTEL_EXPORTER_OTLP_ENDPOINT", std::string("ftp://") + kSecret}}));
  EXPECT_TRUE(Refused(bad, "OTEL_EXPORTER_OTLP_ENDPOINT", {kSecret, "ftp"}));

  Result<Config> from_env = ParseMinimalWith(
      "", FakeEnv({{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector.internal:4317"}}));
  ASSERT_TRUE(from_env.ok()) << from_env.status().message();
  EXPECT_EQ(from_env->telemetry.otlp_endpoint, "http://collector.internal:4317");

  // The key wins; the variable is then not even looked at.
  Result<Config> key_wins =
      ParseMinimalWith("[telemetry]\notlp_endpoint = \"https://otel.example.com\"",
                       FakeEnv({{"OTEL_EXPORTER_OTLP_ENDPOINT", "not a url"}}));
  ASSERT_TRUE(key_wins.ok()) << key_wins.status().message();
  EXPECT_EQ(key_wins->telemetry.otlp_endpoint, "https://otel.example.com");

  // Neither resolves: no export. An empty variable counts as unset.
  Result<Config> none = ParseMinimalWith("", FakeEnv({{"OTEL_EXPORTER_OTLP_ENDPOINT", ""}}));
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->telemetry.otlp_endpoint.has_value());
}

// telemetry.otlp_protocol (our extension): grpc by default, http/protobuf by name, nothing else;
// a gRPC endpoint is an origin (the service is the request path), an OTLP/HTTP one may have a path.
TEST(OtlpProtocol, DefaultsToGrpcAndRefusesOtherNames) {
  Result<Config> plain = ParseMinimalWith("");
  ASSERT_TRUE(plain.ok()) << plain.status().message();
  EXPECT_EQ(plain->telemetry.otlp_protocol, OtlpProtocol::kGrpc);
  Result<Config> http = ParseMinimalWith("[telemetry]\notlp_protocol = \"http/protobuf\"");
  ASSERT_TRUE(http.ok()) << http.status().message();
  EXPECT_EQ(http->telemetry.otlp_protocol, OtlpProtocol::kHttpProtobuf);
  Result<Config> grpc = ParseMinimalWith("[telemetry]\notlp_protocol = \"grpc\"");
  ASSERT_TRUE(grpc.ok()) << grpc.status().message();
  EXPECT_EQ(grpc->telemetry.otlp_protocol, OtlpProtocol::kGrpc);
  for (std::string bad : {"http/json", "GRPC", "http", ""}) {
    EXPECT_TRUE(Refused(ParseMinimalWith("[telemetry]\notlp_protocol = \"" + bad + "\""),
                        "telemetry.otlp_protocol"))
        << bad;
  }
  EXPECT_TRUE(
      Refused(ParseMinimalWith("[telemetry]\notlp_protocol = 4317"), "telemetry.otlp_protocol"));
}

// verifies: OPS-022
TEST(OtlpProtocol, GrpcEndpointHasNoPath) {
  for (std::string ok : {"http://collector:4317", "https://collector:4317/", "http://[::1]:4317"}) {
    Result<Config> c = ParseMinimalWith("[telemetry]\notlp_endpoint = \"" + ok + "\"");
    EXPECT_TRUE(c.ok()) << ok << ": " << c.status().message();
  }
  for (std::string bad : {std::string("http://collector:4317/v1/traces"),
                          std::string("http://collector:4317/") + kSecret,
                          std::string("http://collector:4317?") + kSecret}) {
    EXPECT_TRUE(Refused(ParseMinimalWith("[telemetry]\notlp_endpoint = \"" + bad + "\""),
                        "telemetry.otlp_endpoint", {kSecret}))
        << bad;
    EXPECT_TRUE(Refused(ParseMinimalWith("", FakeEnv({{"OTEL_EXPORTER_OTLP_ENDPOINT", bad}})),
                        "OTEL_EXPORTER_OTLP_ENDPOINT", {kSecret}))
        << bad;
  }
  // OTLP/HTTP keeps its rule: the path is the base of /v1/traces.
  Result<Config> http = ParseMinimalWith(
      "[telemetry]\notlp_protocol = \"http/protobuf\"\n"
      "otlp_endpoint = \"http://collector:4318/otlp/v1/traces\"");
  EXPECT_TRUE(http.ok()) << http.status().message();
}

// verifies: OPS-020
TEST(Ops020, RetentionMustFitTheDatabaseClock) {
  RetentionConfig retention;
  EXPECT_TRUE(CheckRetentionFitsClock(retention, 1700000000000000000).ok());
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  // 9223372036 s is the largest accepted value; it fits only while clock <= 854775807 ns.
  retention.welcome_seconds = 9223372036;
  EXPECT_TRUE(CheckRetentionFitsClock(retention, 854775807).ok());
  Status overflow = CheckRetentionFitsClock(retention, 854775808);
  EXPECT_EQ(overflow.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(overflow.message().find("retention.welcome_seconds"), std::string::npos);
  EXPECT_EQ(overflow.message().find("9223372036"), std::string::npos);
  retention =
      RetentionConfig{.group_message_seconds = 1, .welcome_seconds = 1, .key_package_seconds = 2};
  EXPECT_TRUE(CheckRetentionFitsClock(retention, kMax - 2000000000).ok());
  Status near_max = CheckRetentionFitsClock(retention, kMax - 1500000000);
  EXPECT_NE(near_max.message().find("retention.key_package_seconds"), std::string::npos);
  Status negative = CheckRetentionFitsClock(RetentionConfig{}, -1);
  EXPECT_NE(negative.message().find("retention."), std::string::npos);
}

// Issue 35: the pruning pass's keys, off by default, each refusal naming its key.
TEST(RetentionPrune, DefaultsBoundsAndRefusals) {
  Result<Config> plain = ParseMinimalWith("");
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE(plain->retention.prune);
  EXPECT_EQ(plain->retention.prune_interval_seconds, 3600u);
  EXPECT_EQ(plain->retention.prune_batch, 1000u);
  Result<Config> bounds = ParseMinimalWith(
      "[retention]\nprune = true\nprune_interval_seconds = 86400\nprune_batch = 100000");
  ASSERT_TRUE(bounds.ok()) << bounds.status().message();
  EXPECT_TRUE(bounds->retention.prune);
  EXPECT_EQ(bounds->retention.prune_interval_seconds, 86400u);
  EXPECT_EQ(bounds->retention.prune_batch, 100000u);
  Result<Config> low = ParseMinimalWith("[retention]\nprune_interval_seconds = 1\nprune_batch = 1");
  ASSERT_TRUE(low.ok()) << low.status().message();
  EXPECT_TRUE(Refused(ParseMinimalWith("[retention]\nprune_interval_seconds = 0"),
                      "retention.prune_interval_seconds"));
  EXPECT_TRUE(Refused(ParseMinimalWith("[retention]\nprune_interval_seconds = 86401"),
                      "retention.prune_interval_seconds"));
  EXPECT_TRUE(Refused(ParseMinimalWith("[retention]\nprune_batch = 0"), "retention.prune_batch"));
  EXPECT_TRUE(
      Refused(ParseMinimalWith("[retention]\nprune_batch = 100001"), "retention.prune_batch"));
  EXPECT_TRUE(Refused(ParseMinimalWith("[retention]\nprune = 1"), "retention.prune"));
}

TEST(Ops020, PushTtlMustFitTheDatabaseClock) {
  PushConfig push;
  EXPECT_TRUE(CheckPushTtlFitsClock(push, 1700000000000000000).ok());
  push.recipient_ttl_seconds = 9223372036;
  Status overflow = CheckPushTtlFitsClock(push, 1700000000000000000);
  EXPECT_NE(overflow.message().find("push.recipient_ttl_seconds"), std::string::npos);
}

// ---- 3.5 ----------------------------------------------------------------------------------------

TEST(DocChecks, ListenMustBeANumericSocketAddress) {
  for (std::string bad : {std::string(kSecret) + ":5050", std::string("localhost:5050"),
                          std::string("0.0.0.0"), std::string("0.0.0.0:65536"),
                          std::string("::1:5050"), std::string("[::1]"), std::string("")}) {
    EXPECT_TRUE(
        Refused(ParseMinimalWith("server.listen = \"" + bad + "\""), "server.listen", {kSecret}))
        << bad;
  }
  EXPECT_TRUE(ParseMinimalWith("server.listen = \"127.0.0.1:0\"").ok());
  EXPECT_TRUE(ParseMinimalWith("server.listen = \"[::]:5050\"").ok());
}

TEST(DocChecks, MetricsListenEmptyOrNumeric) {
  Result<Config> off = ParseMinimalWith("[telemetry]\nmetrics_listen = \"\"");
  ASSERT_TRUE(off.ok());
  EXPECT_EQ(off->telemetry.metrics_listen, "");
  EXPECT_TRUE(Refused(
      ParseMinimalWith(std::string("[telemetry]\nmetrics_listen = \"") + kSecret + ":9464\""),
      "telemetry.metrics_listen", {kSecret}));
}

TEST(DocChecks, DurationKeysRefuseZero) {
  struct Case {
    const char* table;
    const char* key;
  };
  for (const Case& c :
       {Case{"server", "max_drain_duration_ms"}, Case{"database", "max_statement_timeout_ms"},
        Case{"publishing", "max_publish_duration_ms"}, Case{"publishing", "max_barrier_wait_ms"},
        Case{"streams", "poll_interval_ms"}, Case{"streams", "keepalive_interval_ms"},
        Case{"streams", "max_pong_wait_ms"}}) {
    std::string doc = std::string("[") + c.table + "]\n" + c.key + " = 0";
    if (std::string(c.table) == "server" || std::string(c.table) == "database") {
      doc = std::string(c.table) + "." + c.key + " = 0";
    }
    EXPECT_TRUE(Refused(ParseMinimalWith(doc), std::string(c.table) + "." + c.key)) << c.key;
  }
}

TEST(DocChecks, DurationKeysMustBeRepresentableOnTheMonotonicClock) {
  // INT64_MAX ms can never be added to steady_clock::now() in nanoseconds.
  EXPECT_TRUE(Refused(ParseMinimalWith("server.max_drain_duration_ms = 9223372036854775807"),
                      "server.max_drain_duration_ms", {"9223372036854775807"}));
  EXPECT_TRUE(Refused(ParseMinimalWith("[streams]\npoll_interval_ms = 9223372036854775807"),
                      "streams.poll_interval_ms"));
  EXPECT_TRUE(Refused(ParseMinimalWith("[streams]\nmax_pong_wait_ms = 9223372036854"),
                      "streams.max_pong_wait_ms"));
  // A long but representable drain is fine (about 3 years).
  EXPECT_TRUE(ParseMinimalWith("server.max_drain_duration_ms = 100000000000").ok());
}

TEST(DocChecks, TelemetryServiceNameRatioAndAttributes) {
  EXPECT_TRUE(Refused(ParseMinimalWith("[telemetry]\nservice_name = \" \\t\\u3000\""),
                      "telemetry.service_name"));
  EXPECT_TRUE(
      Refused(ParseMinimalWith("[telemetry]\nservice_name = \"\""), "telemetry.service_name"));
  for (const char* bad : {"nan", "inf", "-inf", "-0.1", "1.0000001", "2"}) {
    EXPECT_TRUE(Refused(ParseMinimalWith(std::string("[telemetry]\nsample_ratio = ") + bad),
                        "telemetry.sample_ratio"))
        << bad;
  }
  for (const char* reserved : {"service.name", "service.version", "xmtp.backend.identifier"}) {
    EXPECT_TRUE(Refused(ParseMinimalWith(std::string("[telemetry.resource_attributes]\n\"") +
                                         reserved + "\" = \"" + kSecret + "\""),
                        "telemetry.resource_attributes", {kSecret}))
        << reserved;
  }
}

Result<Config> WithDatabase(const std::string& database_table) {
  return Parse("server.identifier = \"a\"\n[database]\n" + database_table + "\n", FakeEnv());
}

TEST(DocChecks, DatabaseUrlForms) {
  for (std::string good :
       {"postgres://", "postgresql://user:p%40ss@db.internal:5432/xmtp?sslmode=require",
        "postgres://h1:5432,h2:5433/xmtp", "postgresql://[::1]:5432/db",
        "postgresql://%2Fvar%2Frun%2Fpostgresql/xmtp", "sqlite://./data/xmtp.db",
        "sqlite:///var/lib/xmtp/xmtp.db"}) {
    Result<Config> loaded = WithDatabase("url = \"" + good + "\"");
    EXPECT_TRUE(loaded.ok()) << good << ": " << loaded.status().message();
  }
  for (std::string bad :
       {std::string(""), std::string("mysql://") + kSecret,
        std::string("postgres://") + kSecret + " host/db",
        std::string("postgres://") + kSecret + "@h:99999/db",
        std::string("postgres://h/db?") + kSecret, std::string("POSTGRES://") + kSecret,
        std::string("sqlite://"), std::string(kSecret)}) {
    EXPECT_TRUE(Refused(WithDatabase("url = \"" + bad + "\""), "database.url", {kSecret})) << bad;
  }
}

TEST(DocChecks, ReplicaUrlSameFormAndPostgresOnly) {
  EXPECT_TRUE(WithDatabase("url = \"postgres://p/db\"\nreplica_url = \"postgres://r/db\"").ok());
  EXPECT_TRUE(Refused(WithDatabase("url = \"postgres://p/db\"\nreplica_url = \"http://" +
                                   std::string(kSecret) + "\""),
                      "database.replica_url", {kSecret}));
  EXPECT_TRUE(Refused(WithDatabase("url = \"sqlite://x.db\"\nreplica_url = \"postgres://r/db\""),
                      "database.replica_url"));
  EXPECT_TRUE(Refused(WithDatabase("url = \"postgres://p/db\"\nreplica_url = \"sqlite://r.db\""),
                      "database.replica_url"));
}

TEST(DocChecks, DatabaseNumericRanges) {
  EXPECT_TRUE(Refused(WithDatabase("url = \"sqlite://x\"\nmax_connections = 0"),
                      "database.max_connections"));
  EXPECT_TRUE(Refused(WithDatabase("url = \"sqlite://x\"\nmax_connections = 4294967296"),
                      "database.max_connections"));
  EXPECT_TRUE(WithDatabase("url = \"sqlite://x\"\nmax_connections = 4294967295").ok());
  EXPECT_TRUE(Refused(WithDatabase("url = \"sqlite://x\"\nmax_statement_timeout_ms = 2147483648"),
                      "database.max_statement_timeout_ms", {"2147483648"}));
}

TEST(DocChecks, PublishingRangesAndRelationship) {
  EXPECT_TRUE(Refused(ParseMinimalWith("[publishing]\nmax_publish_duration_ms = 2147483648"),
                      "publishing.max_publish_duration_ms"));
  EXPECT_TRUE(Refused(ParseMinimalWith("[publishing]\nmax_barrier_wait_ms = 2147483648"),
                      "publishing.max_barrier_wait_ms"));
  // Must be greater than database.max_statement_timeout_ms (5000 by default).
  Result<Config> equal = ParseMinimalWith("[publishing]\nmax_publish_duration_ms = 5000");
  EXPECT_TRUE(Refused(equal, "publishing.max_publish_duration_ms"));
  EXPECT_NE(equal.status().message().find("database.max_statement_timeout_ms"), std::string::npos);
  EXPECT_TRUE(ParseMinimalWith("[publishing]\nmax_publish_duration_ms = 5001").ok());
}

TEST(DocChecks, StreamsRangesAndRelationship) {
  EXPECT_TRUE(Refused(ParseMinimalWith("[streams]\nmax_gap_ranges = 0"), "streams.max_gap_ranges"));
  EXPECT_TRUE(Refused(ParseMinimalWith("[streams]\nkeepalive_interval_ms = 4294967296"),
                      "streams.keepalive_interval_ms"));
  EXPECT_TRUE(Refused(ParseMinimalWith("[streams]\nkeepalive_interval_ms = 5000\nmax_pong_wait_ms "
                                       "= 5000"),
                      "streams.max_pong_wait_ms"));
  EXPECT_TRUE(
      ParseMinimalWith("[streams]\nkeepalive_interval_ms = 5000\nmax_pong_wait_ms = 5001").ok());
}

TEST(DocChecks, RetentionRanges) {
  for (const char* key : {"group_message_seconds", "welcome_seconds", "key_package_seconds"}) {
    EXPECT_TRUE(Refused(ParseMinimalWith(std::string("[retention]\n") + key + " = 0"),
                        std::string("retention.") + key));
    EXPECT_TRUE(Refused(ParseMinimalWith(std::string("[retention]\n") + key + " = 9223372037"),
                        std::string("retention.") + key, {"9223372037"}));
    EXPECT_TRUE(ParseMinimalWith(std::string("[retention]\n") + key + " = 9223372036").ok());
  }
}

TEST(DocChecks, ChainIdsAndUrls) {
  for (const char* bad_id : {"eip155:", "eip155:01", "eip155:-1", "eip155:18446744073709551616",
                             "cosmos:cosmoshub-4", "EIP155:1", "eip155:1a"}) {
    EXPECT_TRUE(Refused(
        ParseMinimalWith(std::string("[chains]\n\"") + bad_id + "\" = \"https://rpc.example.com\""),
        "chains"))
        << bad_id;
  }
  for (std::string bad_url : {std::string("ftp://") + kSecret, std::string(kSecret),
                              std::string("https://"), std::string("wss://") + kSecret}) {
    EXPECT_TRUE(Refused(ParseMinimalWith("[chains]\n\"eip155:1\" = \"" + bad_url + "\""), "chains",
                        {kSecret}))
        << bad_url;
  }
  Result<Config> ok = ParseMinimalWith(
      "[chains]\n\"eip155:0\" = \"http://127.0.0.1:8545\"\n"
      "\"eip155:18446744073709551615\" = \"https://rpc.example.com/v1?key=abc\"");
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ(ok->chains.size(), 2u);
}

TEST(DocChecks, ValidationCacheAtLeastOne) {
  EXPECT_TRUE(Refused(ParseMinimalWith("[validation]\nmax_scw_cache_entries = 0"),
                      "validation.max_scw_cache_entries"));
}

TEST(DocChecks, EveryLimitRefusesZero) {
  for (const char* key : {"max_envelope_bytes",
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
                          "max_push_topics"}) {
    EXPECT_TRUE(Refused(ParseMinimalWith(std::string("[limits]\n") + key + " = 0"),
                        std::string("limits.") + key))
        << key;
  }
}

TEST(DocChecks, LimitsAboveTheirRange) {
  // The uint32 keys (CONF section 7 point 5) stop at 4294967295.
  EXPECT_TRUE(ParseMinimalWith("[limits]\nmax_static_topics = 4294967295").ok());
  EXPECT_TRUE(Refused(ParseMinimalWith("[limits]\nmax_static_topics = 4294967296"),
                      "limits.max_static_topics"));
  // max_push_topics stops at 2147483647 (CONF section 7 point 10).
  EXPECT_TRUE(ParseMinimalWith("[limits]\nmax_push_topics = 2147483647").ok());
  EXPECT_TRUE(
      Refused(ParseMinimalWith(std::string("[limits]\nmax_push_topics = ") + kDistinctNumber),
              "limits.max_push_topics", {kDistinctNumber}));
}

TEST(DocChecks, LimitRelationships) {
  EXPECT_TRUE(Refused(ParseMinimalWith("[limits]\nmax_query_limit = 99\ndefault_query_limit = 100"),
                      "limits.max_query_limit"));
  EXPECT_TRUE(ParseMinimalWith("[limits]\nmax_query_limit = 100\ndefault_query_limit = 100").ok());
  EXPECT_TRUE(Refused(ParseMinimalWith("[limits]\nmax_update_adds = 11\nmax_stream_topics = 10"),
                      "limits.max_update_adds"));
  // max_newest_full_topics > max_newest_metadata_topics is advice only.
  EXPECT_TRUE(ParseMinimalWith("[limits]\nmax_newest_full_topics = 2000").ok());
}

// Connection limits (DECISIONS.md, Connection limits): our extension keys, each with a range.
TEST(DocChecks, ConnectionLimitRanges) {
  for (const char* key :
       {"max_connections", "handshake_timeout_ms", "header_read_timeout_ms", "idle_timeout_ms"}) {
    EXPECT_TRUE(Refused(ParseMinimalWith(std::string("server.") + key + " = 0"),
                        std::string("server.") + key))
        << key;
  }
  EXPECT_TRUE(ParseMinimalWith("server.max_connections = 2147483647").ok());
  EXPECT_TRUE(Refused(ParseMinimalWith(std::string("server.max_connections = ") + kDistinctNumber),
                      "server.max_connections", {kDistinctNumber}));
  EXPECT_TRUE(ParseMinimalWith("server.idle_timeout_ms = 4294967295").ok());
  EXPECT_TRUE(
      Refused(ParseMinimalWith("server.idle_timeout_ms = 4294967296"), "server.idle_timeout_ms"));
  for (const char* key : {"max_control_frames_per_second", "max_control_frame_burst"}) {
    EXPECT_TRUE(Refused(ParseMinimalWith(std::string("[limits]\n") + key + " = 0"),
                        std::string("limits.") + key))
        << key;
  }
  EXPECT_TRUE(ParseMinimalWith("[limits]\nmax_header_list_bytes = 1024").ok());
  EXPECT_TRUE(ParseMinimalWith("[limits]\nmax_header_list_bytes = 16777216").ok());
  EXPECT_TRUE(Refused(ParseMinimalWith("[limits]\nmax_header_list_bytes = 1023"),
                      "limits.max_header_list_bytes"));
  EXPECT_TRUE(Refused(ParseMinimalWith("[limits]\nmax_header_list_bytes = 16777217"),
                      "limits.max_header_list_bytes"));
}

// An API key is sent in the authorization header, so the header list must have room for it.
TEST(DocChecks, HeaderListLeavesRoomForTheLongestApiKey) {
  const std::string key(4000, 'k');
  const std::string auth = "[auth]\nenabled = true\n[auth.api_keys]\nworker = \"" + key + "\"\n";
  EXPECT_TRUE(ParseMinimalWith("[limits]\nmax_header_list_bytes = 5024\n" + auth).ok());
  EXPECT_TRUE(Refused(ParseMinimalWith("[limits]\nmax_header_list_bytes = 5023\n" + auth),
                      "limits.max_header_list_bytes", {key}));
}

// verifies: issue 32 (quotas) — off by default; a burst defaults to one second's worth
TEST(DocChecks, QuotasDefaultsAndBurst) {
  Result<Config> none = ParseMinimalWith("");
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->quotas.address.publish.per_second, 0);
  EXPECT_EQ(none->quotas.principal.stream_opens.per_second, 0);
  Result<Config> set = ParseMinimalWith(
      "[quotas.address]\npublish_per_second = 2.5\nstream_opens_per_second = 0.2\n"
      "stream_opens_burst = 7");
  ASSERT_TRUE(set.ok()) << set.status().message();
  EXPECT_EQ(set->quotas.address.publish.per_second, 2.5);
  EXPECT_EQ(set->quotas.address.publish.burst, 3u);  // ceil(2.5)
  EXPECT_EQ(set->quotas.address.stream_opens.per_second, 0.2);
  EXPECT_EQ(set->quotas.address.stream_opens.burst, 7u);
  Result<Config> slow = ParseMinimalWith("[quotas.address]\npublish_per_second = 0.1");
  ASSERT_TRUE(slow.ok());
  EXPECT_EQ(slow->quotas.address.publish.burst, 1u);
}

// verifies: issue 32 (quotas) — invalid quotas are refused naming the key
TEST(DocChecks, QuotasRefusals) {
  const std::string auth =
      "[auth]\nenabled = true\n[auth.api_keys]\nw = \"" + std::string(32, 'k') + "\"\n";
  for (const char* table : {"address", "principal"}) {
    const std::string prefix = std::string("quotas.") + table + ".";
    const std::string head = auth + "[quotas." + table + "]\n";
    for (const char* what : {"publish", "stream_opens"}) {
      const std::string rate = std::string(what) + "_per_second";
      const std::string burst = std::string(what) + "_burst";
      EXPECT_TRUE(Refused(ParseMinimalWith(head + burst + " = 5"), prefix + burst)) << what;
      EXPECT_TRUE(Refused(ParseMinimalWith(head + rate + " = -1"), prefix + rate)) << what;
      EXPECT_TRUE(Refused(ParseMinimalWith(head + rate + " = 1000001"), prefix + rate)) << what;
      EXPECT_TRUE(Refused(ParseMinimalWith(head + rate + " = nan"), prefix + rate)) << what;
      EXPECT_TRUE(Refused(ParseMinimalWith(head + rate + " = \"1\""), prefix + rate)) << what;
      EXPECT_TRUE(
          Refused(ParseMinimalWith(head + rate + " = 1\n" + burst + " = 1000001"), prefix + burst))
          << what;
      EXPECT_TRUE(ParseMinimalWith(head + rate + " = 1000000\n" + burst + " = 1000000").ok());
    }
    EXPECT_TRUE(Refused(ParseMinimalWith(head + "publish_rate = 1"), prefix + "publish_rate"));
  }
  EXPECT_TRUE(
      Refused(ParseMinimalWith("[quotas]\npublish_per_second = 1"), "quotas.publish_per_second"));
  // A principal quota without authentication would never apply.
  EXPECT_TRUE(Refused(ParseMinimalWith("[quotas.principal]\npublish_per_second = 1"),
                      "quotas.principal.publish_per_second"));
  EXPECT_TRUE(Refused(ParseMinimalWith("[quotas.principal]\nstream_opens_per_second = 1"),
                      "quotas.principal.stream_opens_per_second"));
}

TEST(DocChecks, MlsRange) {
  for (const char* key : {"max_group_members", "max_installations_per_inbox"}) {
    EXPECT_TRUE(Refused(ParseMinimalWith(std::string("[mls]\n") + key + " = 0"),
                        std::string("mls.") + key));
    EXPECT_TRUE(Refused(ParseMinimalWith(std::string("[mls]\n") + key + " = 65536"),
                        std::string("mls.") + key, {"65536"}));
  }
}

// DECISIONS.md, Native TLS: [server.tls] needs both files.
TEST(DocChecks, ServerTlsNeedsBothFiles) {
  EXPECT_TRUE(Refused(ParseMinimalWith("[server.tls]\ncert_file = \"/etc/tls.crt\""),
                      "server.tls.key_file", {"/etc/tls.crt"}));
  EXPECT_TRUE(Refused(ParseMinimalWith("[server.tls]\nkey_file = \"/etc/tls.key\""),
                      "server.tls.cert_file", {"/etc/tls.key"}));
  EXPECT_TRUE(Refused(ParseMinimalWith("[server.tls]\ncert_file = \"\"\nkey_file = \"k\""),
                      "server.tls.cert_file"));
  Result<Config> ok = ParseMinimalWith("[server.tls]\ncert_file = \"c\"\nkey_file = \"k\"");
  ASSERT_TRUE(ok.ok());
  ASSERT_TRUE(ok->server.tls.has_value());
}

}  // namespace
}  // namespace xb::config
