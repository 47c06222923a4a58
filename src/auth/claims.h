// The claim stages of JWT verification (AUTH section 5.2, J7 to J12), run only after the
// signature verified (AUTH-010). Pure; safe from any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "auth/jwt.h"
#include "auth/rejection.h"

namespace xb::auth {

struct ClaimPolicy {
  std::optional<std::vector<std::string>> audiences;  // unset: no audience check
  std::optional<std::vector<std::string>> issuers;    // unset: no issuer check
  std::vector<std::string> required_scopes;
  int64_t leeway_seconds = 60;
};

// J7 to J12 in table order, first failure wins (AUTH 12 point 1). `now` is Unix seconds.
std::optional<Rejection> CheckClaims(const Claims& claims, const ClaimPolicy& policy, int64_t now);

// J7 and J8 alone: the only stages whose outcome changes with time, rechecked for a cached
// token. `exp` and `nbf` are as Claims holds them.
std::optional<Rejection> CheckTimes(const Claim<int64_t>& exp, const Claim<int64_t>& nbf,
                                    int64_t leeway_seconds, int64_t now);

}  // namespace xb::auth
