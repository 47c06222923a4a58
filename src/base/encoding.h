// Byte-to-text encodings shared across modules: lowercase hex and standard base64 with padding
// (RFC 4648 section 4). Pure functions; any thread; never suspend.
#pragma once

#include <string>
#include <string_view>

namespace xb {

// Two lowercase hex digits per byte.
std::string LowerHex(std::string_view bytes);

// Standard base64 alphabet, padded with '=' to a multiple of 4 characters.
std::string Base64(std::string_view bytes);

// The same without padding (grpc-status-details-bin convention).
std::string Base64Unpadded(std::string_view bytes);

}  // namespace xb
