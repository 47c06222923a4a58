// The association state of one inbox and the rules that change it (VALIDATION.md 5.6-5.8,
// IDENT-001..004, -011, -012, -031, -040..-046, -050). Input is an update whose signatures were
// already verified (identity_signature.h); nothing here does cryptography or I/O.
//
// Pure functions; thread-safe; never suspend.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "validate/identity_signature.h"
#include "validate/identity_update.h"

namespace xb::validate {

struct MemberRecord {
  MemberId id;
  std::optional<MemberId> added_by;
  std::optional<uint64_t> client_timestamp_ns;
  std::optional<uint64_t> added_on_chain_id;
};

struct AssociationState {
  std::string inbox_id;
  std::map<MemberId, MemberRecord> members;
  MemberId recovery;
  std::set<std::string> seen_replay_keys;
};

// The verified signatures of one action, in slot order: CreateInbox {initial}; Add {existing,
// new}; Revoke {recovery}; ChangeRecoveryAddress {recovery}.
struct VerifiedAction {
  const IdentityActionValue* action = nullptr;
  std::vector<VerifiedSignature> signatures;
};

// Applies one verified update (all or nothing, IDENT-002) to `state` (nullopt: no inbox yet).
// Failures are kInvalidUpdate. On success returns the new state, replay keys added.
std::variant<AssociationState, IdentityError> ApplyUpdate(
    const std::optional<AssociationState>& state, const DecodedIdentityUpdate& update,
    const std::vector<VerifiedAction>& actions);

// VALIDATION.md 5.3 (IDENT-010): lowercase hex SHA-256 of identifier text || decimal nonce.
std::string DeriveInboxId(const MemberId& identifier, uint64_t nonce);

}  // namespace xb::validate
