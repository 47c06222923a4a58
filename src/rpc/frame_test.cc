#include "rpc/frame.h"

#include <gtest/gtest.h>

namespace xb::rpc {
namespace {

TEST(FrameDecoder, DecodesMessagesSplitAtEveryByte) {
  std::string wire;
  AppendFrame(wire, "hello");
  AppendFrame(wire, "");
  AppendFrame(wire, std::string(300, 'x'));
  FrameDecoder decoder(1000);
  std::vector<std::string> out;
  for (char c : wire) {
    ASSERT_TRUE(decoder.Feed(std::string_view(&c, 1), out).ok());
  }
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0], "hello");
  EXPECT_EQ(out[1], "");
  EXPECT_EQ(out[2], std::string(300, 'x'));
  EXPECT_FALSE(decoder.mid_frame());
}

TEST(FrameDecoder, HeaderLayoutIsFlagThenBigEndianLength) {
  std::string wire;
  AppendFrame(wire, std::string(0x0102, 'a'), kFlagTrailer);
  ASSERT_EQ(wire.size(), 5u + 0x0102);
  EXPECT_EQ(static_cast<uint8_t>(wire[0]), 0x80);
  EXPECT_EQ(wire.substr(1, 4), std::string("\x00\x00\x01\x02", 4));
}

// verifies: API-282 — an over-budget message fails OUT_OF_RANGE from its header alone.
TEST(FrameDecoder, OversizedMessageIsOutOfRangeBeforeItsPayload) {
  std::string header;
  AppendFrame(header, std::string(11, 'x'));
  header.resize(5);
  FrameDecoder decoder(10);
  std::vector<std::string> out;
  Status s = decoder.Feed(header, out);
  EXPECT_EQ(s.code(), StatusCode::kOutOfRange);
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(decoder.Feed("more", out).code(), StatusCode::kOutOfRange);
}

TEST(FrameDecoder, MessageExactlyAtBudgetIsAccepted) {
  std::string wire;
  AppendFrame(wire, std::string(10, 'x'));
  FrameDecoder decoder(10);
  std::vector<std::string> out;
  EXPECT_TRUE(decoder.Feed(wire, out).ok());
  EXPECT_EQ(out.size(), 1u);
}

TEST(FrameDecoder, CompressedFlagIsUnimplemented) {
  std::string wire;
  AppendFrame(wire, "x", kFlagCompressed);
  FrameDecoder decoder(10);
  std::vector<std::string> out;
  EXPECT_EQ(decoder.Feed(wire, out).code(), StatusCode::kUnimplemented);
}

TEST(FrameDecoder, TruncatedFrameIsReportedMidFrame) {
  std::string wire;
  AppendFrame(wire, "hello");
  wire.pop_back();
  FrameDecoder decoder(10);
  std::vector<std::string> out;
  EXPECT_TRUE(decoder.Feed(wire, out).ok());
  EXPECT_TRUE(out.empty());
  EXPECT_TRUE(decoder.mid_frame());
}

}  // namespace
}  // namespace xb::rpc
