#include "telemetry/logger.h"

#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <type_traits>

namespace xb::telemetry {
namespace {

constexpr auto kFieldNames = std::to_array<std::string_view>({
    "request_id",
    "identifier",
    "method",
    "duration_ms",
    "request_size_bytes",
    "response_size_bytes",
    "grpc_code",
    "trace_id",
    "event",
    "error",
    "key",
    "address",
    "principal",
    "reason",
    "host",
    "version",
    "count",
});
static_assert(kFieldNames.size() == static_cast<size_t>(LogField::kCount) + 1);

std::string_view LevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kError:
      return "error";
    case LogLevel::kWarn:
      return "warn";
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kDebug:
      return "debug";
    case LogLevel::kTrace:
      return "trace";
    case LogLevel::kOff:
      break;
  }
  return "off";
}

bool IsLowerHex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }

bool IsCanonicalUuid(std::string_view s) {
  if (s.size() != 36) {
    return false;
  }
  for (size_t i = 0; i < s.size(); ++i) {
    const bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash ? s[i] != '-' : !IsLowerHex(s[i])) {
      return false;
    }
  }
  return true;
}

bool IsTraceId(std::string_view s) {
  if (s.size() != 32) {
    return false;
  }
  bool nonzero = false;
  for (char c : s) {
    if (!IsLowerHex(c)) {
      return false;
    }
    nonzero = nonzero || c != '0';
  }
  return nonzero;  // W3C Trace Context: the all-zero id is invalid
}

// Length of the valid UTF-8 sequence at the start of `s`, or 0 when it is not one (overlong
// forms, surrogates and code points above U+10FFFF are invalid).
size_t Utf8SequenceLength(std::string_view s) {
  const auto b0 = static_cast<unsigned char>(s[0]);
  size_t len;
  uint32_t cp;
  if (b0 < 0x80) {
    return 1;
  } else if ((b0 & 0xE0) == 0xC0) {
    len = 2;
    cp = b0 & 0x1F;
  } else if ((b0 & 0xF0) == 0xE0) {
    len = 3;
    cp = b0 & 0x0F;
  } else if ((b0 & 0xF8) == 0xF0) {
    len = 4;
    cp = b0 & 0x07;
  } else {
    return 0;
  }
  if (s.size() < len) {
    return 0;
  }
  for (size_t i = 1; i < len; ++i) {
    const auto b = static_cast<unsigned char>(s[i]);
    if ((b & 0xC0) != 0x80) {
      return 0;
    }
    cp = (cp << 6) | (b & 0x3F);
  }
  static constexpr std::array<uint32_t, 5> kMinForLength = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMinForLength[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
    return 0;
  }
  return len;
}

// Appends `s` as the inside of a JSON string: quote, backslash and control characters escaped,
// invalid UTF-8 replaced by U+FFFD so that every line is valid JSON (RFC 8259 section 7).
void AppendEscaped(std::string_view s, std::string* out) {
  static constexpr char kHex[] = "0123456789abcdef";
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {
      const size_t len = Utf8SequenceLength(s.substr(i));
      if (len == 0) {
        out->append("\xEF\xBF\xBD");  // U+FFFD
        ++i;
      } else {
        out->append(s.substr(i, len));
        i += len;
      }
      continue;
    }
    switch (c) {
      case '"':
        out->append("\\\"");
        break;
      case '\\':
        out->append("\\\\");
        break;
      case '\n':
        out->append("\\n");
        break;
      case '\r':
        out->append("\\r");
        break;
      case '\t':
        out->append("\\t");
        break;
      default:
        if (c < 0x20 || c == 0x7F) {
          out->append("\\u00");
          out->push_back(kHex[c >> 4]);
          out->push_back(kHex[c & 0xF]);
        } else {
          out->push_back(static_cast<char>(c));
        }
    }
    ++i;
  }
}

// logfmt: a value is quoted when it is empty or holds a space, '=', '"', '\' or any byte that is
// not printable ASCII; quoted values use the JSON escapes.
bool NeedsQuotes(std::string_view s) {
  if (s.empty()) {
    return true;
  }
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c <= 0x20 || c >= 0x7F || c == '=' || c == '"' || c == '\\') {
      return true;
    }
  }
  return false;
}

void AppendText(std::string_view s, LogFormat format, std::string* out) {
  if (format == LogFormat::kJson || NeedsQuotes(s)) {
    out->push_back('"');
    AppendEscaped(s, out);
    out->push_back('"');
  } else {
    out->append(s);
  }
}

template <typename T>
void AppendInteger(T v, std::string* out) {
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  out->append(buf, static_cast<size_t>(end - buf));
}

