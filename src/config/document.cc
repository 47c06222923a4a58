// The schema of spec/CONF.md section 2, read with TableReader (toml_reader.h). Like every file
// that includes toml++, compiled header-only with TOML_EXCEPTIONS=0 (see CMakeLists.txt): parse
// returns a toml::parse_result and nothing here can throw.
#include "config/document.h"

#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>

#include "config/config_error.h"
#include "config/toml_reader.h"

namespace xb::config {
namespace {

Status ReadServer(TableReader& r, ServerConfig* s) {
  XB_RETURN_IF_ERROR(r.RequiredString("identifier", &s->identifier));
  XB_RETURN_IF_ERROR(r.OptString("min_libxmtp_version", &s->min_libxmtp_version));
  XB_RETURN_IF_ERROR(r.String("listen", &s->listen));
  std::optional<std::string> level;
  XB_RETURN_IF_ERROR(r.OptString("log_level", &level));
  if (level.has_value()) {
    std::optional<LogLevel> parsed = ParseLogLevel(*level);
    if (!parsed.has_value()) {
      return ConfigError(r.KeyPath("log_level"),
                         "must be one of off, error, warn, info, debug, trace");
    }
    s->log_level = *parsed;
  }
  std::optional<std::string> format;
  XB_RETURN_IF_ERROR(r.OptString("log_format", &format));
  if (format.has_value()) {
    if (*format == "text") {
      s->log_format = LogFormat::kText;
    } else if (*format == "json") {
      s->log_format = LogFormat::kJson;
    } else {
      return ConfigError(r.KeyPath("log_format"), "must be one of text, json");
    }
  }
  XB_RETURN_IF_ERROR(r.Bool("request_logger", &s->request_logger));
  XB_RETURN_IF_ERROR(r.Unsigned("max_drain_duration_ms", &s->max_drain_duration_ms));
  XB_RETURN_IF_ERROR(r.Unsigned("stalled_write_timeout_ms", &s->stalled_write_timeout_ms));
  // Connection limits: our extension (DECISIONS.md, Connection limits).
  XB_RETURN_IF_ERROR(r.Unsigned("max_connections", &s->max_connections));
  XB_RETURN_IF_ERROR(r.Unsigned("handshake_timeout_ms", &s->handshake_timeout_ms));
  XB_RETURN_IF_ERROR(r.Unsigned("header_read_timeout_ms", &s->header_read_timeout_ms));
  XB_RETURN_IF_ERROR(r.Unsigned("idle_timeout_ms", &s->idle_timeout_ms));
  XB_RETURN_IF_ERROR(r.Bool("proxy_protocol", &s->proxy_protocol));
  // [server.tls]: our extension (DECISIONS.md, Native TLS); both files required.
  XB_ASSIGN_OR_RETURN(TableReader tls, SubReader(r, "tls"));
  if (tls.present()) {
    s->tls.emplace();
    XB_RETURN_IF_ERROR(tls.RequiredString("cert_file", &s->tls->cert_file));
    XB_RETURN_IF_ERROR(tls.RequiredString("key_file", &s->tls->key_file));
    XB_RETURN_IF_ERROR(tls.Finish());
  }
  return r.Finish();
}

Status ReadTelemetry(TableReader& r, TelemetryConfig* t) {
  XB_RETURN_IF_ERROR(r.String("metrics_listen", &t->metrics_listen));
  XB_RETURN_IF_ERROR(r.OptString("otlp_endpoint", &t->otlp_endpoint));
  XB_RETURN_IF_ERROR(r.Bool("otlp_logs", &t->otlp_logs));
  // Our extension: CONF's endpoint is OTLP (gRPC); OTLP/HTTP stays available by name.
  std::optional<std::string> protocol;
  XB_RETURN_IF_ERROR(r.OptString("otlp_protocol", &protocol));
  if (protocol.has_value()) {
    if (*protocol == "grpc") {
      t->otlp_protocol = OtlpProtocol::kGrpc;
    } else if (*protocol == "http/protobuf") {
      t->otlp_protocol = OtlpProtocol::kHttpProtobuf;
    } else {
      return ConfigError(r.KeyPath("otlp_protocol"), "must be one of grpc, http/protobuf");
    }
  }
  XB_RETURN_IF_ERROR(r.String("service_name", &t->service_name));
  XB_RETURN_IF_ERROR(r.Number("sample_ratio", &t->sample_ratio));
  XB_RETURN_IF_ERROR(r.StringMap("resource_attributes", &t->resource_attributes));
  return r.Finish();
}

Status ReadDatabase(TableReader& r, DatabaseConfig* d) {
  XB_RETURN_IF_ERROR(r.RequiredString("url", &d->url));
  XB_RETURN_IF_ERROR(r.OptString("replica_url", &d->replica_url));
  XB_RETURN_IF_ERROR(r.Unsigned("max_connections", &d->max_connections));
  XB_RETURN_IF_ERROR(r.Unsigned("max_statement_timeout_ms", &d->max_statement_timeout_ms));
  return r.Finish();
}

Status ReadPublishing(TableReader& r, PublishingConfig* p) {
  XB_RETURN_IF_ERROR(r.Unsigned("max_publish_duration_ms", &p->max_publish_duration_ms));
  XB_RETURN_IF_ERROR(r.Unsigned("max_barrier_wait_ms", &p->max_barrier_wait_ms));
  return r.Finish();
}

Status ReadStreams(TableReader& r, StreamsConfig* s) {
  // A TOML integer is at most INT64_MAX, so a read value always fits the duration.
  uint64_t poll_interval_ms = static_cast<uint64_t>(s->poll_interval.count());
  XB_RETURN_IF_ERROR(r.Unsigned("poll_interval_ms", &poll_interval_ms));
  s->poll_interval = std::chrono::milliseconds(static_cast<int64_t>(poll_interval_ms));
  XB_RETURN_IF_ERROR(r.Unsigned("max_gap_ranges", &s->max_gap_ranges));
  XB_RETURN_IF_ERROR(r.Unsigned("keepalive_interval_ms", &s->keepalive_interval_ms));
  XB_RETURN_IF_ERROR(r.Unsigned("max_pong_wait_ms", &s->max_pong_wait_ms));
  return r.Finish();
}

Status ReadRetention(TableReader& r, RetentionConfig* c) {
  XB_RETURN_IF_ERROR(r.Unsigned("group_message_seconds", &c->group_message_seconds));
  XB_RETURN_IF_ERROR(r.Unsigned("welcome_seconds", &c->welcome_seconds));
  XB_RETURN_IF_ERROR(r.Unsigned("key_package_seconds", &c->key_package_seconds));
  // Our extension (issue 35): the pruning pass.
  XB_RETURN_IF_ERROR(r.Bool("prune", &c->prune));
  XB_RETURN_IF_ERROR(r.Unsigned("prune_interval_seconds", &c->prune_interval_seconds));
  XB_RETURN_IF_ERROR(r.Unsigned("prune_batch", &c->prune_batch));
  return r.Finish();
}

// Converts an [auth] integer once the table is known to be enabled.
Status AuthUnsigned(const TableReader& r, std::string_view key, std::optional<int64_t> value,
                    uint64_t* out) {
  if (!value.has_value()) {
    return Status::Ok();
  }
  if (*value < 0) {
    return ConfigError(r.KeyPath(key), "out of range");
  }
  *out = static_cast<uint64_t>(*value);
  return Status::Ok();
}

// implements: CONF-005, CONF-066. The document-wide rules (env:, unknown keys, TOML types) apply
// to the whole table whatever `enabled` says; everything else, including required inline-key
// fields and the sign of integers, only while it is true. A disabled table leaves AuthConfig at
// its defaults: nothing of it is enforced or published (CONF-068).
Status ReadAuth(TableReader& r, ParsedDocument* doc) {
  std::optional<bool> enabled;
  XB_RETURN_IF_ERROR(r.OptBool("enabled", &enabled));
  if (!enabled.has_value()) {
    return ConfigError(r.KeyPath("enabled"), "required when an [auth] table is present");
  }
  AuthConfig auth;
  auth.enabled = *enabled;
  XB_RETURN_IF_ERROR(r.OptString("jwks_url", &auth.jwks_url));
  XB_ASSIGN_OR_RETURN(const toml::array* keys, r.TableArray("keys"));
  if (keys != nullptr) {
    doc->auth_keys_present = true;
    for (size_t i = 0; i < keys->size(); ++i) {
      TableReader entry(keys->get(i)->as_table(), JoinIndex(r.KeyPath("keys"), i));
      InlineKey key;
      if (auth.enabled) {
        XB_RETURN_IF_ERROR(entry.RequiredString("kid", &key.kid));
        XB_RETURN_IF_ERROR(entry.RequiredString("alg", &key.alg));
        XB_RETURN_IF_ERROR(entry.RequiredString("public_key", &key.public_key));
      } else {
        XB_RETURN_IF_ERROR(entry.String("kid", &key.kid));
        XB_RETURN_IF_ERROR(entry.String("alg", &key.alg));
        XB_RETURN_IF_ERROR(entry.String("public_key", &key.public_key));
      }
      XB_RETURN_IF_ERROR(entry.Finish());
      auth.keys.push_back(std::move(key));
    }
  }
  XB_RETURN_IF_ERROR(r.StringMap("api_keys", &auth.api_keys, &doc->auth_api_keys_present));
  XB_RETURN_IF_ERROR(r.StringArray("audiences", &auth.audiences));
  XB_RETURN_IF_ERROR(r.StringArray("issuers", &auth.issuers));
  std::optional<std::vector<std::string>> scopes;
  XB_RETURN_IF_ERROR(r.StringArray("required_scopes", &scopes));
  if (scopes.has_value()) {
    auth.required_scopes = std::move(*scopes);
  }
  std::optional<int64_t> leeway;
  std::optional<int64_t> refresh;
  std::optional<int64_t> max_stale;
  XB_RETURN_IF_ERROR(r.Int("leeway_seconds", &leeway));
  XB_RETURN_IF_ERROR(r.Int("jwks_refresh_seconds", &refresh));
  XB_RETURN_IF_ERROR(r.Int("jwks_max_stale_seconds", &max_stale));
  XB_RETURN_IF_ERROR(r.Finish());
  if (!auth.enabled) {
    doc->config.auth = AuthConfig{};
    doc->auth_keys_present = false;
    doc->auth_api_keys_present = false;
    return Status::Ok();
  }
  XB_RETURN_IF_ERROR(AuthUnsigned(r, "leeway_seconds", leeway, &auth.leeway_seconds));
  XB_RETURN_IF_ERROR(AuthUnsigned(r, "jwks_refresh_seconds", refresh, &auth.jwks_refresh_seconds));
  XB_RETURN_IF_ERROR(
      AuthUnsigned(r, "jwks_max_stale_seconds", max_stale, &auth.jwks_max_stale_seconds));
  doc->config.auth = std::move(auth);
  return Status::Ok();
}

Status ReadChains(TableReader& r, std::map<std::string, std::string>* chains) {
  // Every key is a chain id; their form is checked with the section 3 checks.
  return r.StringMap("chains", chains);
}

Status ReadValidation(TableReader& r, ValidationConfig* v) {
  XB_RETURN_IF_ERROR(r.Unsigned("max_scw_cache_entries", &v->max_scw_cache_entries));
  return r.Finish();
}

Status ReadLimits(TableReader& r, LimitsConfig* l) {
  XB_RETURN_IF_ERROR(r.Unsigned("max_envelope_bytes", &l->max_envelope_bytes));
  XB_RETURN_IF_ERROR(r.Unsigned("max_request_bytes", &l->max_request_bytes));
  XB_RETURN_IF_ERROR(r.Unsigned("max_response_bytes", &l->max_response_bytes));
  XB_RETURN_IF_ERROR(r.Unsigned("max_publish_topics", &l->max_publish_topics));
  XB_RETURN_IF_ERROR(r.Unsigned("max_query_topics", &l->max_query_topics));
  XB_RETURN_IF_ERROR(r.Unsigned("max_query_limit", &l->max_query_limit));
  XB_RETURN_IF_ERROR(r.Unsigned("default_query_limit", &l->default_query_limit));
  XB_RETURN_IF_ERROR(r.Unsigned("max_newest_metadata_topics", &l->max_newest_metadata_topics));
  XB_RETURN_IF_ERROR(r.Unsigned("max_newest_full_topics", &l->max_newest_full_topics));
  XB_RETURN_IF_ERROR(r.Unsigned("max_update_adds", &l->max_update_adds));
  XB_RETURN_IF_ERROR(r.Unsigned("max_update_removes", &l->max_update_removes));
  XB_RETURN_IF_ERROR(r.Unsigned("max_stream_topics", &l->max_stream_topics));
  XB_RETURN_IF_ERROR(r.Unsigned("max_static_topics", &l->max_static_topics));
  XB_RETURN_IF_ERROR(r.Unsigned("max_lookup_identifiers", &l->max_lookup_identifiers));
  XB_RETURN_IF_ERROR(r.Unsigned("max_scw_signatures", &l->max_scw_signatures));
  XB_RETURN_IF_ERROR(r.Unsigned("max_identity_entries", &l->max_identity_entries));
  XB_RETURN_IF_ERROR(r.Unsigned("max_update_frames_per_second", &l->max_update_frames_per_second));
  XB_RETURN_IF_ERROR(r.Unsigned("max_update_burst", &l->max_update_burst));
  XB_RETURN_IF_ERROR(r.Unsigned("max_ping_frames_per_second", &l->max_ping_frames_per_second));
  XB_RETURN_IF_ERROR(r.Unsigned("max_ping_burst", &l->max_ping_burst));
  XB_RETURN_IF_ERROR(r.Unsigned("max_http2_streams", &l->max_http2_streams));
  XB_RETURN_IF_ERROR(r.Unsigned("max_push_topics", &l->max_push_topics));
  XB_RETURN_IF_ERROR(r.Unsigned("max_response_memory_bytes", &l->max_response_memory_bytes));
  XB_RETURN_IF_ERROR(
      r.Unsigned("max_connection_response_bytes", &l->max_connection_response_bytes));
  // Connection limits: our extension (DECISIONS.md, Connection limits).
  XB_RETURN_IF_ERROR(r.Unsigned("max_header_list_bytes", &l->max_header_list_bytes));
  XB_RETURN_IF_ERROR(
      r.Unsigned("max_control_frames_per_second", &l->max_control_frames_per_second));
  XB_RETURN_IF_ERROR(r.Unsigned("max_control_frame_burst", &l->max_control_frame_burst));
  return r.Finish();
}

// [quotas.principal] and [quotas.address] (issue 32): the same four keys each.
Status ReadCallerQuotas(TableReader& parent, std::string_view key, CallerQuotas* q) {
  XB_ASSIGN_OR_RETURN(TableReader r, SubReader(parent, key));
  XB_RETURN_IF_ERROR(r.Number("publish_per_second", &q->publish.per_second));
  XB_RETURN_IF_ERROR(r.Unsigned("publish_burst", &q->publish.burst));
  XB_RETURN_IF_ERROR(r.Number("stream_opens_per_second", &q->stream_opens.per_second));
  XB_RETURN_IF_ERROR(r.Unsigned("stream_opens_burst", &q->stream_opens.burst));
  return r.Finish();
}

Status ReadQuotas(TableReader& r, QuotasConfig* q) {
  XB_RETURN_IF_ERROR(ReadCallerQuotas(r, "principal", &q->principal));
  XB_RETURN_IF_ERROR(ReadCallerQuotas(r, "address", &q->address));
  return r.Finish();
}

Status ReadMls(TableReader& r, MlsConfig* m) {
  XB_RETURN_IF_ERROR(r.Unsigned("max_group_members", &m->max_group_members));
  XB_RETURN_IF_ERROR(r.Unsigned("max_installations_per_inbox", &m->max_installations_per_inbox));
  XB_RETURN_IF_ERROR(r.Bool("commit_log_enabled", &m->commit_log_enabled));
  return r.Finish();
}

Status ReadPush(TableReader& r, PushConfig* p) {
  XB_RETURN_IF_ERROR(r.Unsigned("recipient_ttl_seconds", &p->recipient_ttl_seconds));
  XB_RETURN_IF_ERROR(r.Unsigned("max_attempts", &p->max_attempts));
  XB_ASSIGN_OR_RETURN(TableReader apns, SubReader(r, "apns"));
  if (apns.present()) {
    ApnsConfig& a = p->apns.emplace();
    XB_RETURN_IF_ERROR(apns.RequiredString("key", &a.key));
    XB_RETURN_IF_ERROR(apns.RequiredString("key_id", &a.key_id));
    XB_RETURN_IF_ERROR(apns.RequiredString("team_id", &a.team_id));
    XB_RETURN_IF_ERROR(apns.RequiredString("bundle_id", &a.bundle_id));
    XB_RETURN_IF_ERROR(apns.RequiredString("environment", &a.environment));
    XB_RETURN_IF_ERROR(apns.Finish());
  }
  XB_ASSIGN_OR_RETURN(TableReader fcm, SubReader(r, "fcm"));
  if (fcm.present()) {
    XB_RETURN_IF_ERROR(fcm.RequiredString("service_account", &p->fcm.emplace().service_account));
    XB_RETURN_IF_ERROR(fcm.Finish());
  }
  XB_ASSIGN_OR_RETURN(TableReader http, SubReader(r, "http"));
  if (http.present()) {
    HttpPushConfig& h = p->http.emplace();
    XB_RETURN_IF_ERROR(http.StringArray("allowed_domains", &h.allowed_domains));
    XB_RETURN_IF_ERROR(http.Bool("allow_private_addresses", &h.allow_private_addresses));
    XB_RETURN_IF_ERROR(http.Finish());
  }
  return r.Finish();
}

// [attachments]: base_url and the S3 target with its credentials are required whenever the
// section is present (CONF 2.13 [unconfirmed]; ATTACH.md section 2 makes them required). The
// credentials table accepts `kind` and string fields; which fields a kind takes is a section 3
// check (ATCH-073), since it depends on the kind.
Status ReadAttachments(TableReader& r, AttachmentsConfig* a) {
  XB_RETURN_IF_ERROR(r.RequiredString("base_url", &a->base_url));
  XB_RETURN_IF_ERROR(r.Unsigned("max_upload_bytes", &a->max_upload_bytes));
  XB_RETURN_IF_ERROR(r.OptUnsigned("retention_seconds", &a->retention_seconds));
  XB_ASSIGN_OR_RETURN(TableReader target, SubReader(r, "target"));
  XB_ASSIGN_OR_RETURN(TableReader s3, SubReader(target, "S3"));
  if (!s3.present()) {
    target.ReportMissing(target.KeyPath("S3"), "required table is missing");
  }
  XB_RETURN_IF_ERROR(s3.RequiredString("endpoint", &a->s3.endpoint));
  XB_RETURN_IF_ERROR(s3.RequiredString("region", &a->s3.region));
  XB_RETURN_IF_ERROR(s3.RequiredString("bucket", &a->s3.bucket));
  XB_RETURN_IF_ERROR(s3.String("key_prefix", &a->s3.key_prefix));
  XB_RETURN_IF_ERROR(s3.Unsigned("presign_ttl_seconds", &a->s3.presign_ttl_seconds));
  XB_ASSIGN_OR_RETURN(TableReader creds, SubReader(s3, "credentials"));
  // A missing credentials table is a missing kind (ATCH-073 names ...credentials.kind).
  if (s3.present()) {
    XB_RETURN_IF_ERROR(creds.RequiredString("kind", &a->s3.credentials.kind));
  }
  if (creds.present()) {
    for (auto&& [name, value] : *creds.table()) {
      if (name.str() != "kind") {
        std::string field(name.str());
        XB_RETURN_IF_ERROR(creds.String(field, &a->s3.credentials.fields[field]));
      }
    }
  }
  // Every unknown key of the section before any missing one, outermost table first.
  for (const TableReader* reader : {&r, &target, &s3, &creds}) {
    XB_RETURN_IF_ERROR(reader->UnknownKeys());
  }
  for (const TableReader* reader : {&r, &target, &s3, &creds}) {
    XB_RETURN_IF_ERROR(reader->MissingKeys());
  }
  return Status::Ok();
}

}  // namespace

Result<ParsedDocument> ReadDocument(const std::string& toml_text, const EnvLookup& env) {
  toml::parse_result parsed = toml::parse(std::string_view(toml_text));
  if (!parsed) {
    // CONF 1.4: a syntax error reports its line and column only, never the description (which
    // can quote the source) and never the line itself.
    const toml::source_position& at = parsed.error().source().begin;
    return InvalidArgument("configuration is invalid: TOML syntax error at line " +
                           std::to_string(at.line) + ", column " + std::to_string(at.column));
  }
  toml::table& root_table = parsed.table();

  ParsedDocument doc;
  XB_RETURN_IF_ERROR(ResolveEnv(root_table, "", env, &doc.env_resolved));

  Config& c = doc.config;
  TableReader root(&root_table, "");
  // A misspelt section ("[sever]") is named before the keys it was meant to hold are missed.
  // Everything else at the top level is unknown, [[application_components]] included (CONF 2.15).
  for (std::string_view section :
       {"server", "telemetry", "database", "publishing", "streams", "retention", "auth", "chains",
        "validation", "limits", "quotas", "mls", "push", "attachments"}) {
    root.Get(section);
  }
  XB_RETURN_IF_ERROR(root.UnknownKeys());
  XB_ASSIGN_OR_RETURN(TableReader server, SubReader(root, "server"));
  XB_RETURN_IF_ERROR(ReadServer(server, &c.server));
  XB_ASSIGN_OR_RETURN(TableReader telemetry, SubReader(root, "telemetry"));
  XB_RETURN_IF_ERROR(ReadTelemetry(telemetry, &c.telemetry));
  XB_ASSIGN_OR_RETURN(TableReader database, SubReader(root, "database"));
  XB_RETURN_IF_ERROR(ReadDatabase(database, &c.database));
  XB_ASSIGN_OR_RETURN(TableReader publishing, SubReader(root, "publishing"));
  XB_RETURN_IF_ERROR(ReadPublishing(publishing, &c.publishing));
  XB_ASSIGN_OR_RETURN(TableReader streams, SubReader(root, "streams"));
  XB_RETURN_IF_ERROR(ReadStreams(streams, &c.streams));
  XB_ASSIGN_OR_RETURN(TableReader retention, SubReader(root, "retention"));
  XB_RETURN_IF_ERROR(ReadRetention(retention, &c.retention));
  XB_ASSIGN_OR_RETURN(TableReader auth, SubReader(root, "auth"));
  if (auth.present()) {
    XB_RETURN_IF_ERROR(ReadAuth(auth, &doc));
  }
  XB_RETURN_IF_ERROR(ReadChains(root, &c.chains));
  XB_ASSIGN_OR_RETURN(TableReader validation, SubReader(root, "validation"));
  XB_RETURN_IF_ERROR(ReadValidation(validation, &c.validation));
  XB_ASSIGN_OR_RETURN(TableReader limits, SubReader(root, "limits"));
  XB_RETURN_IF_ERROR(ReadLimits(limits, &c.limits));
  XB_ASSIGN_OR_RETURN(TableReader quotas, SubReader(root, "quotas"));
  XB_RETURN_IF_ERROR(ReadQuotas(quotas, &c.quotas));
  XB_ASSIGN_OR_RETURN(TableReader mls, SubReader(root, "mls"));
  XB_RETURN_IF_ERROR(ReadMls(mls, &c.mls));
  XB_ASSIGN_OR_RETURN(TableReader push, SubReader(root, "push"));
  if (push.present()) {
    XB_RETURN_IF_ERROR(ReadPush(push, &c.push.emplace()));
  }
  XB_ASSIGN_OR_RETURN(TableReader attachments, SubReader(root, "attachments"));
  if (attachments.present()) {
    XB_RETURN_IF_ERROR(ReadAttachments(attachments, &c.attachments.emplace()));
  }
  return doc;
}

}  // namespace xb::config
