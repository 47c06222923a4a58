// The validated configuration: plain structs, one per TOML section of spec/CONF.md, every field
// holding its default until the document says otherwise. Produced only by config::Load (load.h),
// which has already run every static startup check of CONF section 3; read-only afterwards.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace xb::config {

enum class LogLevel { kOff, kError, kWarn, kInfo, kDebug, kTrace };
enum class LogFormat { kText, kJson };
// telemetry.otlp_protocol: our extension (docs/configuration.md, OTLP export protocol).
enum class OtlpProtocol { kGrpc, kHttpProtobuf };

struct TlsConfig {  // [server.tls]: our extension (DECISIONS.md, Native TLS)
  std::string cert_file;
  std::string key_file;
};

struct ServerConfig {
  std::string identifier;                          // required (CONF-002)
  std::optional<std::string> min_libxmtp_version;  // CONF-067
  std::string listen = "0.0.0.0:5050";
  LogLevel log_level = LogLevel::kInfo;
  LogFormat log_format = LogFormat::kText;
  bool request_logger = true;
  uint64_t max_drain_duration_ms = 10000;
  // Our extension (issue 28): a finished response whose reader takes no bytes for this long is
  // reset, and its memory freed.
  uint64_t stalled_write_timeout_ms = 20000;
  std::optional<TlsConfig> tls;
  // Connection limits: our extension (DECISIONS.md, Connection limits; not published).
  uint64_t max_connections = 10000;
  uint64_t handshake_timeout_ms = 10000;
  uint64_t header_read_timeout_ms = 10000;
  uint64_t idle_timeout_ms = 900000;
  // Our extension (issue 32): connections begin with a PROXY protocol v2 header (a balancer's
  // send-proxy-v2) whose client address is the peer quotas.address charges.
  bool proxy_protocol = false;
};

struct TelemetryConfig {
  std::string metrics_listen = "0.0.0.0:9464";  // "" = no listener (OPS-016)
  // Resolved from otlp_endpoint or OTEL_EXPORTER_OTLP_ENDPOINT; unset = no export (OPS-022).
  std::optional<std::string> otlp_endpoint;
  bool otlp_logs = false;
  OtlpProtocol otlp_protocol = OtlpProtocol::kGrpc;  // "grpc" | "http/protobuf"
  std::string service_name = "xmtp-backend";
  double sample_ratio = 1.0;
  std::map<std::string, std::string> resource_attributes;
};

struct DatabaseConfig {
  std::string url;  // required; postgres://, postgresql:// or sqlite:// (embedded engine)
  std::optional<std::string> replica_url;
  uint64_t max_connections = 20;
  uint64_t max_statement_timeout_ms = 5000;
};

struct PublishingConfig {
  uint64_t max_publish_duration_ms = 10000;
  uint64_t max_barrier_wait_ms = 1000;
};

struct StreamsConfig {
  // streams.poll_interval_ms: checked once here (1 ms up to what a monotonic deadline can hold)
  // and carried as a duration to the tailer and the store.
  std::chrono::milliseconds poll_interval{100};
  uint64_t max_gap_ranges = 10000;
  uint64_t keepalive_interval_ms = 30000;
  uint64_t max_pong_wait_ms = 90000;
};

struct RetentionConfig {
  uint64_t group_message_seconds = 7776000;
  uint64_t welcome_seconds = 7776000;
  uint64_t key_package_seconds = 7776000;
  // Our extension (issue 35, STORE.md 9.2; never published): the pruning pass, off by default.
  bool prune = false;
  uint64_t prune_interval_seconds = 3600;  // from the end of one pass to the start of the next
  uint64_t prune_batch = 1000;             // rows per delete transaction, at most
};

struct InlineKey {
  std::string kid;
  std::string alg;         // RS256 RS384 RS512 ES256 ES384 EdDSA
  std::string public_key;  // PEM SubjectPublicKeyInfo
};

struct AuthConfig {
  bool enabled = false;
  std::optional<std::string> jwks_url;
  std::vector<InlineKey> keys;                  // empty = not configured
  std::map<std::string, std::string> api_keys;  // name -> value
  std::optional<std::vector<std::string>> audiences;
  std::optional<std::vector<std::string>> issuers;
  std::vector<std::string> required_scopes;
  uint64_t leeway_seconds = 60;
  uint64_t jwks_refresh_seconds = 300;
  uint64_t jwks_max_stale_seconds = 3600;
};

