// The `authorization` header as AUTH section 3 reads it (AUTH-005): `Bearer`, a space, a token.
// Pure functions over the header value; no allocation; safe from any thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "auth/rejection.h"

namespace xb::auth {

inline constexpr size_t kMaxTokenBytes = 8192;

struct BearerToken {
  std::optional<Rejection> rejection;  // set: the header is refused with this row
  std::string_view token;              // otherwise: the token, trimmed, 1 to 8192 bytes
};

// Steps 1 to 6 of AUTH section 3, first failure wins. `header` is the first `authorization` value
// or nullptr when there is none. The returned token views `*header`.
BearerToken ParseBearer(const std::string* header);

}  // namespace xb::auth
