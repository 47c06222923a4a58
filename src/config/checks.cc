#include "config/checks.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "base/unicode.h"
#include "base/url.h"
#include "base/varint.h"
#include "config/config_error.h"
#include "config/database_url.h"
#include "config/semver.h"
#include "config/socket_address.h"

namespace xb::config {
namespace {

constexpr uint64_t kNoMax = std::numeric_limits<uint64_t>::max();
constexpr uint64_t kMaxInt32 = 2147483647;
constexpr uint64_t kMaxUint32 = 4294967295;
constexpr uint64_t kMaxRetentionSeconds = 9223372036;  // floor(INT64_MAX / 10^9)
constexpr uint64_t kTransportCeiling = 26214400;       // CONF-008, API-282
constexpr uint64_t kFrameBytes = 2097152;              // OPS-021: a 2 MiB stream frame
constexpr uint64_t kEnvelopeOverhead = 256;            // OPS-021
constexpr uint64_t kNsPerMs = 1000000;
// Issue 28 extension keys: an hour bounds a stall; response memory from 1 MiB to 1 TiB.
constexpr uint64_t kMaxStalledWriteTimeoutMs = 3600000;
constexpr uint64_t kMinResponseMemory = uint64_t{1} << 20;
constexpr uint64_t kMaxResponseMemory = uint64_t{1} << 40;
// limits.max_header_list_bytes: below 1 KiB even a bare gRPC request's fields may not fit; past
// 16 MiB it bounds nothing (nghttp2's HPACK decoder and Beast's parser stop there anyway).
constexpr uint64_t kMinHeaderListBytes = 1024;
constexpr uint64_t kMaxHeaderListBytes = 16777216;

// A millisecond key whose range starts at 1 and whose `now + value` must fit the monotonic
// clock (CONF 3.5).
Status CheckDurationMs(std::string_view key, uint64_t value, uint64_t max) {
  XB_RETURN_IF_ERROR(CheckRange(key, value, 1, max));
  if (!FitsMonotonicDeadline(value, kNsPerMs)) {
    return ConfigError(key, "too large for a deadline on the monotonic clock");
  }
  return Status::Ok();
}

Status CheckServer(const ServerConfig& s) {
  // implements: CONF-002
  if (!IsValidServerIdentifier(s.identifier)) {
    return ConfigError("server.identifier",
                       "must be 1 to 256 bytes of UTF-8 without whitespace or control characters");
  }
  // implements: CONF-067 ("" refused: CONF section 7 point 2)
  if (s.min_libxmtp_version.has_value() && !IsSemVer(*s.min_libxmtp_version)) {
    return ConfigError("server.min_libxmtp_version", "must be a SemVer 2.0.0 version");
  }
  if (!ParseSocketAddress(s.listen).ok()) {
    return ConfigError("server.listen",
                       "must be a numeric socket address, IPv4:port or [IPv6]:port");
  }
  XB_RETURN_IF_ERROR(
      CheckDurationMs("server.max_drain_duration_ms", s.max_drain_duration_ms, kNoMax));
  XB_RETURN_IF_ERROR(CheckRange("server.stalled_write_timeout_ms", s.stalled_write_timeout_ms, 100,
                                kMaxStalledWriteTimeoutMs));
  // Connection limits: our extension (DECISIONS.md, Connection limits).
  XB_RETURN_IF_ERROR(CheckRange("server.max_connections", s.max_connections, 1, kMaxInt32));
  XB_RETURN_IF_ERROR(
      CheckDurationMs("server.handshake_timeout_ms", s.handshake_timeout_ms, kMaxUint32));
  XB_RETURN_IF_ERROR(
      CheckDurationMs("server.header_read_timeout_ms", s.header_read_timeout_ms, kMaxUint32));
  XB_RETURN_IF_ERROR(CheckDurationMs("server.idle_timeout_ms", s.idle_timeout_ms, kMaxUint32));
  if (s.tls.has_value()) {
    if (s.tls->cert_file.empty()) {
      return ConfigError("server.tls.cert_file", "must not be empty");
    }
    if (s.tls->key_file.empty()) {
      return ConfigError("server.tls.key_file", "must not be empty");
    }
  }
  return Status::Ok();
}

// An endpoint's form, the error naming `source` (the key or the variable): an http(s) URL with a
// host; for gRPC, which names the service in the request path, no path but "/" and no query.
Status CheckOtlpEndpoint(std::string_view endpoint, OtlpProtocol protocol,
                         std::string_view source) {
  Result<Url> url = ParseUrl(endpoint);
  if (!url.ok() || !IsHttpUrlWithHost(*url)) {
    return ConfigError(source, "must be an http:// or https:// URL with a host");
  }
  if (protocol == OtlpProtocol::kGrpc &&
      ((!url->path.empty() && url->path != "/") || url->has_query)) {
    return ConfigError(source,
                       "must have no path (or \"/\") and no query with telemetry.otlp_protocol = "
                       "\"grpc\"");
  }
  return Status::Ok();
}

// implements: OPS-022 (endpoint form). The key wins over the variable; an empty
// OTEL_EXPORTER_OTLP_ENDPOINT counts as unset, as OpenTelemetry SDKs treat empty variables.
Status ResolveOtlpEndpoint(TelemetryConfig* t, const EnvLookup& env) {
  static constexpr std::string_view kVariable = "OTEL_EXPORTER_OTLP_ENDPOINT";
  if (t->otlp_endpoint.has_value()) {
    return CheckOtlpEndpoint(*t->otlp_endpoint, t->otlp_protocol, "telemetry.otlp_endpoint");
  }
  std::optional<std::string> from_env = env(std::string(kVariable));
  if (!from_env.has_value() || from_env->empty()) {
    return Status::Ok();  // nothing resolves: no export
  }
  XB_RETURN_IF_ERROR(CheckOtlpEndpoint(*from_env, t->otlp_protocol, kVariable));
  t->otlp_endpoint = std::move(*from_env);
  return Status::Ok();
}

Status CheckTelemetry(TelemetryConfig* t, const EnvLookup& env) {
  if (!t->metrics_listen.empty() && !ParseSocketAddress(t->metrics_listen).ok()) {
    return ConfigError("telemetry.metrics_listen",
                       "must be \"\" or a numeric socket address, IPv4:port or [IPv6]:port");
  }
  XB_RETURN_IF_ERROR(ResolveOtlpEndpoint(t, env));
  if (IsBlank(t->service_name)) {
    return ConfigError("telemetry.service_name", "must not be empty after trimming whitespace");
  }
  if (!std::isfinite(t->sample_ratio) || t->sample_ratio < 0.0 || t->sample_ratio > 1.0) {
    return ConfigError("telemetry.sample_ratio", "must be a finite number from 0.0 to 1.0");
  }
  for (std::string_view reserved : {"service.name", "service.version", "xmtp.backend.identifier"}) {
    if (t->resource_attributes.count(std::string(reserved)) != 0) {
      return ConfigError("telemetry.resource_attributes",
                         "must not set service.name, service.version or xmtp.backend.identifier");
    }
  }
  return Status::Ok();
}

Status CheckDatabase(const DatabaseConfig& d) {
  Result<DatabaseUrl> primary = ParseDatabaseUrl(d.url);
  if (!primary.ok()) {
    return ConfigError("database.url", primary.status().message());
  }
  if (d.replica_url.has_value()) {
    Result<DatabaseUrl> replica = ParseDatabaseUrl(*d.replica_url);
    if (!replica.ok()) {
      return ConfigError("database.replica_url", replica.status().message());
    }
    // A replica is a PostgreSQL streaming replica; the embedded engine has none.
    if (replica->engine != DatabaseUrl::Engine::kPostgres ||
        primary->engine != DatabaseUrl::Engine::kPostgres) {
      return ConfigError("database.replica_url",
                         "needs a postgres:// or postgresql:// primary and replica");
    }
  }
  XB_RETURN_IF_ERROR(CheckRange("database.max_connections", d.max_connections, 1, kMaxUint32));
  XB_RETURN_IF_ERROR(
      CheckDurationMs("database.max_statement_timeout_ms", d.max_statement_timeout_ms, kMaxInt32));
  return Status::Ok();
}

Status CheckPublishing(const PublishingConfig& p, const DatabaseConfig& d) {
  XB_RETURN_IF_ERROR(
      CheckDurationMs("publishing.max_publish_duration_ms", p.max_publish_duration_ms, kMaxInt32));
  if (p.max_publish_duration_ms <= d.max_statement_timeout_ms) {
    return ConfigError("publishing.max_publish_duration_ms",
                       "must be greater than database.max_statement_timeout_ms");
  }
  return CheckDurationMs("publishing.max_barrier_wait_ms", p.max_barrier_wait_ms, kMaxInt32);
}

Status CheckStreams(const StreamsConfig& s) {
  XB_RETURN_IF_ERROR(CheckDurationMs("streams.poll_interval_ms",
                                     static_cast<uint64_t>(s.poll_interval.count()), kNoMax));
  XB_RETURN_IF_ERROR(CheckRange("streams.max_gap_ranges", s.max_gap_ranges, 1, kNoMax));
  XB_RETURN_IF_ERROR(
      CheckDurationMs("streams.keepalive_interval_ms", s.keepalive_interval_ms, kMaxUint32));
  if (s.max_pong_wait_ms <= s.keepalive_interval_ms) {
    return ConfigError("streams.max_pong_wait_ms",
                       "must be greater than streams.keepalive_interval_ms");
  }
  return CheckDurationMs("streams.max_pong_wait_ms", s.max_pong_wait_ms, kNoMax);
}

Status CheckRetention(const RetentionConfig& r) {
  XB_RETURN_IF_ERROR(CheckRange("retention.group_message_seconds", r.group_message_seconds, 1,
                                kMaxRetentionSeconds));
  XB_RETURN_IF_ERROR(
      CheckRange("retention.welcome_seconds", r.welcome_seconds, 1, kMaxRetentionSeconds));
  XB_RETURN_IF_ERROR(
      CheckRange("retention.key_package_seconds", r.key_package_seconds, 1, kMaxRetentionSeconds));
  // Issue 35: a pass at most once a second and at least once a day; a batch small enough to keep
  // a delete transaction short.
  XB_RETURN_IF_ERROR(
      CheckRange("retention.prune_interval_seconds", r.prune_interval_seconds, 1, 86400));
  return CheckRange("retention.prune_batch", r.prune_batch, 1, 100000);
}

// A CAIP-2 id in the eip155 namespace whose reference is the canonical decimal form (no sign, no
// leading zero) of a chain id that fits u64 (CONF 2.8, DOC).
bool IsEip155ChainId(std::string_view id) {
  static constexpr std::string_view kNamespace = "eip155:";
  if (id.substr(0, kNamespace.size()) != kNamespace) {
    return false;
  }
  std::string_view reference = id.substr(kNamespace.size());
  if (reference.empty() || reference.size() > 20 || (reference.size() > 1 && reference[0] == '0')) {
    return false;
  }
  uint64_t value = 0;
  for (char c : reference) {
    if (c < '0' || c > '9') {
      return false;
    }
    uint64_t digit = static_cast<uint64_t>(c - '0');
    if (value > (kNoMax - digit) / 10) {
      return false;
    }
    value = value * 10 + digit;
  }
  return true;
}

Status CheckChains(const std::map<std::string, std::string>& chains) {
  for (const auto& [id, url] : chains) {
    if (!IsEip155ChainId(id)) {
      return ConfigError(JoinKey("chains", id),
                         "chain id must be a CAIP-2 id eip155:<decimal chain id>");
    }
    Result<Url> parsed = ParseUrl(url);
    if (!parsed.ok() || !IsHttpUrlWithHost(*parsed)) {
      return ConfigError(JoinKey("chains", id), "must be an http:// or https:// URL");
    }
  }
  return Status::Ok();
}

Status CheckLimits(const LimitsConfig& l) {
  XB_RETURN_IF_ERROR(CheckRange("limits.max_envelope_bytes", l.max_envelope_bytes, 1, kNoMax));
  // implements: CONF-008
  XB_RETURN_IF_ERROR(
      CheckRange("limits.max_request_bytes", l.max_request_bytes, 1, kTransportCeiling));
  XB_RETURN_IF_ERROR(
      CheckRange("limits.max_response_bytes", l.max_response_bytes, 1, kTransportCeiling));
  // The uint32 keys (CONF section 7 point 5): the field type already bounds them at 4294967295.
  struct U32Key {
    std::string_view key;
    uint32_t value;
  };
  for (const U32Key& k : {
           U32Key{"limits.max_publish_topics", l.max_publish_topics},
           U32Key{"limits.max_query_topics", l.max_query_topics},
           U32Key{"limits.max_query_limit", l.max_query_limit},
           U32Key{"limits.default_query_limit", l.default_query_limit},
           U32Key{"limits.max_newest_metadata_topics", l.max_newest_metadata_topics},
           U32Key{"limits.max_newest_full_topics", l.max_newest_full_topics},
           U32Key{"limits.max_update_adds", l.max_update_adds},
           U32Key{"limits.max_update_removes", l.max_update_removes},
           U32Key{"limits.max_stream_topics", l.max_stream_topics},
           U32Key{"limits.max_static_topics", l.max_static_topics},
           U32Key{"limits.max_lookup_identifiers", l.max_lookup_identifiers},
           U32Key{"limits.max_scw_signatures", l.max_scw_signatures},
           U32Key{"limits.max_identity_entries", l.max_identity_entries},
           U32Key{"limits.max_update_frames_per_second", l.max_update_frames_per_second},
           U32Key{"limits.max_update_burst", l.max_update_burst},
           U32Key{"limits.max_ping_frames_per_second", l.max_ping_frames_per_second},
           U32Key{"limits.max_ping_burst", l.max_ping_burst},
           U32Key{"limits.max_http2_streams", l.max_http2_streams},
           U32Key{"limits.max_control_frames_per_second", l.max_control_frames_per_second},
           U32Key{"limits.max_control_frame_burst", l.max_control_frame_burst},
       }) {
    XB_RETURN_IF_ERROR(CheckRange(k.key, k.value, 1, kMaxUint32));
  }
  // CONF section 7 point 10.
  XB_RETURN_IF_ERROR(CheckRange("limits.max_push_topics", l.max_push_topics, 1, kMaxInt32));
  // Issue 28: the response memory bounds. A bound below one response still serves one at a time.
  XB_RETURN_IF_ERROR(CheckRange("limits.max_response_memory_bytes", l.max_response_memory_bytes,
                                kMinResponseMemory, kMaxResponseMemory));
  XB_RETURN_IF_ERROR(CheckRange("limits.max_connection_response_bytes",
                                l.max_connection_response_bytes, kMinResponseMemory,
                                l.max_response_memory_bytes));
  XB_RETURN_IF_ERROR(CheckRange("limits.max_header_list_bytes", l.max_header_list_bytes,
                                kMinHeaderListBytes, kMaxHeaderListBytes));
  if (l.max_query_limit < l.default_query_limit) {
    return ConfigError("limits.max_query_limit", "must be at least limits.default_query_limit");
  }
  if (l.max_update_adds > l.max_stream_topics) {
    return ConfigError("limits.max_update_adds", "must be at most limits.max_stream_topics");
  }
  // implements: OPS-021. Every stored envelope must fit a response or stream frame with the
  // backend's 256 bytes of metadata and framing, and a publish request carrying it: one field-tag
  // byte plus the varint length prefix (CONF section 7 point 1). Subsumes "max_envelope_bytes >
  // max_request_bytes". No overflow: every value is at most INT64_MAX.
  uint64_t envelope = l.max_envelope_bytes;
  if (envelope + kEnvelopeOverhead > l.max_response_bytes ||
      envelope + kEnvelopeOverhead > kFrameBytes ||
      envelope + 1 + VarintSize(envelope) > l.max_request_bytes) {
    return ConfigError("limits.max_envelope_bytes",
                       "an envelope of this size would not fit limits.max_response_bytes, a 2 MiB "
                       "stream frame, or limits.max_request_bytes (OPS-021)");
  }
  return Status::Ok();
}

// implements: issue 32 (quotas). A rate is a finite number from 0 (off) to kMaxQuotaRate; a
// burst is 0 (one second's worth, at least 1) to kMaxQuotaBurst and needs a rate.
constexpr double kMaxQuotaRate = 1000000;
constexpr uint64_t kMaxQuotaBurst = 1000000;

Status CheckQuotaLimit(const std::string& prefix, std::string_view what, QuotaLimit* q) {
  const std::string rate_key = prefix + std::string(what) + "_per_second";
  const std::string burst_key = prefix + std::string(what) + "_burst";
  if (!std::isfinite(q->per_second) || q->per_second < 0 || q->per_second > kMaxQuotaRate) {
    return ConfigError(rate_key, "must be a finite number from 0 (off) to 1000000");
  }
  XB_RETURN_IF_ERROR(CheckRange(burst_key, q->burst, 0, kMaxQuotaBurst));
  if (q->per_second == 0) {
    if (q->burst != 0) {
      return ConfigError(burst_key, "needs " + rate_key + " above 0");
    }
    return Status::Ok();
  }
  if (q->burst == 0) {
    q->burst = static_cast<uint32_t>(std::max(1.0, std::ceil(q->per_second)));
  }
  return Status::Ok();
}

// Principal quotas charge the credential's name: without authentication there is none, and a
// quota that would never apply is refused rather than accepted and ignored.
Status CheckQuotas(QuotasConfig* q, const AuthConfig& auth) {
  if (!auth.enabled) {
    if (q->principal.publish.per_second > 0 || q->principal.publish.burst > 0) {
      return ConfigError("quotas.principal.publish_per_second", "needs auth.enabled = true");
    }
    if (q->principal.stream_opens.per_second > 0 || q->principal.stream_opens.burst > 0) {
      return ConfigError("quotas.principal.stream_opens_per_second", "needs auth.enabled = true");
    }
  }
  for (auto [prefix, callers] :
       {std::pair<std::string, CallerQuotas*>{"quotas.principal.", &q->principal},
        std::pair<std::string, CallerQuotas*>{"quotas.address.", &q->address}}) {
    XB_RETURN_IF_ERROR(CheckQuotaLimit(prefix, "publish", &callers->publish));
    XB_RETURN_IF_ERROR(CheckQuotaLimit(prefix, "stream_opens", &callers->stream_opens));
  }
  return Status::Ok();
}

Status CheckMls(const MlsConfig& m) {
  XB_RETURN_IF_ERROR(CheckRange("mls.max_group_members", m.max_group_members, 1, 65535));
  return CheckRange("mls.max_installations_per_inbox", m.max_installations_per_inbox, 1, 65535);
}

}  // namespace

Status RangeError(std::string_view key, uint64_t min, uint64_t max) {
  std::string reason = "out of range (" + std::to_string(min);
  if (max == kNoMax) {
    reason += " or more)";
  } else {
    reason += " to " + std::to_string(max) + ")";
  }
  return ConfigError(key, reason);
}

Status CheckRange(std::string_view key, uint64_t value, uint64_t min, uint64_t max) {
  if (value < min || value > max) {
    return RangeError(key, min, max);
  }
  return Status::Ok();
}

bool FitsMonotonicDeadline(uint64_t value, uint64_t unit_ns) {
  using Clock = std::chrono::steady_clock;
  static_assert(std::is_same_v<Clock::duration, std::chrono::nanoseconds>,
                "deadline arithmetic below counts nanoseconds");
  int64_t now = Clock::now().time_since_epoch().count();
  if (now < 0 || unit_ns == 0) {
    return false;
  }
  // headroom / unit_ns, compared before multiplying, so nothing can overflow.
  auto headroom = static_cast<uint64_t>(std::numeric_limits<int64_t>::max() - now);
  return value <= headroom / unit_ns;
}

Status CheckDocument(ParsedDocument* doc, const EnvLookup& env) {
  Config& c = doc->config;
  XB_RETURN_IF_ERROR(CheckServer(c.server));
  XB_RETURN_IF_ERROR(CheckTelemetry(&c.telemetry, env));
  XB_RETURN_IF_ERROR(CheckDatabase(c.database));
  XB_RETURN_IF_ERROR(CheckPublishing(c.publishing, c.database));
  XB_RETURN_IF_ERROR(CheckStreams(c.streams));
  XB_RETURN_IF_ERROR(CheckRetention(c.retention));
  XB_RETURN_IF_ERROR(CheckAuth(*doc));
  XB_RETURN_IF_ERROR(CheckChains(c.chains));
  XB_RETURN_IF_ERROR(CheckRange("validation.max_scw_cache_entries",
                                c.validation.max_scw_cache_entries, 1, kNoMax));
  XB_RETURN_IF_ERROR(CheckLimits(c.limits));
  // An API key travels in the authorization header: a header list too small for the longest
  // one would refuse every request that uses it.
  for (const auto& [name, value] : c.auth.api_keys) {
    if (value.size() + kMinHeaderListBytes > c.limits.max_header_list_bytes) {
      return ConfigError("limits.max_header_list_bytes",
                         "must leave 1024 bytes beside the longest auth.api_keys value");
    }
  }
  XB_RETURN_IF_ERROR(CheckQuotas(&c.quotas, c.auth));
  XB_RETURN_IF_ERROR(CheckMls(c.mls));
  if (c.push.has_value()) {
    XB_RETURN_IF_ERROR(CheckPush(*c.push));
  }
  if (c.attachments.has_value()) {
    XB_RETURN_IF_ERROR(CheckAttachments(*c.attachments));
  }
  return Status::Ok();
}

}  // namespace xb::config
