#include "telemetry/tracer.h"

#include <sys/random.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <random>

namespace xb::telemetry {
namespace {

// The ids' random source: xoshiro256++ (Blackman and Vigna), one per thread, seeded from
// getrandom. Trace and span ids must not collide, and need not be secret (W3C Trace Context
// asks for randomness, not unpredictability). Two spans start per request, three or four ids:
// this costs a few instructions an id, where std::mt19937_64 cost about thirty and rewrote its
// 2.5 KB of state every 312 ids.
class IdSource {
 public:
  IdSource() {
    if (getrandom(state_, sizeof(state_), 0) != static_cast<ssize_t>(sizeof(state_))) {
      std::random_device device;
      for (auto& s : state_) {
        s = (static_cast<uint64_t>(device()) << 32) | device();
      }
    }
    if ((state_[0] | state_[1] | state_[2] | state_[3]) == 0) {
      state_[0] = 1;  // the one state xoshiro never leaves
    }
  }

  uint64_t Next() {
    const uint64_t result = std::rotl(state_[0] + state_[3], 23) + state_[0];
    const uint64_t t = state_[1] << 17;
    state_[2] ^= state_[0];
    state_[3] ^= state_[1];
    state_[1] ^= state_[2];
    state_[0] ^= state_[3];
    state_[2] ^= t;
    state_[3] = std::rotl(state_[3], 45);
    return result;
  }

 private:
  uint64_t state_[4];
};

IdSource& Ids() {
  thread_local IdSource source;
  return source;
}

// A random id, never all zero (an all-zero id is invalid in W3C and OTLP).
template <size_t N>
void RandomId(std::array<uint8_t, N>* id) {
  static_assert(N % 8 == 0);
  IdSource& source = Ids();
  uint64_t words[N / 8];
  uint64_t any;
  do {
    any = 0;
    for (auto& word : words) {
      word = source.Next();
      any |= word;
    }
  } while (any == 0);
  std::memcpy(id->data(), words, N);
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

Span Tracer::StartRequest(Rpc rpc, const std::string* traceparent, const std::string* tracestate,
                          std::chrono::steady_clock::time_point start) {
  SpanContext parent;
  if (traceparent != nullptr) {
    if (auto parsed = ParseTraceparent(*traceparent)) {
      parent = *parsed;
    }
  }
  Span span = Begin(RequestOperation(rpc), SpanKind::kServer, parent, start);
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
