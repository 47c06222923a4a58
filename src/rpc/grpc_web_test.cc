#include "rpc/grpc_web.h"

#include <gtest/gtest.h>

#include "base/encoding.h"

namespace xb::rpc {
namespace {

TEST(Base64StreamDecoder, DecodesChunkedAndConcatenatedPaddedSegments) {
  const std::string text = Base64("f") + Base64("oob") + Base64("ar");
  std::string out;
  Base64StreamDecoder decoder;
  for (char c : text) {
    ASSERT_TRUE(decoder.Feed(std::string_view(&c, 1), out).ok());
  }
  EXPECT_EQ(out, "foobar");
  EXPECT_TRUE(decoder.aligned());
}

TEST(Base64StreamDecoder, RejectsBadCharactersAndMisplacedPadding) {
  std::string out;
  EXPECT_EQ(Base64StreamDecoder().Feed("Zm9*", out).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Base64StreamDecoder().Feed("Z===", out).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Base64StreamDecoder().Feed("Zm=v", out).code(), StatusCode::kInvalidArgument);
  Base64StreamDecoder partial;
  EXPECT_TRUE(partial.Feed("Zm9", out).ok());
  EXPECT_FALSE(partial.aligned());
}

TEST(PercentEncode, EncodesOnlyWhatGrpcRequires) {
  EXPECT_EQ(PercentEncode("plain text: ok"), "plain text: ok");
  EXPECT_EQ(PercentEncode("50%"), "50%25");
  EXPECT_EQ(PercentEncode("a\nb"), "a%0Ab");
  EXPECT_EQ(PercentEncode("\xc3\xa9"), "%C3%A9");
}

TEST(TrailerBlock, CarriesStatusMessageAndDetails) {
  Status s(StatusCode::kInvalidArgument, "bad input");
  s.set_details("\x08\x03");
  EXPECT_EQ(TrailerBlock(s),
            "grpc-status: 3\r\ngrpc-message: bad input\r\ngrpc-status-details-bin: CAM\r\n");
  EXPECT_EQ(TrailerBlock(Status::Ok()), "grpc-status: 0\r\n");
}

}  // namespace
}  // namespace xb::rpc
