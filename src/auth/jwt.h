// The syntax stages of JWT verification (AUTH section 5.2, J1 to J4) and the typed reading of the
// claims AUTH section 5.4 names. Pure functions; safe from any thread; never suspend. Nothing here
// decides on a claim value: that happens in claims.h, after the signature (AUTH-010).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "auth/jwt_signature.h"
#include "auth/rejection.h"

namespace xb::auth {

inline constexpr size_t kMaxKidBytes = 256;
// NumericDates above this are clamped to it, so that `date + leeway` cannot overflow (AUTH 5.4).
inline constexpr int64_t kMaxNumericDate = int64_t{1} << 62;

// One claim as read from the claims object (AUTH-031).
template <class T>
struct Claim {
  enum class State : uint8_t { kAbsent, kWrongType, kPresent };
  State state = State::kAbsent;
  T value{};

  bool absent() const { return state == State::kAbsent; }
  bool wrong_type() const { return state == State::kWrongType; }
  bool present() const { return state == State::kPresent; }
};

struct Claims {
  Claim<int64_t> exp;                   // NumericDate, rounded half up, clamped
  Claim<int64_t> nbf;                   // same
  Claim<std::vector<std::string>> aud;  // a string is one value
  Claim<std::string> iss;
  Claim<std::string> sub;                 // never checked: the caller's principal (quotas)
  Claim<std::vector<std::string>> scope;  // a string is split on spaces, empty pieces dropped
};

struct Jwt {
  Alg alg = Alg::kRs256;
  std::optional<std::string> kid;
  std::string_view signing_input;  // "segment1.segment2", a view of the token
  std::string signature;           // decoded third segment
  Claims claims;
};

struct JwtParse {
  std::optional<Rejection> rejection;  // kNotJwt or kUnsupportedAlg
  Jwt jwt;                             // valid when rejection is empty
};

// J1 to J4 in order, first failure wins: three base64url segments; a JOSE header object with a
// string `alg`; `alg` one of the six (else kUnsupportedAlg); `kid` absent or a string of at most
// 256 bytes; a claims object; a decodable signature.
JwtParse ParseJwt(std::string_view token);

}  // namespace xb::auth
