// Verification of one identity-update signature (VALIDATION.md 5.5): who signed, on which chain,
// and its replay key (5.6). Smart-contract-wallet verdicts come from the caller (ScwVerdicts),
// which resolves them over chain RPC before this runs (5.9), so verification itself never does I/O.
//
// Pure functions apart from the verdict callback; thread-safe; never suspend. CPU cost: one
// secp256k1 recovery, Ed25519ph or P-256 verification per call (tens of microseconds): run them on
// the CPU pool, never on an I/O thread.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "validate/identity_update.h"

namespace xb::validate {

inline constexpr std::string_view kInstallationSignatureContext = "IDENTITY UPDATE SIGNATURE";

struct VerifiedSignature {
  SignatureKind kind = SignatureKind::kErc191;
  MemberId signer;
  std::optional<uint64_t> chain_id;  // erc_6492 only
  std::string replay_key;            // 5.6
};

// One deployless ERC-6492 validator call (5.9.3).
struct ScwCheck {
  std::string chain;      // route key "eip155:N" as given in the account id
  std::string address;    // as given
  std::string hash;       // 32 bytes
  std::string signature;  // as given
  std::optional<uint64_t> block_number;

  friend bool operator<(const ScwCheck& a, const ScwCheck& b) {
    return std::tie(a.chain, a.address, a.hash, a.signature, a.block_number) <
           std::tie(b.chain, b.address, b.hash, b.signature, b.block_number);
  }
};

// The verdict of a check (true = valid), or a failure (kUnavailable for a retryable one).
using ScwVerdictFn = std::function<std::variant<bool, IdentityError>(const ScwCheck&)>;

// Verifies `signature` over `text` (its 5.4 signature text) whose EIP-191 hash is
// `personal_hash`. Failures: kInvalidSignature (5.11 table), or whatever `scw` returns. `scw` is
// only called for erc_6492 signatures whose account id passed the eip155 form check; it may be
// empty when the update carries none.
std::variant<VerifiedSignature, IdentityError> VerifySignature(const SignatureInput& signature,
                                                               std::string_view text,
                                                               std::string_view personal_hash,
                                                               const ScwVerdictFn& scw);

// The ScwCheck an erc_6492 signature needs, or the kInvalidSignature error of 5.9.1.
std::variant<ScwCheck, IdentityError> ScwCheckOf(const SignatureInput& signature,
                                                 std::string_view personal_hash);

}  // namespace xb::validate
