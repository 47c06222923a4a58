#include "auth/jwt.h"

#include <gtest/gtest.h>

#include "auth/claims.h"
#include "auth/test_signer.h"

namespace xb::auth {
namespace {

using testing::Base64Url;

std::string Unsigned(std::string_view header, std::string_view claims,
                     std::string_view signature = "c2ln") {
  return Base64Url(header) + "." + Base64Url(claims) + "." + std::string(signature);
}

std::optional<Rejection> Stage(const std::string& token) { return ParseJwt(token).rejection; }

// verifies: AUTH-014 syntax rows (J1, J3, J4), AUTH-008 (J2)
TEST(JwtParseTest, SyntaxStagesInOrder) {
  EXPECT_EQ(Stage("abc"), Rejection::kNotJwt);
  EXPECT_EQ(Stage("a.b"), Rejection::kNotJwt);
  EXPECT_EQ(Stage("a.b.c.d"), Rejection::kNotJwt);
  EXPECT_EQ(Stage(Unsigned("[]", "{}")), Rejection::kNotJwt);
  EXPECT_EQ(Stage(Unsigned("{}", "{}")), Rejection::kNotJwt);
  EXPECT_EQ(Stage(Unsigned(R"({"alg":5})", "{}")), Rejection::kNotJwt);
  EXPECT_EQ(Stage(Unsigned(R"({"alg":"ES256")", "{}")), Rejection::kNotJwt);
  EXPECT_EQ(Stage("eyJ=.e30.c2ln"), Rejection::kNotJwt);
  // J2 before J3 and J4: an unsupported alg wins over a bad kid or claims.
  for (const char* alg : {"none", "HS256", "PS256", "ES512", "es256", "EdDSA2"}) {
    EXPECT_EQ(Stage(Unsigned(std::string(R"({"alg":")") + alg + R"(","kid":5})", "[]")),
              Rejection::kUnsupportedAlg)
        << alg;
  }
  EXPECT_EQ(Stage(Unsigned(R"({"alg":"ES256","kid":5})", "{}")), Rejection::kNotJwt);
  EXPECT_EQ(Stage(Unsigned(R"({"alg":"ES256","kid":")" + std::string(257, 'k') + "\"}", "{}")),
            Rejection::kNotJwt);
  EXPECT_FALSE(Stage(Unsigned(R"({"alg":"ES256","kid":")" + std::string(256, 'k') + "\"}", "{}")));
  EXPECT_EQ(Stage(Unsigned(R"({"alg":"ES256"})", "[1]")), Rejection::kNotJwt);
  EXPECT_EQ(Stage(Unsigned(R"({"alg":"ES256"})", "{}", "c2ln=")), Rejection::kNotJwt);
}

TEST(JwtParseTest, ReadsHeaderAndClaimTypes) {
  const std::string token =
      Unsigned(R"({"alg":"EdDSA","kid":"k1"})",
               R"({"exp":10.5,"nbf":3,"aud":["a","b"],"iss":"i","sub":"s","scope":" x  y "})");
  const JwtParse parsed = ParseJwt(token);
  ASSERT_FALSE(parsed.rejection);
  EXPECT_EQ(parsed.jwt.alg, Alg::kEdDsa);
  EXPECT_EQ(parsed.jwt.kid, "k1");
  EXPECT_EQ(parsed.jwt.signature, "sig");
  EXPECT_EQ(parsed.jwt.signing_input, token.substr(0, token.rfind('.')));
  EXPECT_EQ(parsed.jwt.claims.exp.value, 11);  // halves round up
  EXPECT_EQ(parsed.jwt.claims.nbf.value, 3);
  EXPECT_EQ(parsed.jwt.claims.aud.value, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(parsed.jwt.claims.scope.value, (std::vector<std::string>{"x", "y"}));
  EXPECT_TRUE(parsed.jwt.claims.iss.present());
  EXPECT_TRUE(parsed.jwt.claims.sub.present());
}

Claims ClaimsOf(std::string_view json) {
  JwtParse parsed = ParseJwt(Unsigned(R"({"alg":"ES256"})", json));
  EXPECT_FALSE(parsed.rejection);
  return parsed.jwt.claims;
}

// verifies: AUTH-011, AUTH-012, AUTH-013, AUTH-031 and the literal J7-J12 order (AUTH 12.1)
TEST(ClaimsTest, StagesInTableOrder) {
  const int64_t now = 1000000;
  ClaimPolicy policy{.audiences = std::vector<std::string>{"aud1"},
                     .issuers = std::vector<std::string>{"iss1"},
                     .required_scopes = {"read", "write"},
                     .leeway_seconds = 60};
  auto check = [&](std::string_view json) { return CheckClaims(ClaimsOf(json), policy, now); };
  const std::string ok_rest = R"("aud":"aud1","iss":"iss1","scope":"read write")";
  EXPECT_FALSE(check(R"({"exp":1000000,)" + ok_rest + "}"));
  EXPECT_EQ(check(R"({)" + ok_rest + "}"), Rejection::kExpired);
  EXPECT_EQ(check(R"({"exp":999939,)" + ok_rest + "}"), Rejection::kExpired);
  EXPECT_FALSE(check(R"({"exp":999940,)" + ok_rest + "}"));
  EXPECT_EQ(check(R"({"exp":2000000,"nbf":1000061,)" + ok_rest + "}"), Rejection::kNotYetValid);
  EXPECT_FALSE(check(R"({"exp":2000000,"nbf":1000060,)" + ok_rest + "}"));
  EXPECT_EQ(check(R"({"exp":2000000,"iss":"iss1","scope":"read write"})"), Rejection::kAudience);
  EXPECT_EQ(check(R"({"exp":2000000,"aud":["x","y"],"iss":"iss1"})"), Rejection::kAudience);
  EXPECT_FALSE(
      check(R"({"exp":2000000,"aud":["x","aud1"],"iss":"iss1","scope":["write","read"]})"));
  EXPECT_EQ(check(R"({"exp":2000000,"aud":"aud1","scope":"read write"})"), Rejection::kIssuer);
  EXPECT_EQ(check(R"({"exp":2000000,"aud":"aud1","iss":"ISS1"})"), Rejection::kIssuer);
  EXPECT_EQ(check(R"({"exp":2000000,"aud":"aud1","iss":"iss1","scope":"read"})"),
            Rejection::kScope);
  EXPECT_EQ(check(R"({"exp":2000000,"aud":"aud1","iss":"iss1"})"), Rejection::kScope);
  // Wrong types: malformed at J11, after the earlier claim stages.
  EXPECT_EQ(check(R"({"exp":"2000000",)" + ok_rest + "}"), Rejection::kNotJwt);
  EXPECT_EQ(check(R"({"exp":-1,)" + ok_rest + "}"), Rejection::kNotJwt);
  EXPECT_EQ(check(R"({"exp":2000000,"nbf":true,)" + ok_rest + "}"), Rejection::kNotJwt);
  EXPECT_EQ(check(R"({"exp":2000000,"aud":["aud1",1],"iss":"iss1"})"), Rejection::kNotJwt);
  EXPECT_EQ(check(R"({"exp":2000000,"sub":1,)" + ok_rest + "}"), Rejection::kNotJwt);
  EXPECT_EQ(check(R"({"exp":2000000,"aud":"aud1","iss":"iss1","scope":{}})"), Rejection::kNotJwt);
  EXPECT_EQ(check(R"({"exp":2000000,"aud":"aud1","iss":7})"), Rejection::kNotJwt);
  // An earlier failing stage wins over a wrong type.
  EXPECT_EQ(check(R"({"exp":5,"aud":1,"iss":"iss1"})"), Rejection::kExpired);
  EXPECT_EQ(check(R"({"exp":2000000,"aud":"zzz","iss":7})"), Rejection::kAudience);
  // Huge dates do not overflow.
  EXPECT_FALSE(check(R"({"exp":1e300,"nbf":0,)" + ok_rest + "}"));
  EXPECT_FALSE(check(R"({"exp":18446744073709551615,)" + ok_rest + "}"));
  EXPECT_EQ(check(R"({"exp":2000000,"nbf":1e300,)" + ok_rest + "}"), Rejection::kNotYetValid);
}

TEST(ClaimsTest, NoPolicyChecksOnlyTime) {
  const ClaimPolicy policy{};
  EXPECT_FALSE(CheckClaims(ClaimsOf(R"({"exp":100})"), policy, 100));
  EXPECT_EQ(CheckClaims(ClaimsOf(R"({"exp":100})"), policy, 161), Rejection::kExpired);
  // now - leeway does not go below 0.
  EXPECT_FALSE(CheckClaims(ClaimsOf(R"({"exp":0})"), policy, 10));
}

}  // namespace
}  // namespace xb::auth
