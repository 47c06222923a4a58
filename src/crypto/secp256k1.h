// secp256k1 public-key recovery and Ethereum addresses for ERC-191 signatures (VALIDATION.md
// 5.5.1), through libsecp256k1 (Debian libsecp256k1-dev, built with its recovery module).
// Pure functions; any thread (one read-only library context shared by all); never suspend.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace xb::crypto {

// What an ERC-191 signature recovers to.
struct EthereumSigner {
  std::string address;                    // "0x" + 40 lowercase hex digits
  std::array<uint8_t, 65> canonical_rsv;  // r || low s || parity (0/1): the replay key (5.6)
};

// VALIDATION.md 5.5.1 steps 1-5 over a 32-byte `digest` (the personal-message hash): `signature`
// is exactly 65 bytes r || s || v with v in {0, 1, 27, 28}; r and s in [1, n-1]; a high s is
// replaced by n - s with the parity flipped; recovery uses only the x = r variants. nullopt when
// any step fails (the caller answers REASON_INVALID_SIGNATURE).
std::optional<EthereumSigner> RecoverEthereumSigner(std::string_view digest,
                                                    std::string_view signature);

// "0x" + lowercase hex of the last 20 bytes of keccak256(x || y) for the 64 coordinate bytes of
// an uncompressed public key (no 0x04 prefix).
std::string EthereumAddressOf(std::string_view public_key_xy);

// The Ethereum address of a 32-byte secp256k1 private key (tests and fixtures), nullopt when the
// key is not in [1, n-1].
std::optional<std::string> EthereumAddressOfPrivateKey(std::string_view private_key);

}  // namespace xb::crypto
