// LogRecordData: one log line as data, for the OTLP log export (CONF telemetry.otlp_logs). The
// Logger builds it from the same message and fields as the line it writes, so an exported record
// carries nothing a stdout line would not (OPS-014). Values are owned copies: a record outlives
// the log call that made it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "telemetry/trace_context.h"

namespace xb::telemetry {

enum class LogLevel : uint8_t { kOff, kError, kWarn, kInfo, kDebug, kTrace };

// Field names are LogField values (logger.h); kept as their words here so that the encoder needs
// nothing else.
struct LogRecordData {
  uint64_t time_unix_ns = 0;
  LogLevel level = LogLevel::kInfo;
  std::string_view message;  // a compile-time literal (Logger's Literal): static storage
  using Value = std::variant<int64_t, uint64_t, double, std::string>;
  std::vector<std::pair<std::string_view, Value>> fields;  // names: static LogField words
  TraceIdBytes trace_id{};  // from a valid trace_id field; all zero: none
};

// Receives each record as its line is written. SubmitLog must not block (the exporter queues or
// drops) and may be called from any thread.
class LogRecordSink {
 public:
  virtual ~LogRecordSink() = default;
  virtual void SubmitLog(LogRecordData&& record) = 0;
};

}  // namespace xb::telemetry
