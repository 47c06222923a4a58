#include "config/load.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <system_error>
#include <utility>

#include "config/checks.h"
#include "config/config_error.h"
#include "config/document.h"

namespace xb::config {
namespace {

constexpr size_t kMaxFileBytes = 16 * 1024 * 1024;
constexpr uint64_t kNsPerSecond = 1000000000;

// True when `text` names something on the file system (a file, directory, dangling symlink...).
// Uses the non-throwing std::filesystem overloads.
bool NamesFileSystemEntry(const std::string& text) {
  if (text.empty() || text.find('\0') != std::string::npos) {
    return false;
  }
  std::error_code error;
  std::filesystem::file_status status = std::filesystem::symlink_status(text, error);
  return !error && std::filesystem::exists(status);
}

// Reads a whole file (or pipe) of at most kMaxFileBytes; nullopt on any failure.
std::optional<std::string> ReadWholeFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return std::nullopt;
  }
  std::string contents;
  char buffer[65536];
  bool ok = true;
  while (true) {
    ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n < 0 || contents.size() + static_cast<size_t>(n) > kMaxFileBytes) {
      ok = false;
      break;
    }
    if (n == 0) {
      break;
    }
    contents.append(buffer, static_cast<size_t>(n));
  }
  ::close(fd);
  if (!ok) {
    return std::nullopt;
  }
  return contents;
}

// True when base_ns + seconds x 10^9 fits a signed 64-bit nanosecond count.
bool FitsAfter(int64_t base_ns, uint64_t seconds) {
  if (base_ns < 0) {
    return false;
  }
  auto headroom = static_cast<uint64_t>(std::numeric_limits<int64_t>::max() - base_ns);
  return seconds <= headroom / kNsPerSecond;
}

}  // namespace

EnvLookup ProcessEnv() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* value = std::getenv(name.c_str());
    if (value == nullptr) {
      return std::nullopt;
    }
    return std::string(value);
  };
}

std::optional<LogLevel> ParseLogLevel(std::string_view name) {
  if (name == "off") {
    return LogLevel::kOff;
  }
  if (name == "error") {
    return LogLevel::kError;
  }
  if (name == "warn") {
    return LogLevel::kWarn;
  }
  if (name == "info") {
    return LogLevel::kInfo;
  }
  if (name == "debug") {
    return LogLevel::kDebug;
  }
  if (name == "trace") {
    return LogLevel::kTrace;
  }
  return std::nullopt;
}

// implements: CONF section 1.1 (sources)
Result<Config> Load(const Sources& sources, const EnvLookup& env) {
  std::optional<LogLevel> level_override;
  if (sources.log_level.has_value()) {
    level_override = ParseLogLevel(*sources.log_level);
    if (!level_override.has_value()) {
      return ConfigError("--log-level", "must be one of off, error, warn, info, debug, trace");
    }
  }
  if (sources.inline_text.has_value() && sources.file_path.has_value()) {
    return ConfigError("--config/--config-file", "give the inline document or the file, not both");
  }
  std::optional<std::string> inline_text = sources.inline_text;
  std::string_view inline_source = "--config";
  if (!inline_text.has_value()) {
    std::optional<std::string> from_env = env("XMTP_CONFIG");
    if (from_env.has_value()) {
      // CONF section 7 point 8: an inline document in the environment and a file are two
      // sources, so refuse rather than pick one silently.
      if (sources.file_path.has_value()) {
        return ConfigError("XMTP_CONFIG/--config-file",
                           "XMTP_CONFIG is set in the environment together with --config-file; "
                           "use one source");
      }
      inline_text = std::move(from_env);
      inline_source = "XMTP_CONFIG";
    }
  }

  std::string text;
  if (inline_text.has_value()) {
    if (NamesFileSystemEntry(*inline_text)) {
      return ConfigError(inline_source,
                         "the inline configuration names a file-system entry; pass a file with "
                         "--config-file");
    }
    text = std::move(*inline_text);
  } else if (sources.file_path.has_value()) {
    std::optional<std::string> contents = ReadWholeFile(*sources.file_path);
    if (!contents.has_value()) {
      return ConfigError("--config-file", "could not read configuration file");
    }
    text = std::move(*contents);
  } else {
    return ConfigError("--config/XMTP_CONFIG/--config-file",
                       "no configuration: pass --config, set XMTP_CONFIG, or pass --config-file");
  }

  XB_ASSIGN_OR_RETURN(Config config, Parse(text, env));
  if (level_override.has_value()) {
    config.server.log_level = *level_override;
  }
  return config;
}

Result<Config> Parse(const std::string& toml_text, const EnvLookup& env) {
  XB_ASSIGN_OR_RETURN(ParsedDocument doc, ReadDocument(toml_text, env));
  XB_RETURN_IF_ERROR(CheckDocument(&doc, env));
  return std::move(doc.config);
}

// implements: OPS-020
Status CheckRetentionFitsClock(const RetentionConfig& retention, int64_t clock_ns) {
  struct Key {
    std::string_view key;
    uint64_t seconds;
  };
  for (const Key& k : {Key{"retention.group_message_seconds", retention.group_message_seconds},
                       Key{"retention.welcome_seconds", retention.welcome_seconds},
                       Key{"retention.key_package_seconds", retention.key_package_seconds}}) {
    if (clock_ns < 0) {
      return ConfigError(k.key, "the primary database clock reads negative");
    }
    if (!FitsAfter(clock_ns, k.seconds)) {
      return ConfigError(k.key,
                         "an expiry computed from the primary database clock would not fit a "
                         "signed 64-bit nanosecond timestamp");
    }
  }
  return Status::Ok();
}

Status CheckPushTtlFitsClock(const PushConfig& push, int64_t clock_ns) {
  if (clock_ns < 0) {
    return ConfigError("push.recipient_ttl_seconds", "the database clock reads negative");
  }
  if (!FitsAfter(clock_ns, push.recipient_ttl_seconds)) {
    return ConfigError("push.recipient_ttl_seconds",
                       "the database clock plus this period would not fit a signed 64-bit "
                       "nanosecond timestamp");
  }
  return Status::Ok();
}

}  // namespace xb::config