void AppendDouble(double v, LogFormat format, std::string* out) {
  if (!std::isfinite(v)) {
    if (format == LogFormat::kJson) {
      out->append("null");  // JSON has no NaN or infinity
    } else {
      out->append(std::isnan(v) ? "NaN" : (v > 0 ? "+Inf" : "-Inf"));
    }
    return;
  }
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  out->append(buf, static_cast<size_t>(end - buf));
}

// RFC 3339 UTC with milliseconds: 2024-05-01T12:34:56.789Z.
void AppendTime(std::chrono::system_clock::time_point t, std::string* out) {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch());
  auto secs = static_cast<std::time_t>(ms.count() / 1000);
  long millis = static_cast<long>(ms.count() % 1000);
  if (millis < 0) {
    millis += 1000;
    --secs;
  }
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[40];
  const int n =
      std::snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ", tm.tm_year + 1900,
                    tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, millis);
  out->append(buf, n > 0 ? static_cast<size_t>(n) : 0);
}

void AppendKey(std::string_view key, LogFormat format, bool first, std::string* out) {
  if (format == LogFormat::kJson) {
    if (!first) {
      out->push_back(',');
    }
    out->push_back('"');
    out->append(key);  // keys are fixed snake_case words: nothing to escape
    out->append("\":");
  } else {
    if (!first) {
      out->push_back(' ');
    }
    out->append(key);
    out->push_back('=');
  }
}

void AppendValue(const Field::Value& value, LogFormat format, std::string* out) {
  struct Visitor {
    LogFormat format;
    std::string* out;
    void operator()(int64_t v) const { AppendInteger(v, out); }
    void operator()(uint64_t v) const { AppendInteger(v, out); }
    void operator()(double v) const { AppendDouble(v, format, out); }
    void operator()(std::string_view v) const { AppendText(v, format, out); }
    void operator()(const std::string& v) const { AppendText(v, format, out); }
  };
  std::visit(Visitor{format, out}, value);
}

// The record of a line: the same message and fields, values copied.
LogRecordData RecordOf(std::chrono::system_clock::time_point now, LogLevel level, Literal message,
                       std::initializer_list<Field> fields) {
  LogRecordData record;
  record.time_unix_ns = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count());
  record.level = level;
  record.message = message.view();
  record.fields.reserve(fields.size());
  for (const Field& field : fields) {
    LogRecordData::Value value = std::visit(
        [](const auto& v) -> LogRecordData::Value {
          if constexpr (std::is_same_v<std::decay_t<decltype(v)>, std::string_view>) {
            return std::string(v);
          } else {
            return v;
          }
        },
        field.value());
    if (field.name() == LogField::kTraceId) {
      if (const auto* hex = std::get_if<std::string>(&value)) {
        record.trace_id = TraceIdFromHex(*hex);
      }
    }
    record.fields.emplace_back(LogFieldName(field.name()), std::move(value));
  }
  return record;
}

}  // namespace

std::string_view LogFieldName(LogField field) {
  const auto index = static_cast<size_t>(field);
  XB_CHECK(index < kFieldNames.size());
  return kFieldNames[index];
}

Field Field::RequestId(std::string_view uuid) {
  return Field(LogField::kRequestId, IsCanonicalUuid(uuid) ? uuid : std::string_view("invalid"));
}
Field Field::Identifier(std::string_view deployment_identifier) {
  return Field(LogField::kIdentifier, deployment_identifier);
}
Field Field::Method(Rpc rpc, std::string_view served_path) {
  // implements: OPS-018 (method is the request path), OPS-014 (only paths our code registered)
  const Route& route = RouteOf(rpc);
  if (route.rpc != Rpc::kUnknown) {
    return Field(LogField::kMethod, route.path);
  }
  return Field(LogField::kMethod, served_path.empty() ? std::string_view("unknown") : served_path);
}
Field Field::DurationMs(double ms) {
  return Field(LogField::kDurationMs, std::isfinite(ms) ? std::round(ms * 1000.0) / 1000.0 : ms);
}
Field Field::RequestSizeBytes(uint64_t n) { return Field(LogField::kRequestSizeBytes, n); }
Field Field::ResponseSizeBytes(uint64_t n) { return Field(LogField::kResponseSizeBytes, n); }
Field Field::GrpcCode(StatusCode code) { return Field(LogField::kGrpcCode, StatusCodeName(code)); }
Field Field::TraceId(std::string_view trace_id) {
  return Field(LogField::kTraceId, IsTraceId(trace_id) ? trace_id : std::string_view("invalid"));
}
Field Field::Event(Literal word) { return Field(LogField::kEvent, word.view()); }
Field Field::Error(Literal text) { return Field(LogField::kError, text.view()); }
Field Field::Error(const Status& status) { return Field(LogField::kError, status.ToString()); }
Field Field::Key(std::string_view config_key) { return Field(LogField::kKey, config_key); }
Field Field::Address(std::string_view host_port) { return Field(LogField::kAddress, host_port); }
Field Field::Principal(std::string_view api_key_name) {
  return Field(LogField::kPrincipal, api_key_name);
}
Field Field::Reason(AuthRejectionReason reason) { return Field(LogField::kReason, Word(reason)); }
Field Field::Reason(Literal word) { return Field(LogField::kReason, word.view()); }
Field Field::Reason(DbFailureCause cause) { return Field(LogField::kReason, Word(cause)); }
Field Field::Host(std::string_view host) { return Field(LogField::kHost, host); }
Field Field::Version(std::string_view build_version) {
  return Field(LogField::kVersion, build_version);
}
Field Field::Count(uint64_t n) { return Field(LogField::kCount, n); }

