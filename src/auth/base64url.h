// Strict base64url without padding (RFC 4648 section 5, as JWS and JWK use it, RFC 7515
// section 2). Pure; safe from any thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace xb::auth {

// The decoded bytes, or nullopt when `text` has a character outside the base64url alphabet,
// padding, a length of 1 mod 4, or non-zero unused bits in its last character (so that every
// byte string has exactly one accepted encoding).
std::optional<std::string> DecodeBase64Url(std::string_view text);

}  // namespace xb::auth
