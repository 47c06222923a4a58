// libFuzzer target for the untrusted-text parsers of auth/: the authorization header
// (auth/bearer.h), base64url (auth/base64url.h), the JWT syntax stages and claim reading
// (auth/jwt.h), the claim stages (auth/claims.h) and the JWKS document (auth/jwks.h).
//
// Input layout: byte 0 picks the mode (even: header and token, odd: JWKS document); byte 1
// steers the claim policy; the rest is the payload.
//
// Invariants checked:
//  - ParseBearer admits only a header "<bearer, any case> <token>" whose token is a non-empty,
//    space-trimmed view into the header of at most 8192 bytes; it never reports kMissing for a
//    present header;
//  - DecodeBase64Url accepts only canonical text: re-encoding the result gives the input back;
//  - ParseJwt accepts only three segments; its signing input is the token up to the last dot;
//    a kid is at most 256 bytes; a rejection is kNotJwt or kUnsupportedAlg;
//  - CheckClaims only ever answers a claim-stage rejection;
//  - ParseJwks never crashes and keeps 1 to 64 keys when it succeeds.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "auth/base64url.h"
#include "auth/bearer.h"
#include "auth/claims.h"
#include "auth/jwks.h"
#include "auth/jwt.h"
#include "fuzz_input.h"

namespace {

using xb::auth::Rejection;

std::string EncodeBase64Url(std::string_view bytes) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (char c : bytes) {
    acc = (acc << 8) | static_cast<unsigned char>(c);
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      out += kAlphabet[(acc >> bits) & 63];
    }
  }
  if (bits > 0) {
    out += kAlphabet[(acc << (6 - bits)) & 63];
  }
  return out;
}

void CheckBase64(std::string_view text) {
  if (auto decoded = xb::auth::DecodeBase64Url(text)) {
    XB_FUZZ_CHECK(EncodeBase64Url(*decoded) == text);
  }
}

void CheckHeaderAndToken(const std::string& header, uint8_t steer) {
  const xb::auth::BearerToken bearer = xb::auth::ParseBearer(&header);
  XB_FUZZ_CHECK(bearer.rejection != Rejection::kMissing);
  if (bearer.rejection) {
    return;
  }
  const std::string_view token = bearer.token;
  XB_FUZZ_CHECK(!token.empty() && token.size() <= xb::auth::kMaxTokenBytes);
  XB_FUZZ_CHECK(token.front() != ' ' && token.back() != ' ');
  XB_FUZZ_CHECK(token.data() >= header.data() &&
                token.data() + token.size() <= header.data() + header.size());
  XB_FUZZ_CHECK(header.size() > 7 && (header[0] | 0x20) == 'b' && header[6] == ' ');

  const xb::auth::JwtParse parsed = xb::auth::ParseJwt(token);
  if (parsed.rejection) {
    XB_FUZZ_CHECK(*parsed.rejection == Rejection::kNotJwt ||
                  *parsed.rejection == Rejection::kUnsupportedAlg);
    return;
  }
  size_t dots = 0;
  for (char c : token) {
    dots += c == '.' ? 1 : 0;
  }
  XB_FUZZ_CHECK(dots == 2);
  XB_FUZZ_CHECK(parsed.jwt.signing_input == token.substr(0, token.rfind('.')));
  XB_FUZZ_CHECK(!parsed.jwt.kid || parsed.jwt.kid->size() <= xb::auth::kMaxKidBytes);

  xb::auth::ClaimPolicy policy;
  if (steer & 1) {
    policy.audiences = std::vector<std::string>{"a"};
  }
  if (steer & 2) {
    policy.issuers = std::vector<std::string>{"i"};
  }
  if (steer & 4) {
    policy.required_scopes = {"s"};
  }
  policy.leeway_seconds = steer >> 3;
  const int64_t now = (steer & 0x80) ? 0 : 1700000000;
  if (auto rejected = xb::auth::CheckClaims(parsed.jwt.claims, policy, now)) {
    XB_FUZZ_CHECK(*rejected == Rejection::kExpired || *rejected == Rejection::kNotYetValid ||
                  *rejected == Rejection::kAudience || *rejected == Rejection::kIssuer ||
                  *rejected == Rejection::kNotJwt || *rejected == Rejection::kScope);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  xb::fuzz::Input input(data, size);
  const uint8_t mode = input.Byte();
  const uint8_t steer = input.Byte();
  const std::string_view payload = input.rest();
  CheckBase64(payload);
  if (mode % 2 == 0) {
    CheckHeaderAndToken("Bearer " + std::string(payload), steer);
    CheckHeaderAndToken(std::string(payload), steer);
  } else {
    size_t skipped = 0;
    auto keys = xb::auth::ParseJwks(payload, [&skipped] { ++skipped; });
    if (keys.ok()) {
      XB_FUZZ_CHECK(!keys->empty() && keys->size() <= xb::auth::kMaxUsableKeys);
    }
    XB_FUZZ_CHECK(skipped <= xb::auth::kMaxExaminedEntries);
  }
  return 0;
}
