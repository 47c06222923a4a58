#include "telemetry/tracer.h"

#include <sys/random.h>

#include <algorithm>
#include <cstring>
#include <random>

namespace xb::telemetry {
namespace {

std::mt19937_64& Generator() {
  thread_local std::mt19937_64 generator = [] {
    uint64_t seed[4] = {};
    if (getrandom(seed, sizeof(seed), 0) != static_cast<ssize_t>(sizeof(seed))) {
      std::random_device device;
      for (auto& s : seed) {
        s = (static_cast<uint64_t>(device()) << 32) | device();
      }
    }
    std::seed_seq seq{seed[0], seed[1], seed[2], seed[3]};
    return std::mt19937_64(seq);
  }();
  return generator;
}

// A random id, never all zero (an all-zero id is invalid in W3C and OTLP).
template <size_t N>
void RandomId(std::array<uint8_t, N>* id) {
  do {
    for (size_t i = 0; i < N; i += 8) {
      const uint64_t v = Generator()();
      std::memcpy(id->data() + i, &v, std::min<size_t>(8, N - i));
    }
  } while (AllZero(*id));
}

// The wall-clock time of steady instant `at`, in Unix nanoseconds. Each thread keeps the offset
// between the two clocks and reads the wall clock again only once a second (so that clock steps
// and slewing still reach the spans), not once per span.
uint64_t UnixNanosAt(std::chrono::steady_clock::time_point at) {
  struct Anchor {
    std::chrono::nanoseconds offset{0};
    std::chrono::steady_clock::time_point refresh_at{};  // the epoch: refresh on first use
  };
  thread_local Anchor anchor;
  if (at >= anchor.refresh_at) {
    const auto steady = std::chrono::steady_clock::now();
    const auto wall = std::chrono::system_clock::now().time_since_epoch();
    anchor.offset = std::chrono::duration_cast<std::chrono::nanoseconds>(wall) -
                    std::chrono::duration_cast<std::chrono::nanoseconds>(steady.time_since_epoch());
    anchor.refresh_at = steady + std::chrono::seconds(1);
  }
  const auto unix_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(at.time_since_epoch()) + anchor.offset;
  return static_cast<uint64_t>(std::max<int64_t>(0, unix_ns.count()));
}

}  // namespace

Tracer::Tracer(Metrics& metrics, TracerOptions options)
    : metrics_(metrics), sample_ratio_(options.sample_ratio), sink_(options.sink) {}

Span Tracer::Begin(Operation operation, SpanKind kind, const SpanContext& parent,
                   std::chrono::steady_clock::time_point start) {
  Span span;
  span.tracer_ = this;
  span.start_ = start;
  span.data_.operation = operation;
  span.data_.kind = kind;
  const bool has_parent = parent.valid();
  if (sink_ == nullptr) {
    // Nothing is exported: a span only carries its caller's trace id (for the completion log)
    // and its duration. No ids are generated.
    if (has_parent) {
      span.data_.context.trace_id = parent.trace_id;
    }
    return span;
  }
  SpanContext& context = span.data_.context;
  if (has_parent) {
    context.trace_id = parent.trace_id;
  } else {
    RandomId(&context.trace_id);
  }
  const bool sampled = ShouldSample(parent, context.trace_id, sample_ratio_);
  context.flags = static_cast<uint8_t>((has_parent ? parent.flags : 0) & ~kTraceFlagSampled);
  // An unsampled span gets an id too, so its children inherit "not sampled" instead of starting
  // root traces of their own.
  RandomId(&context.span_id);
  if (sampled) {
    context.flags |= kTraceFlagSampled;
    span.recording_ = true;
    span.data_.start_unix_ns = UnixNanosAt(start);
    if (has_parent) {
      span.data_.parent_span_id = parent.span_id;
      span.data_.parent_remote = parent.remote;
    }
  }
  return span;
}

Span Tracer::StartRequest(Rpc rpc, const std::string* traceparent, const std::string* tracestate) {
  SpanContext parent;
  if (traceparent != nullptr) {
    if (auto parsed = ParseTraceparent(*traceparent)) {
      parent = *parsed;
    }
  }
  Span span =
      Begin(RequestOperation(rpc), SpanKind::kServer, parent, std::chrono::steady_clock::now());
  span.data_.rpc = rpc;
  if (span.recording_ && parent.valid() && tracestate != nullptr && !tracestate->empty() &&
      ValidTracestate(*tracestate)) {
    span.data_.trace_state = *tracestate;
  }
  return span;
}

Span Tracer::Start(Operation operation, const SpanContext& parent) {
  return Begin(operation, SpanKind::kInternal, parent, std::chrono::steady_clock::now());
}

Span Tracer::Start(Operation operation, const SpanContext& parent,
                   std::chrono::steady_clock::time_point start) {
  return Begin(operation, SpanKind::kInternal, parent, start);
}

void Tracer::Finish(Span& span, std::chrono::steady_clock::time_point end) {
  const auto elapsed = std::max(end - span.start_, std::chrono::steady_clock::duration::zero());
  const double seconds = std::chrono::duration<double>(elapsed).count();
  // implements: OPS-019 — the metric for every operation span, sampled or not.
  metrics_.ObserveOperation(span.data_.operation, span.data_.error, seconds);
  if (span.recording_ && sink_ != nullptr) {
    span.data_.end_unix_ns =
        span.data_.start_unix_ns +
        static_cast<uint64_t>(
            std::chrono::duration_cast<std::chrono::nanoseconds>(elapsed).count());
    sink_->Submit(std::move(span.data_));
  }
}

}  // namespace xb::telemetry
