#include "auth/bearer.h"

#include <gtest/gtest.h>

#include "auth/base64url.h"

namespace xb::auth {
namespace {

std::optional<Rejection> RejectionOf(const std::string& header) {
  return ParseBearer(&header).rejection;
}

// verifies: AUTH-005, AUTH section 3 steps 1 to 6
TEST(BearerTest, MissingHeaderIsMissing) {
  EXPECT_EQ(ParseBearer(nullptr).rejection, Rejection::kMissing);
}

TEST(BearerTest, SchemeIsCaseInsensitiveAndTokenTrimmed) {
  for (const std::string header : {"Bearer abc", "bearer abc", "BEARER abc", "Bearer   abc  "}) {
    const BearerToken parsed = ParseBearer(&header);
    EXPECT_FALSE(parsed.rejection) << header;
    EXPECT_EQ(parsed.token, "abc") << header;
  }
}

TEST(BearerTest, NotABearerToken) {
  for (const std::string header :
       {"", "Bearer", "Bearerabc", "Basic abc", "Bearer ", "Bearer    ", "Bearer a\tb",
        "Bearer abc\x01", "Bearer \xC3\xA9t\xC3\xA9", " Bearer abc", "Bear abc"}) {
    EXPECT_EQ(RejectionOf(header), Rejection::kNotBearer) << header;
  }
}

TEST(BearerTest, TokenLengthLimit) {
  EXPECT_FALSE(RejectionOf("Bearer " + std::string(8192, 'a')));
  EXPECT_EQ(RejectionOf("Bearer " + std::string(8193, 'a')), Rejection::kNotJwt);
}

TEST(RejectionTest, FixedMessagesAndCodes) {
  EXPECT_EQ(StatusOf(Rejection::kMissing).message(), "missing bearer token");
  EXPECT_EQ(StatusOf(Rejection::kNotBearer).message(),
            "authorization header is not a bearer token");
  EXPECT_EQ(StatusOf(Rejection::kNotJwt).message(), "token is not a supported JWT");
  EXPECT_EQ(StatusOf(Rejection::kUnsupportedAlg).message(), "token is not a supported JWT");
  EXPECT_EQ(StatusOf(Rejection::kUntrusted).message(), "token signature is not trusted");
  EXPECT_EQ(StatusOf(Rejection::kExpired).message(), "token has expired");
  EXPECT_EQ(StatusOf(Rejection::kNotYetValid).message(), "token is not yet valid");
  EXPECT_EQ(StatusOf(Rejection::kAudience).message(), "token audience is not allowed");
  EXPECT_EQ(StatusOf(Rejection::kIssuer).message(), "token issuer is not allowed");
  EXPECT_EQ(StatusOf(Rejection::kScope).message(), "token is missing a required scope");
  EXPECT_EQ(StatusOf(Rejection::kScope).code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(StatusOf(Rejection::kExpired).code(), StatusCode::kUnauthenticated);
  EXPECT_EQ(ReasonOf(Rejection::kNotBearer), telemetry::AuthRejectionReason::kMalformed);
  EXPECT_EQ(ReasonOf(Rejection::kNotJwt), telemetry::AuthRejectionReason::kMalformed);
}

TEST(Base64UrlTest, StrictDecoding) {
  EXPECT_EQ(DecodeBase64Url(""), "");
  EXPECT_EQ(DecodeBase64Url("YQ"), "a");
  EXPECT_EQ(DecodeBase64Url("YWI"), "ab");
  EXPECT_EQ(DecodeBase64Url("YWJj"), "abc");
  EXPECT_EQ(DecodeBase64Url("-_8"), "\xfb\xff");
  EXPECT_FALSE(DecodeBase64Url("YQ=="));  // padding
  EXPECT_FALSE(DecodeBase64Url("Y"));     // 1 mod 4
  EXPECT_FALSE(DecodeBase64Url("YR"));    // non-zero unused bits
  EXPECT_FALSE(DecodeBase64Url("Y+Q"));   // standard alphabet
  EXPECT_FALSE(DecodeBase64Url("Y Q"));
}

}  // namespace
}  // namespace xb::auth
