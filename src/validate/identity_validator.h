// Admission of one identity update against its inbox's whole stored history (VALIDATION.md 5.10,
// IDENT-005, API-232/234), in two CPU-only phases around the asynchronous smart-contract-wallet
// lookups the caller makes between them:
//
//   PrepareIdentityUpdate  steps 2, 3 and 5: limits, the new update's freshness probes (5.9.2),
//                          decoding of every stored update and the new one, signature texts and
//                          hashes, the ERC-6492 calls the caller must resolve;
//   (caller)               step 4, then a deferred decoding failure, then the verdicts of 5.9.3
//                          over chain RPC;
//   FinishIdentityUpdate   steps 6-8: verify every signature, fold the history, apply the new
//                          update, and the member diff for the identifier projection (section 6).
//
// Pure functions (apart from the verdict callback); thread-safe; never suspend; run on the CPU
// pool. The caller keeps the history's head for the ABORTED check at commit (step 9).
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "identity/associations/association.pb.h"
#include "validate/identity_signature.h"
#include "validate/identity_state.h"

namespace xb::validate {

struct IdentityLimits {
  uint32_t max_identity_entries = 256;
  uint32_t max_scw_signatures = 100;
};

// IdentifierKind values of the projection (STORE.md 2.2).
inline constexpr int32_t kProjectedEthereum = 1;
inline constexpr int32_t kProjectedPasskey = 2;

// One row change of the identifier projection (VALIDATION.md 6).
struct ProjectionChange {
  std::string identifier;  // Ethereum: lower-cased address; passkey: lowercase hex of the key
  int32_t identifier_kind = kProjectedEthereum;
  bool added = true;  // false: revoked
};

struct PreparedIdentityUpdate {
  std::vector<DecodedIdentityUpdate> updates;  // stored history in id order, then the new one
  std::vector<std::string> texts;              // 5.4 text per update
  std::vector<std::string> personal_hashes;    // EIP-191 hash per update
  std::set<ScwCheck> scw_checks;               // every ERC-6492 call the history and update need
  FreshnessBlocks fresh_blocks;                // new update: distinct (chain, block), 5.9.2
  // A step-5 failure found while fresh_blocks is non-empty: the answer unless a probe fails
  // first. When set, `updates` and the fields after it are empty.
  std::optional<IdentityError> decoding_failure;
};

// `history` is the stored ClientEnvelope payloads of the identity topic in ascending id order.
// Failures: kTooLarge (more than max_scw_signatures ERC-6492 signatures), kInvalidUpdate (history
// already holds max_identity_entries), kInternal (a stored payload that is not an identity update),
// kMalformed (5.2 decoding, or an account id not CAIP-10 shaped), kInvalidSignature (a malformed
// eip155 account id in the new update). A decoding failure of an update with freshness probes is
// returned in `decoding_failure` instead (5.10 step 4 precedes step 5).
std::variant<PreparedIdentityUpdate, IdentityError> PrepareIdentityUpdate(
    const std::vector<std::string>& history,
    const xmtp::identity::associations::IdentityUpdate& update, const IdentityLimits& limits);

struct IdentityOutcome {
  AssociationState state;
  std::vector<ProjectionChange> changes;
};

// Steps 6-8. Verification failures are reported in log, action, slot order.
std::variant<IdentityOutcome, IdentityError> FinishIdentityUpdate(
    const PreparedIdentityUpdate& prepared, const ScwVerdictFn& scw);

}  // namespace xb::validate
