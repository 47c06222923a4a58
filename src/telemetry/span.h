// Span: one operation of the span catalogue (OPS section 5), measured from creation to End().
//
// Every span, sampled or not, records xmtp_operation_duration_seconds{operation, status} when it
// ends (OPS-019: the metric never depends on sampling). A sampled span also becomes a SpanData
// handed to the tracer's sink (the OTLP exporter).
//
// What a span may carry is fixed by construction (OPS-014): its name is an Operation (a span
// catalogue word), its attributes are integers under the names of IntAttribute, the route table
// labels of its Rpc, and its error flag. There is no way to attach a string taken from a request.
// The only request-supplied data a span holds is the trace context of OPS-012 (traceparent ids
// and a tracestate that passed its grammar check).
//
// A Span is used on one thread at a time (it is moved into the object whose operation it
// measures); different spans may end on different threads. Nothing suspends. A span that is not
// sampled allocates nothing.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "telemetry/route.h"
#include "telemetry/trace_context.h"
#include "telemetry/vocabulary.h"

namespace xb::telemetry {

class Tracer;

// OTLP Span.SpanKind values used here.
enum class SpanKind : uint8_t { kInternal = 1, kServer = 2 };

// The integer attributes a span may carry: counts, sizes and codes only.
enum class IntAttribute : uint8_t {
  kGrpcStatusCode,  // rpc.grpc.status_code (the numeric gRPC code)
  kRequestBytes,    // xmtp.request.body_bytes
  kResponseBytes,   // xmtp.response.body_bytes
  kEnvelopes,       // xmtp.envelopes (positions of a publish, rows of a fetch)
  kTopics,          // xmtp.topics (count of topics)
  kRows,            // xmtp.rows (rows read by a poll)
};
inline constexpr size_t kIntAttributeCount = static_cast<size_t>(IntAttribute::kRows) + 1;
std::string_view IntAttributeName(IntAttribute attribute);

// A finished, sampled span as the exporter encodes it.
struct SpanData {
  Operation operation = Operation::kRequestUnknown;
  SpanKind kind = SpanKind::kInternal;
  SpanContext context;           // this span's trace id, span id and flags
  SpanIdBytes parent_span_id{};  // all zero: a root span
  bool parent_remote = false;    // the parent came from a traceparent header
  std::string trace_state;       // the caller's validated tracestate (request span only)
  uint64_t start_unix_ns = 0;
  uint64_t end_unix_ns = 0;
  bool error = false;
  std::optional<Rpc> rpc;  // request span (exported with rpc.system; its name holds the route)
  std::array<int64_t, kIntAttributeCount> ints{};
  uint32_t ints_set = 0;  // bit i: ints[i] was set
  // auth.principal (AUTH-028): the name of the operator-configured API key that admitted the
  // request, never anything the caller sent. Empty: none.
  std::string principal;
};

class Span {
 public:
  // An inert span: records nothing, context() is invalid.
  Span() = default;
  Span(Span&& other) noexcept { *this = std::move(other); }
  Span& operator=(Span&& other) noexcept;
  Span(const Span&) = delete;
  Span& operator=(const Span&) = delete;
  ~Span() { End(); }

  // Started and not yet ended.
  bool active() const { return tracer_ != nullptr; }
  // Sampled: will be exported when it ends.
  bool recording() const { return recording_; }
  // This span's context, the parent of its children. Valid whenever the span belongs to a trace
  // (it was sampled, or its parent came from a caller), even after End().
  const SpanContext& context() const { return data_.context; }

  // The span records an error: status ERROR in the export, status="error" in the metric.
  void SetError() { data_.error = true; }
  void Set(IntAttribute attribute, int64_t value);
  // implements: AUTH-028 — the admitting API key's configured name (config, not request data:
  // OPS-014 allows it as the one principal value in telemetry). Only the dispatcher calls this.
  void SetPrincipal(std::string_view api_key_name) {
    if (recording_) {
      data_.principal.assign(api_key_name);
    }
  }

  // Ends the span (at most once; later calls do nothing): observes the duration metric and, when
  // recording, submits the span for export.
  void End();
  // Ends the span as of `end` (an operation timed elsewhere, e.g. inside the store).
  void EndAt(std::chrono::steady_clock::time_point end);

 private:
  friend class Tracer;

  Tracer* tracer_ = nullptr;
  bool recording_ = false;
  std::chrono::steady_clock::time_point start_;
  SpanData data_;
};

}  // namespace xb::telemetry
