#include "auth/claims.h"

#include <algorithm>

namespace xb::auth {

namespace {

bool Contains(const std::vector<std::string>& values, const std::string& wanted) {
  return std::find(values.begin(), values.end(), wanted) != values.end();
}

}  // namespace

// implements: AUTH-011
std::optional<Rejection> CheckTimes(const Claim<int64_t>& exp, const Claim<int64_t>& nbf,
                                    int64_t leeway_seconds, int64_t now) {
  // now - leeway does not go below 0; NumericDates are clamped to 2^62, so nothing overflows.
  const int64_t earliest = std::max<int64_t>(0, now - leeway_seconds);
  const int64_t latest = now + leeway_seconds;
  // J7: no exp, or exp < now - leeway. A wrongly typed exp is left to J11 (AUTH 12 point 3).
  if (exp.absent() || (exp.present() && exp.value < earliest)) {
    return Rejection::kExpired;
  }
  // J8
  if (nbf.present() && nbf.value > latest) {
    return Rejection::kNotYetValid;
  }
  return std::nullopt;
}

// implements: AUTH-012, AUTH-013, AUTH-031 (in the literal J7-J12 order)
std::optional<Rejection> CheckClaims(const Claims& claims, const ClaimPolicy& policy, int64_t now) {
  if (auto rejected = CheckTimes(claims.exp, claims.nbf, policy.leeway_seconds, now)) {
    return rejected;
  }
  // J9
  if (policy.audiences) {
    if (claims.aud.absent()) {
      return Rejection::kAudience;
    }
    if (claims.aud.present() &&
        std::none_of(claims.aud.value.begin(), claims.aud.value.end(),
                     [&](const std::string& aud) { return Contains(*policy.audiences, aud); })) {
      return Rejection::kAudience;
    }
  }
  // J10
  if (policy.issuers) {
    if (claims.iss.absent() ||
        (claims.iss.present() && !Contains(*policy.issuers, claims.iss.value))) {
      return Rejection::kIssuer;
    }
  }
  // J11
  if (claims.exp.wrong_type() || claims.nbf.wrong_type() || claims.aud.wrong_type() ||
      claims.iss.wrong_type() || claims.sub.wrong_type() || claims.scope.wrong_type()) {
    return Rejection::kNotJwt;
  }
  // J12
  for (const std::string& required : policy.required_scopes) {
    if (!Contains(claims.scope.value, required)) {
      return Rejection::kScope;
    }
  }
  return std::nullopt;
}

}  // namespace xb::auth