Logger::Logger(LoggerOptions options)
    : level_(options.level),
      format_(options.format),
      sink_(options.sink ? std::move(options.sink)
                         : [](std::string_view line) {
                             std::fwrite(line.data(), 1, line.size(), stdout);
                             std::fflush(stdout);
                           }),
      clock_(options.clock ? std::move(options.clock) : [] {
        return std::chrono::system_clock::now();
      }) {}

bool Logger::Enabled(LogLevel level) const {
  return level != LogLevel::kOff && level_ != LogLevel::kOff && level <= level_;
}

void Logger::Log(LogLevel level, Literal message, std::initializer_list<Field> fields) {
  if (!Enabled(level)) {
    return;
  }
  std::string line;
  line.reserve(256);
  if (format_ == LogFormat::kJson) {
    line.push_back('{');
  }
  AppendKey("time", format_, /*first=*/true, &line);
  if (format_ == LogFormat::kJson) {
    line.push_back('"');
  }
  const std::chrono::system_clock::time_point now = clock_();
  AppendTime(now, &line);
  if (format_ == LogFormat::kJson) {
    line.push_back('"');
  }
  AppendKey("level", format_, /*first=*/false, &line);
  AppendText(LevelName(level), format_, &line);
  AppendKey("msg", format_, /*first=*/false, &line);
  AppendText(message.view(), format_, &line);
  for (const Field& field : fields) {
    AppendKey(LogFieldName(field.name()), format_, /*first=*/false, &line);
    AppendValue(field.value(), format_, &line);
  }
  if (format_ == LogFormat::kJson) {
    line.push_back('}');
  }
  line.push_back('\n');

  if (LogRecordSink* records = record_sink_.load(std::memory_order_acquire)) {
    records->SubmitLog(RecordOf(now, level, message, fields));
  }
  std::lock_guard<std::mutex> lock(mu_);
  sink_(line);
}

void Logger::Error(Literal message, std::initializer_list<Field> fields) {
  Log(LogLevel::kError, message, fields);
}
void Logger::Warn(Literal message, std::initializer_list<Field> fields) {
  Log(LogLevel::kWarn, message, fields);
}
void Logger::Info(Literal message, std::initializer_list<Field> fields) {
  Log(LogLevel::kInfo, message, fields);
}
void Logger::Debug(Literal message, std::initializer_list<Field> fields) {
  Log(LogLevel::kDebug, message, fields);
}
void Logger::Trace(Literal message, std::initializer_list<Field> fields) {
  Log(LogLevel::kTrace, message, fields);
}

void Logger::Completion(const CompletionEvent& e) {
  if (!Enabled(LogLevel::kInfo)) {
    return;
  }
  if (e.trace_id.empty()) {
    Log(LogLevel::kInfo, "request completed",
        {Field::RequestId(e.request_id), Field::Identifier(e.identifier),
         Field::Method(e.rpc, e.served_path), Field::DurationMs(e.duration_ms),
         Field::RequestSizeBytes(e.request_size_bytes),
         Field::ResponseSizeBytes(e.response_size_bytes), Field::GrpcCode(e.grpc_code)});
  } else {
    Log(LogLevel::kInfo, "request completed",
        {Field::RequestId(e.request_id), Field::Identifier(e.identifier),
         Field::Method(e.rpc, e.served_path), Field::DurationMs(e.duration_ms),
         Field::RequestSizeBytes(e.request_size_bytes),
         Field::ResponseSizeBytes(e.response_size_bytes), Field::GrpcCode(e.grpc_code),
         Field::TraceId(e.trace_id)});
  }
}

}  // namespace xb::telemetry