struct ValidationConfig {
  uint64_t max_scw_cache_entries = 10000;
};

struct LimitsConfig {
  uint64_t max_envelope_bytes = 1048576;
  uint64_t max_request_bytes = 26214400;
  uint64_t max_response_bytes = 26214400;
  uint32_t max_publish_topics = 1000;
  uint32_t max_query_topics = 1000;
  uint32_t max_query_limit = 1000;
  uint32_t default_query_limit = 100;
  uint32_t max_newest_metadata_topics = 1000;
  uint32_t max_newest_full_topics = 100;
  uint32_t max_update_adds = 100000;
  uint32_t max_update_removes = 100000;
  uint32_t max_stream_topics = 100000;
  uint32_t max_static_topics = 10000;
  uint32_t max_lookup_identifiers = 250;
  uint32_t max_scw_signatures = 100;
  uint32_t max_identity_entries = 256;
  uint32_t max_update_frames_per_second = 10;
  uint32_t max_update_burst = 100;
  uint32_t max_ping_frames_per_second = 10;
  uint32_t max_ping_burst = 100;
  uint32_t max_http2_streams = 100;
  uint32_t max_push_topics = 100000;
  // Our extension (issue 28): response memory of the whole process and of one connection.
  uint64_t max_response_memory_bytes = 1073741824;
  uint64_t max_connection_response_bytes = 268435456;
  // Connection limits: our extension (DECISIONS.md, Connection limits; not published).
  uint32_t max_header_list_bytes = 32768;
  uint32_t max_control_frames_per_second = 100;
  uint32_t max_control_frame_burst = 1000;
};

// [quotas]: our extension (issue 32, docs/configuration.md, Per-caller quotas). One token bucket
// per caller; a rate of 0 (the default) turns that quota off.
struct QuotaLimit {
  double per_second = 0;  // tokens per second; 0: off
  uint32_t burst = 0;     // bucket size; with a rate, 0 became max(1, ceil(rate)) at load
};
struct CallerQuotas {       // [quotas.principal] or [quotas.address]
  QuotaLimit publish;       // one token per published envelope
  QuotaLimit stream_opens;  // one token per stream opened
};
struct QuotasConfig {
  CallerQuotas principal;  // per API key name or JWT subject
  CallerQuotas address;    // per client IP address
};

struct MlsConfig {
  uint32_t max_group_members = 250;
  uint32_t max_installations_per_inbox = 10;
  bool commit_log_enabled = true;
};

struct ApnsConfig {
  std::string key, key_id, team_id, bundle_id, environment;
};
struct FcmConfig {
  std::string service_account;
};
struct HttpPushConfig {
  std::optional<std::vector<std::string>> allowed_domains;
  bool allow_private_addresses = false;
};
struct PushConfig {
  uint64_t recipient_ttl_seconds = 2592000;
  uint64_t max_attempts = 3;
  std::optional<ApnsConfig> apns;
  std::optional<FcmConfig> fcm;
  std::optional<HttpPushConfig> http;
};

struct S3Credentials {
  std::string kind;
  std::map<std::string, std::string> fields;  // the kind's keys, as given
};
struct S3Target {
  std::string endpoint, region, bucket, key_prefix;
  uint64_t presign_ttl_seconds = 900;
  S3Credentials credentials;
};
struct AttachmentsConfig {
  std::string base_url;
  uint64_t max_upload_bytes = 104857600;
  std::optional<uint64_t> retention_seconds;
  S3Target s3;
};

struct Config {
  ServerConfig server;
  TelemetryConfig telemetry;
  DatabaseConfig database;
  PublishingConfig publishing;
  StreamsConfig streams;
  RetentionConfig retention;
  AuthConfig auth;
  std::map<std::string, std::string> chains;  // CAIP-2 id -> RPC URL (byte order)
  ValidationConfig validation;
  LimitsConfig limits;
  QuotasConfig quotas;
  MlsConfig mls;
  std::optional<PushConfig> push;
  std::optional<AttachmentsConfig> attachments;
};

}  // namespace xb::config
