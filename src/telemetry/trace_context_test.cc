#include "telemetry/trace_context.h"

#include <gtest/gtest.h>

#include <string>

namespace xb::telemetry {
namespace {

constexpr std::string_view kValid = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

// verifies: OPS-012 (traceparent parsing, Trace Context section 3.2)
TEST(TraceparentTest, ParsesVersion00) {
  auto parsed = ParseTraceparent(kValid);
  ASSERT_TRUE(parsed.has_value());
  EXPECT_EQ(ToHex(parsed->trace_id).view(), "4bf92f3577b34da6a3ce929d0e0e4736");
  EXPECT_EQ(parsed->span_id[0], 0x00);
  EXPECT_EQ(parsed->span_id[1], 0xf0);
  EXPECT_EQ(parsed->span_id[7], 0xb7);
  EXPECT_TRUE(parsed->sampled());
  EXPECT_TRUE(parsed->remote);
  EXPECT_TRUE(parsed->valid());
}

TEST(TraceparentTest, UnsampledFlagIsKept) {
  auto parsed = ParseTraceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00");
  ASSERT_TRUE(parsed.has_value());
  EXPECT_FALSE(parsed->sampled());
}

TEST(TraceparentTest, RejectsMalformedValues) {
  const std::string bad[] = {
      "",
      "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0",    // short
      "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-",  // v00 with trailing data
      "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",   // uppercase
      "00-00000000000000000000000000000000-00f067aa0ba902b7-01",   // zero trace id
      "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",   // zero parent id
      "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",   // version ff
      "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",   // separator
      "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",   // not hex
      "0-04bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",   // misplaced dash
  };
  for (const auto& value : bad) {
    EXPECT_FALSE(ParseTraceparent(value).has_value()) << value;
  }
}

TEST(TraceparentTest, HigherVersionsParseTheirPrefix) {
  EXPECT_TRUE(ParseTraceparent("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra")
                  .has_value());
  EXPECT_TRUE(
      ParseTraceparent("cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01").has_value());
  EXPECT_FALSE(
      ParseTraceparent("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x").has_value());
}

TEST(TracestateTest, AcceptsTheGrammar) {
  EXPECT_TRUE(ValidTracestate(""));
  EXPECT_TRUE(ValidTracestate("congo=t61rcWkgMzE"));
  EXPECT_TRUE(ValidTracestate("rojo=00f067aa0ba902b7, congo=t61rcWkgMzE"));
  EXPECT_TRUE(ValidTracestate("tenant@vendor=v,,a=b"));
}

TEST(TracestateTest, RejectsBadMembersAndOversize) {
  EXPECT_FALSE(ValidTracestate("novalue"));
  EXPECT_FALSE(ValidTracestate("Upper=1"));
  EXPECT_FALSE(ValidTracestate("a=b=c"));
  EXPECT_FALSE(ValidTracestate("a=\x01"));
  std::string many;
  for (int i = 0; i < 33; ++i) {
    many += (i ? "," : "") + std::string("k") + std::to_string(i) + "=v";
  }
  EXPECT_FALSE(ValidTracestate(many));
  EXPECT_FALSE(ValidTracestate("a=" + std::string(600, 'x')));
}

TEST(SamplingTest, ParentDecisionIsKept) {
  SpanContext parent = *ParseTraceparent(kValid);
  EXPECT_TRUE(ShouldSample(parent, parent.trace_id, 0.0));
  parent.flags = 0;
  EXPECT_FALSE(ShouldSample(parent, parent.trace_id, 1.0));
}

TEST(SamplingTest, RootTracesFollowTheRatio) {
  const SpanContext none;
  TraceIdBytes low{};  // low 8 bytes zero: always below a positive bound
  TraceIdBytes high{};
  high.fill(0xff);
  EXPECT_TRUE(ShouldSample(none, high, 1.0));
  EXPECT_FALSE(ShouldSample(none, low, 0.0));
  EXPECT_TRUE(ShouldSample(none, low, 0.5));
  EXPECT_FALSE(ShouldSample(none, high, 0.5));
  // Over many ids the sampled fraction approaches the ratio.
  int sampled = 0;
  for (int i = 0; i < 10000; ++i) {
    TraceIdBytes id{};
    uint64_t v = static_cast<uint64_t>(i) * 0x9E3779B97F4A7C15ULL;
    for (int b = 0; b < 8; ++b) {
      id[8 + b] = static_cast<uint8_t>(v >> (8 * b));
    }
    sampled += ShouldSample(none, id, 0.25) ? 1 : 0;
  }
  EXPECT_NEAR(sampled / 10000.0, 0.25, 0.03);
}

}  // namespace
}  // namespace xb::telemetry
