#include "telemetry/tracer.h"

#include <gtest/gtest.h>

#include <chrono>
#include <mutex>
#include <string>
#include <vector>

namespace xb::telemetry {
namespace {

class CollectingSink final : public SpanSink {
 public:
  void Submit(SpanData&& span) override { spans.push_back(std::move(span)); }
  std::vector<SpanData> spans;
};

const std::string kParent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

// verifies: OPS-012 — the request span is a child of the caller's context.
TEST(TracerTest, RequestSpanIsAChildOfTheCaller) {
  Metrics metrics("test");
  CollectingSink sink;
  Tracer tracer(metrics, TracerOptions{.sample_ratio = 0.0, .sink = &sink});
  const std::string state = "congo=t61rcWkgMzE";
  {
    Span request =
        tracer.StartRequest(Rpc::kPublish, &kParent, &state, std::chrono::steady_clock::now());
    ASSERT_TRUE(request.recording());  // sampled parent wins over ratio 0
    Span handler = tracer.Start(Operation::kRpcPublish, request.context());
    handler.SetError();
  }
  ASSERT_EQ(sink.spans.size(), 2u);
  const SpanData& handler = sink.spans[0];
  const SpanData& request = sink.spans[1];
  EXPECT_EQ(OperationName(request.operation), "xmtp.backend.v1.PublishService/Publish");
  EXPECT_EQ(request.kind, SpanKind::kServer);
  EXPECT_EQ(ToHex(request.context.trace_id).view(), "4bf92f3577b34da6a3ce929d0e0e4736");
  EXPECT_EQ(request.parent_span_id, ParseTraceparent(kParent)->span_id);
  EXPECT_TRUE(request.parent_remote);
  EXPECT_EQ(request.trace_state, state);
  EXPECT_EQ(handler.parent_span_id, request.context.span_id);
  EXPECT_EQ(handler.context.trace_id, request.context.trace_id);
  EXPECT_TRUE(handler.error);
  EXPECT_LE(request.start_unix_ns, request.end_unix_ns);
  // verifies: OPS-019 — the duration metric under the span name, status from the error flag.
  EXPECT_EQ(
      metrics.Exposition().find("operation=\"rpc.publish\",status=\"error\"") == std::string::npos,
      false);
}

// The dispatcher starts the request span at the instant its call was made and ends it at the
// instant it read when the call was done: the span measures exactly that interval.
TEST(TracerTest, ARequestSpanStartedAndEndedAtGivenInstantsMeasuresThem) {
  Metrics metrics("test");
  CollectingSink sink;
  Tracer tracer(metrics, TracerOptions{.sample_ratio = 1.0, .sink = &sink});
  const auto start = std::chrono::steady_clock::now() - std::chrono::milliseconds(250);
  {
    Span request = tracer.StartRequest(Rpc::kQuery, nullptr, nullptr, start);
    request.EndAt(start + std::chrono::milliseconds(40));
  }
  ASSERT_EQ(sink.spans.size(), 1u);
  EXPECT_EQ(sink.spans[0].end_unix_ns - sink.spans[0].start_unix_ns, 40'000'000u);
}

TEST(TracerTest, UnsampledRootAllocatesNoExportButRecordsTheMetric) {
  Metrics metrics("test");
  CollectingSink sink;
  Tracer tracer(metrics, TracerOptions{.sample_ratio = 0.0, .sink = &sink});
  {
    Span request =
        tracer.StartRequest(Rpc::kQuery, nullptr, nullptr, std::chrono::steady_clock::now());
    EXPECT_FALSE(request.recording());
    // A child of an unsampled span is unsampled too, whatever the ratio.
    Span child = tracer.Start(Operation::kRpcQuery, request.context());
    EXPECT_FALSE(child.recording());
  }
  EXPECT_TRUE(sink.spans.empty());
  const std::string text = metrics.Exposition();
  EXPECT_NE(
      text.find("xmtp_operation_duration_seconds_count{operation=\"rpc.query\",status=\"ok\"} 1"),
      std::string::npos)
      << text;
}

TEST(TracerTest, NoSinkKeepsTheCallersTraceIdOnly) {
  Metrics metrics("test");
  Tracer tracer(metrics, TracerOptions{.sample_ratio = 1.0, .sink = nullptr});
  Span with_parent =
      tracer.StartRequest(Rpc::kQuery, &kParent, nullptr, std::chrono::steady_clock::now());
  EXPECT_FALSE(with_parent.recording());
  EXPECT_TRUE(with_parent.context().has_trace_id());
  EXPECT_EQ(ToHex(with_parent.context().trace_id).view(), "4bf92f3577b34da6a3ce929d0e0e4736");
  Span without =
      tracer.StartRequest(Rpc::kQuery, nullptr, nullptr, std::chrono::steady_clock::now());
  EXPECT_FALSE(without.context().has_trace_id());
}

TEST(TracerTest, InvalidTracestateIsDropped) {
  Metrics metrics("test");
  CollectingSink sink;
  Tracer tracer(metrics, TracerOptions{.sample_ratio = 1.0, .sink = &sink});
  const std::string bad = "Not=Valid=State";
  tracer.StartRequest(Rpc::kQuery, &kParent, &bad, std::chrono::steady_clock::now()).End();
  ASSERT_EQ(sink.spans.size(), 1u);
  EXPECT_TRUE(sink.spans[0].trace_state.empty());
}

TEST(TracerTest, RootSpansStartNewTracesAtRatioOne) {
  Metrics metrics("test");
  CollectingSink sink;
  Tracer tracer(metrics, TracerOptions{.sample_ratio = 1.0, .sink = &sink});
  tracer.Start(Operation::kTailerPoll, {}).End();
  tracer.Start(Operation::kTailerPoll, {}).End();
  ASSERT_EQ(sink.spans.size(), 2u);
  EXPECT_NE(sink.spans[0].context.trace_id, sink.spans[1].context.trace_id);
  EXPECT_EQ(sink.spans[0].parent_span_id, SpanIdBytes{});
  EXPECT_EQ(OperationName(sink.spans[0].operation), "tailer.poll");
}

TEST(TracerTest, EndAtUsesTheGivenTimes) {
  Metrics metrics("test");
  CollectingSink sink;
  Tracer tracer(metrics, TracerOptions{.sample_ratio = 1.0, .sink = &sink});
  const auto start = std::chrono::steady_clock::now() - std::chrono::milliseconds(30);
  tracer.Start(Operation::kPublishLocks, {}, start).EndAt(start + std::chrono::milliseconds(20));
  ASSERT_EQ(sink.spans.size(), 1u);
  const uint64_t duration = sink.spans[0].end_unix_ns - sink.spans[0].start_unix_ns;
  EXPECT_EQ(duration, 20'000'000u);
}

// Span times are wall-clock Unix nanoseconds (taken from the steady clock through a per-thread
// offset), including for a span that began before it was started.
TEST(TracerTest, StartTimesAreWallClockTimes) {
  Metrics metrics("test");
  CollectingSink sink;
  Tracer tracer(metrics, TracerOptions{.sample_ratio = 1.0, .sink = &sink});
  auto unix_now = [] {
    return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                     std::chrono::system_clock::now().time_since_epoch())
                                     .count());
  };
  const uint64_t before = unix_now();
  tracer.Start(Operation::kTailerPoll, {}).End();
  tracer
      .Start(Operation::kPublishLocks, {},
             std::chrono::steady_clock::now() - std::chrono::seconds(5))
      .End();
  const uint64_t after = unix_now();
  ASSERT_EQ(sink.spans.size(), 2u);
  constexpr uint64_t kSlack = 50'000'000;  // 50 ms: the two clocks read a little apart
  EXPECT_GE(sink.spans[0].start_unix_ns + kSlack, before);
  EXPECT_LE(sink.spans[0].start_unix_ns, after + kSlack);
  EXPECT_GE(sink.spans[1].start_unix_ns + kSlack, before - 5'000'000'000);
  EXPECT_LE(sink.spans[1].start_unix_ns, after - 5'000'000'000 + kSlack);
  EXPECT_GE(sink.spans[1].end_unix_ns + kSlack, before);
}

}  // namespace
}  // namespace xb::telemetry
