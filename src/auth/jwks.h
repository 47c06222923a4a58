// A JWKS document (RFC 7517 section 5) read into usable keys (AUTH-016, AUTH-033). Pure apart
// from the skip callback; safe from any thread.
#pragma once

#include <functional>
#include <string_view>
#include <vector>

#include "auth/key_set.h"
#include "base/status.h"

namespace xb::auth {

inline constexpr size_t kMaxJwksBodyBytes = 262144;
inline constexpr size_t kMaxUsableKeys = 64;
inline constexpr size_t kMaxExaminedEntries = 256;

// The usable entries of `body` in document order: `alg` one of the six, the `kty`/`crv` that alg
// needs, `use` absent or "sig", `kid` absent or a string of at most 256 bytes, key material that
// decodes. Stops after 64 usable entries or 256 examined ones. `on_skipped` is called once per
// skipped entry (the caller logs it, AUTH-027). Error (fixed text) when the body is not an object
// with a `keys` array, or has no usable entry (AUTH-018).
Result<std::vector<Key>> ParseJwks(std::string_view body, const std::function<void()>& on_skipped);

}  // namespace xb::auth
