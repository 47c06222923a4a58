// bench/span_encode_bench.cc: the serving thread's share of exporting a span, encoding it
// (EncodedSpans::Append, telemetry/otlp_encoding.h: the same writer the exporter's per-thread
// stages use) each time a sampled span ends. The spans are those of one GetConfiguration (the
// request span with rpc.system and three integer attributes; the rpc.* handler span under it)
// and of a publish stage. The batch is cleared every 4096 spans as the exporter does, so its
// buffer is as large as in the server.
//
//   cmake --build build --target span_encode_bench && taskset -c 1 build/bench/span_encode_bench
#include <benchmark/benchmark.h>

#include "telemetry/otlp_encoding.h"
#include "telemetry/route.h"
#include "telemetry/span.h"

namespace xb::telemetry {
namespace {

constexpr size_t kBatchSpans = 4096;

SpanData RequestSpan() {
  SpanData span;
  span.operation = RequestOperation(Rpc::kGetConfiguration);
  span.kind = SpanKind::kServer;
  span.context.trace_id.fill(0x5a);
  span.context.span_id.fill(0x3c);
  span.context.flags = kTraceFlagSampled;
  span.start_unix_ns = 1'790'000'000'000'000'000;
  span.end_unix_ns = span.start_unix_ns + 41'000;
  span.rpc = Rpc::kGetConfiguration;
  const auto set = [&](IntAttribute attribute, int64_t value) {
    span.ints[static_cast<size_t>(attribute)] = value;
    span.ints_set |= 1u << static_cast<unsigned>(attribute);
  };
  set(IntAttribute::kGrpcStatusCode, 0);
  set(IntAttribute::kRequestBytes, 0);
  set(IntAttribute::kResponseBytes, 161);
  return span;
}

SpanData HandlerSpan() {
  SpanData span = RequestSpan();
  span.operation = Operation::kRpcGetConfiguration;
  span.kind = SpanKind::kInternal;
  span.parent_span_id = span.context.span_id;
  span.context.span_id.fill(0x7e);
  span.rpc.reset();
  span.ints_set = 0;
  return span;
}

SpanData StageSpan() {
  SpanData span = HandlerSpan();
  span.operation = Operation::kPublishLocks;
  span.ints[static_cast<size_t>(IntAttribute::kEnvelopes)] = 1;
  span.ints_set = 1u << static_cast<unsigned>(IntAttribute::kEnvelopes);
  return span;
}

void AppendLoop(benchmark::State& state, const SpanData& first, const SpanData* second) {
  const OtlpFraming framing(ResourceAttributes{{"service.name", "xmtp-backend"},
                                               {"service.version", "bench"},
                                               {"xmtp.backend.identifier", "bench.local"}});
  EncodedSpans batch(framing);
  size_t bytes = 0;
  for (auto _ : state) {
    batch.Append(first);
    if (second != nullptr) {
      batch.Append(*second);
    }
    if (batch.count() >= kBatchSpans) {
      bytes = batch.Frame().size();
      batch.Clear();
    }
  }
  benchmark::DoNotOptimize(bytes);
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * (second != nullptr ? 2 : 1));
}

void BM_AppendRequestSpan(benchmark::State& state) {
  const SpanData span = RequestSpan();
  AppendLoop(state, span, nullptr);
}
BENCHMARK(BM_AppendRequestSpan);

void BM_AppendHandlerSpan(benchmark::State& state) {
  const SpanData span = HandlerSpan();
  AppendLoop(state, span, nullptr);
}
BENCHMARK(BM_AppendHandlerSpan);

// What one GetConfiguration costs: its two spans.
void BM_AppendUnaryRequest(benchmark::State& state) {
  const SpanData request = RequestSpan();
  const SpanData handler = HandlerSpan();
  AppendLoop(state, handler, &request);
}
BENCHMARK(BM_AppendUnaryRequest);

void BM_AppendPublishStageSpan(benchmark::State& state) {
  const SpanData span = StageSpan();
  AppendLoop(state, span, nullptr);
}
BENCHMARK(BM_AppendPublishStageSpan);

}  // namespace
}  // namespace xb::telemetry

BENCHMARK_MAIN();
