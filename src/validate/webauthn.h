// The parts of a WebAuthn assertion the passkey signature kind checks (VALIDATION.md 5.5.3):
// the challenge and origin of clientDataJSON, and the strict-DER ECDSA signature.
// Pure functions; thread-safe; never suspend.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace xb::validate {

struct ClientData {
  std::string challenge;
  std::string origin;
};

// 5.5.3 step 1: `json` is one RFC 8259 document that is either an object with string members
// `challenge` and `origin` (other members ignored; a repeated `challenge` or `origin` refused) or
// [quirk] a two-element array [origin, challenge] of strings. nullopt otherwise.
std::optional<ClientData> ParseClientDataJson(std::string_view json);

// 5.5.3 step 4: a strict DER ECDSA-Sig-Value (SEQUENCE of two minimal positive INTEGERs, no
// trailing bytes) for P-256 with r and s in [1, n-1]. Returns r || s as 64 bytes with s replaced by
// n - s when above n/2 (the replay key of 5.5.3 step 7), or nullopt.
std::optional<std::string> P256DerToLowSRaw(std::string_view der);

// RFC 4648 section 5 base64url without padding.
std::string Base64UrlNoPad(std::string_view bytes);

}  // namespace xb::validate
