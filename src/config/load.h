// Loading the configuration (spec/CONF.md section 1): exactly one source, TOML parse, env:
// indirection, unknown keys and types, defaults, then every static check of section 3.
// Errors are one line naming the key (CONF-065), never a configured or resolved value.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"
#include "config/config.h"

namespace xb::config {

// Reads an environment variable; injectable for tests. nullopt = not set.
using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;
EnvLookup ProcessEnv();

// The default member initializers let callers name only the members they set
// (`Load({.file_path = path}, env)`) without GCC 12's -Wmissing-field-initializers.
struct Sources {
  std::optional<std::string> inline_text{};  // --config
  std::optional<std::string> file_path{};    // --config-file
  std::optional<std::string> log_level{};    // --log-level
};

// Picks the source (XMTP_CONFIG via env when inline_text is absent), reads and parses it.
// Failure: kInvalidArgument with a message such as
// "configuration is invalid: limits.max_query_limit (out of range)".
// Source errors name the flag or variable (`--config`, `--config-file`, `XMTP_CONFIG`,
// `--log-level`), never its value: neither source, or both; XMTP_CONFIG set together with
// --config-file; inline text naming an existing file-system entry; an unreadable file ("could not
// read configuration file"); an unknown --log-level, which otherwise replaces server.log_level.
Result<Config> Load(const Sources& sources, const EnvLookup& env);

// Parses one TOML document (already read) and checks it; used by Load and by tests. Besides the
// env:NAME variables the document names, reads only OTEL_EXPORTER_OTLP_ENDPOINT (when
// telemetry.otlp_endpoint is absent; the resolved endpoint lands in telemetry.otlp_endpoint).
Result<Config> Parse(const std::string& toml_text, const EnvLookup& env);

// "off", "error", "warn", "info", "debug", "trace"; nullopt for anything else.
std::optional<LogLevel> ParseLogLevel(std::string_view name);

// OPS-020, for the store to call once it has read the primary database's clock at startup:
// refuses when that clock is negative or when clock_ns + value x 10^9 does not fit a signed
// 64-bit nanosecond count for a retention key; the error names that `retention.*` key.
Status CheckRetentionFitsClock(const RetentionConfig& retention, int64_t clock_ns);

// The same rule for push.recipient_ttl_seconds (PUSH section 12), naming that key.
Status CheckPushTtlFitsClock(const PushConfig& push, int64_t clock_ns);

}  // namespace xb::config
