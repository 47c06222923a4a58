// The OTLP/HTTP protobuf bodies of an export: an
// opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest holding one ResourceSpans
// (the process's resource attributes, OPS-013) with one ScopeSpans of the given spans, and the
// collector.logs.v1.ExportLogsServiceRequest of log records, framed the same way. Field
// numbers are those of opentelemetry-proto (trace/v1, common/v1, resource/v1, collector/trace/v1);
// proto/opentelemetry/ holds the subset, which the tests decode with.
//
// Hand-encoded: the message is small and fixed, and telemetry/ depends only on base/ (no
// generated code in the serving library).
#pragma once

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

// The framing every request body shares: ExportTraceServiceRequest { resource_spans = 1
// (ResourceSpans { resource = 1; scope_spans = 2 (ScopeSpans { scope = 1; spans = 2 }) }) }, and
// ExportLogsServiceRequest, whose resource_logs, scope_logs and log_records have the same field
// numbers. The items (each with its own tag and length) are written first, room() bytes into a
// buffer; Frame then writes the header just before them, so every byte is written once.
class OtlpFraming {
 public:
  explicit OtlpFraming(const ResourceAttributes& resource);

  // The bytes to leave in front of the items: the longest header Frame writes.
  size_t room() const { return room_; }
  // `items_size` bytes of items start at buffer + room(); returns the whole body, which ends
  // with them.
  std::string_view Frame(char* buffer, size_t items_size) const;

 private:
  std::string resource_field_;  // ResourceSpans.resource = 1 (resource.v1.Resource), whole
  std::string scope_field_;     // ScopeSpans.scope = 1 (InstrumentationScope { name = 1 })
  size_t room_;
};

// Spans encoded as they end (ScopeSpans.spans fields) after room for the framing: one request
// body in the making. Encoding a span when it ends, while its data is still in cache, costs less
// than queueing the SpanData and reading it back on the exporter thread. One thread at a time.
class EncodedSpans {
 public:
  // The exporter's batches take huge pages (ByteBuffer::Pages::kHuge): it splices them.
  explicit EncodedSpans(const OtlpFraming& framing,
                        ByteBuffer::Pages pages = ByteBuffer::Pages::kSmall)
      : framing_(framing), buffer_(pages) {}

  void Append(const SpanData& span);
  size_t count() const { return count_; }
  // Forgets the spans, keeping the buffer's capacity.
  void Clear() {
    count_ = 0;
    items_size_ = 0;
  }
  // Appends `count` spans already encoded as items (StagedSpans::Items).
  void AppendEncoded(std::string_view items, size_t count);
  // The request body; valid until the next Append or Clear.
  std::string_view Frame();

 private:
  const OtlpFraming& framing_;
  ByteBuffer buffer_;  // room, then the spans; grows without zero-filling
  size_t items_size_ = 0;
  size_t count_ = 0;
};

// One span as an item of ScopeSpans.spans (its tag, length and fields), as EncodedSpans holds
// them, for a caller that keeps its own buffer (the exporter's per-thread stages). SpanItemBound is
// a cheap upper bound of the bytes WriteSpanItem stores (it writes the fields before it knows
// their length); WriteSpanItem, given that bound, writes the item at `out` and returns its size.
size_t SpanItemBound(const SpanData& span);
size_t WriteSpanItem(const SpanData& span, size_t bound, char* out);

// The ExportLogsServiceRequest body for `records`, written into `buffer` (which keeps its
// capacity from batch to batch); valid until `buffer` is written again.
std::string_view EncodeLogs(const OtlpFraming& framing, std::span<const LogRecordData> records,
                            ByteBuffer& buffer);

// One-off encodings (tests).
std::string EncodeExportTraceRequest(const ResourceAttributes& resource,
                                     std::span<const SpanData> spans);
std::string EncodeExportLogsRequest(const ResourceAttributes& resource,
                                    std::span<const LogRecordData> records);

}  // namespace xb::telemetry
