// libFuzzer target for the untrusted-text parsers of auth/: the authorization header
// (auth/bearer.h), base64url (auth/base64url.h), the JWT syntax stages and claim reading
// (auth/jwt.h), key selection (auth/key_set.h), the signature check of every algorithm on
// arbitrary signature bytes (auth/jwt_signature.h), the claim stages (auth/claims.h) and the JWKS
// document (auth/jwks.h): the stages Authenticator::VerifyJwt runs on a request's header.
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
//  - SelectKey, against a fixed set of one key per algorithm family, returns only a key of the
//    token's alg (and of its kid, when it has one); Verify takes any signature bytes;
//  - CheckClaims only ever answers a claim-stage rejection;
//  - ParseJwks never crashes and keeps 1 to 64 keys when it succeeds, each of which verifies
//    (or refuses) any signature bytes.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "auth/base64url.h"
#include "auth/bearer.h"
#include "auth/claims.h"
#include "auth/jwks.h"
#include "auth/jwt.h"
#include "auth/key_set.h"
#include "fuzz_input.h"

namespace {

using xb::auth::Rejection;

// One key per algorithm family (ES256, ES384, RS256, EdDSA), kids "es256", "es384", "rs256",
// "eddsa"; generated for this target, private halves discarded.
constexpr std::string_view kJwks =
    R"({"keys":[{"kty":"EC","crv":"P-256","alg":"ES256","kid":"es256",)"
    R"("x":"RXR6NUDd99G644oMWWKIHP4MFubQuh3OdtMHBPEV36k","y":"Ar7D_Arv3JDKaT1aledaGLr3guH7lpJ7SbIcCnaRYxM"},)"
    R"({"kty":"EC","crv":"P-384","alg":"ES384","kid":"es384",)"
    R"("x":"ZYcoLC2sUdkgL79HL9TBslynK_BFq0NAgSgWTN0VgQPNydmH2Ni_3A_ypuib4mk_",)"
    R"("y":"V_f4qnx_Ydou2qAYwuGKG1QRLbaRfXtO_McPXujKTeAKHcCifiFJJ6-1J_jHvtAk"},)"
    R"({"kty":"RSA","alg":"RS256","kid":"rs256","n":"q5UgJWGrUpk9XY0MxWpantjzcxHImPuLNziADZNFLUTB8QGE)"
    R"(5GBnUP0hX8bHRqTcUc747d9Uj-kr2x7WuKJBMa-Q_Vc_7cG3POTwiFWK19CDrA9FtKMAgLv0KO6dsrAJIoHdEt-akPxG_7YM)"
    R"(33zlcHZpK_6Ta8OCbq0Qmci--Kk76Ol1NgHx5JjR9vpXZiAcD0SfaLtGqosOQOI8-pXbl7BY5uP_BSWIv0CdawMkiB24NLf2)"
    R"(Bk1xHnGJ8cwUFzRuP4XAVmWSlFlRrABJKLUFA-MkotZUv9d0o5LscMdgIqIQ3JCN0ClPuzdGTojQnV7IRbZxEF-wpLHn-v8H)"
    R"(WlVyuw","e":"AQAB"},)"
    R"({"kty":"OKP","crv":"Ed25519","alg":"EdDSA","kid":"eddsa",)"
    R"("x":"CMBnIBIssVY0L2qnGEHKN78ByWQQi2z-gdTaO6k4NjA"}]})";

const xb::auth::KeySet& FixedKeys() {
  static const xb::auth::KeySet* set = [] {
    auto keys = xb::auth::ParseJwks(kJwks, [] { XB_FUZZ_CHECK(false && "a fixed key skipped"); });
    XB_FUZZ_CHECK(keys.ok() && keys->size() == 4);
    return new xb::auth::KeySet{.keys = *std::move(keys), .generation = 1};
  }();
  return *set;
}

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

  if (const xb::auth::Key* key = xb::auth::SelectKey(FixedKeys(), parsed.jwt.kid, parsed.jwt.alg)) {
    XB_FUZZ_CHECK(key->alg == parsed.jwt.alg && key->key->alg() == parsed.jwt.alg);
    XB_FUZZ_CHECK(!parsed.jwt.kid || key->kid == parsed.jwt.kid);
    (void)key->key->Verify(parsed.jwt.signing_input, parsed.jwt.signature);
  }

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
      // A signature of the steering byte's length from the document's own bytes.
      const std::string_view signature = payload.substr(0, std::min<size_t>(steer, payload.size()));
      for (const xb::auth::Key& key : *keys) {
        (void)key.key->Verify("e30.e30", signature);
      }
    }
    XB_FUZZ_CHECK(skipped <= xb::auth::kMaxExaminedEntries);
  }
  return 0;
}
