// The OTLP/HTTP protobuf body of a trace export: an
// opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest holding one ResourceSpans
// (the process's resource attributes, OPS-013) with one ScopeSpans of the given spans. Field
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

  // The request body for `spans`; valid until the next Encode.
  std::string_view Encode(std::span<const SpanData> spans);

 private:
  struct Scratch;
  std::unique_ptr<Scratch> scratch_;
  ByteBuffer body_;  // grows without zero-filling; written in place
};

// One-off encoding (tests).
std::string EncodeExportTraceRequest(const ResourceAttributes& resource,
                                     std::span<const SpanData> spans);

}  // namespace xb::telemetry
