// The OTLP/HTTP protobuf bodies of an export: an
// opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest holding one ResourceSpans
// (the process's resource attributes, OPS-013) with one ScopeSpans of the given spans, and the
// collector.logs.v1.ExportLogsServiceRequest of log records, framed the same way. Field
// numbers are those of opentelemetry-proto (trace/v1, common/v1, resource/v1, collector/trace/v1);
// proto/opentelemetry/ holds the subset, which the tests decode with.
//
// Hand-encoded: the message is small and fixed, and telemetry/ depends only on base/ (no
// generated code in the serving library). Pure functions; thread-safe.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/byte_buffer.h"
#include "telemetry/log_record.h"
#include "telemetry/span.h"

namespace xb::telemetry {

// Resource attributes in export order: service.name, service.version, xmtp.backend.identifier,
// then the operator's telemetry.resource_attributes.
using ResourceAttributes = std::vector<std::pair<std::string, std::string>>;

// The instrumentation scope name of every exported span.
inline constexpr std::string_view kScopeName = "xmtp-backend";

// The encoder the exporter thread keeps: the resource is encoded once, and its buffers keep their
// capacity from batch to batch (a batch body is ~100 KiB; reallocating it each time costs page
// faults). One thread at a time.
class OtlpEncoder {
 public:
  explicit OtlpEncoder(const ResourceAttributes& resource);
  ~OtlpEncoder();
  OtlpEncoder(const OtlpEncoder&) = delete;
  OtlpEncoder& operator=(const OtlpEncoder&) = delete;

  // The request body for `spans`; valid until the next Encode or EncodeLogs.
  std::string_view Encode(std::span<const SpanData> spans);
  // The ExportLogsServiceRequest body for `records`; valid until the next Encode or EncodeLogs.
  std::string_view EncodeLogs(std::span<const LogRecordData> records);

 private:
  struct Scratch;
  template <typename Item, typename SizeFn, typename WriteFn>
  std::string_view EncodeBatch(std::span<const Item> items, SizeFn size_of, WriteFn write);
  std::unique_ptr<Scratch> scratch_;
  ByteBuffer body_;  // grows without zero-filling; written in place
};

// One-off encodings (tests).
std::string EncodeExportTraceRequest(const ResourceAttributes& resource,
                                     std::span<const SpanData> spans);
std::string EncodeExportLogsRequest(const ResourceAttributes& resource,
                                    std::span<const LogRecordData> records);

}  // namespace xb::telemetry
