// RFC 9420 §5.1.2 labelled signatures: SignContent and VerifyWithLabel, with each cipher suite's
// signature scheme (§5.1.1, VALIDATION.md 4.3/4.4). Pure functions; thread-safe; never suspend.
// A verification costs tens of microseconds: callers on an I/O thread hand it to the CPU pool.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace xb::validate {

// SignContent = vl("MLS 1.0 " || label) || vl(content), vl being the §2.1.2 varint length prefix.
// `content` longer than 2^30-1 bytes cannot be encoded; such input is never built (the request
// size limits are far below it) and aborts.
std::string MlsSignContent(std::string_view label, std::string_view content);

// True iff `signature` verifies over MlsSignContent(label, content) under `public_key` with the
// signature scheme of `cipher_suite`:
//   0x0001, 0x0003, 0x004D: Ed25519, pure, strict (small-order key or R refused, S < L) — the
//     acceptance rules VALIDATION.md 4.3 gives for the reference;
//   0x0002 / 0x0007 / 0x0005: ECDSA P-256/SHA-256, P-384/SHA-384, P-521/SHA-512, DER signature,
//     SEC1 public key (RFC 9420 §5.1.1);
//   0x0004, 0x0006 (Ed448) and every other value: false (the reference has no Ed448 scheme).
bool MlsVerifyWithLabel(uint16_t cipher_suite, std::string_view public_key, std::string_view label,
                        std::string_view content, std::string_view signature);

}  // namespace xb::validate
