// Tracer: starts the spans of the span catalogue (OPS section 5), decides sampling (CONF
// [telemetry] sample_ratio: parent-based, then the ratio for root traces) and hands sampled spans
// to a SpanSink (the OTLP exporter). One Tracer lives for the whole process; it outlives every
// span it starts.
//
// With no sink (no OTLP endpoint resolved, OPS-022) nothing is sampled, so no span is exported
// and no span allocates, but every span still records xmtp_operation_duration_seconds and a
// caller's trace context still names the request's trace (for the completion log's trace_id).
//
// Thread-safety: every method may be called from any thread concurrently. Nothing suspends.
#pragma once

#include <chrono>
#include <string>

#include "telemetry/metrics.h"
#include "telemetry/span.h"
#include "telemetry/trace_context.h"

namespace xb::telemetry {

// Receives sampled spans as they end. Submit must not block (the exporter queues or drops).
class SpanSink {
 public:
  virtual ~SpanSink() = default;
  virtual void Submit(SpanData&& span) = 0;
};

struct TracerOptions {
  double sample_ratio = 1.0;  // telemetry.sample_ratio, 0.0 to 1.0
  SpanSink* sink = nullptr;   // nullptr: nothing is exported (or sampled)
};

class Tracer {
 public:
  Tracer(Metrics& metrics, TracerOptions options);
  Tracer(const Tracer&) = delete;
  Tracer& operator=(const Tracer&) = delete;

  // The request span of one gRPC request, named by the route table (OPS-019), a child of the
  // caller's trace when `traceparent` parses (OPS-012); `tracestate` is kept only then and only
  // when it is valid. Either pointer may be null (header absent). The span starts at `start`
  // (not later than now): the dispatcher passes the instant its call was made, read already.
  // implements: OPS-012
  Span StartRequest(Rpc rpc, const std::string* traceparent, const std::string* tracestate,
                    std::chrono::steady_clock::time_point start);

  // A span under `parent` (an invalid parent starts a new root trace, sampled by the ratio).
  Span Start(Operation operation, const SpanContext& parent);
  // The same, for an operation that began at `start` (not later than now), measured elsewhere.
  Span Start(Operation operation, const SpanContext& parent,
             std::chrono::steady_clock::time_point start);

  // Called by Span::End / Span::EndAt.
  void Finish(Span& span, std::chrono::steady_clock::time_point end);

 private:
  Span Begin(Operation operation, SpanKind kind, const SpanContext& parent,
             std::chrono::steady_clock::time_point start);

  // Const after construction.
  Metrics& metrics_;
  const double sample_ratio_;
  SpanSink* const sink_;
};

}  // namespace xb::telemetry
