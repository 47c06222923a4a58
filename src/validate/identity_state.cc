#include "validate/identity_state.h"

#include "crypto/sha256.h"

namespace xb::validate {
namespace {

IdentityError Reject(std::string message) {
  return IdentityError{IdentityFailure::kInvalidUpdate, std::move(message)};
}

// implements: IDENT-031 (VALIDATION.md 5.5.6)
bool KindMaySign(MemberKind member, SignatureKind signature) {
  switch (member) {
    case MemberKind::kEthereum:
      return signature == SignatureKind::kErc191 || signature == SignatureKind::kErc6492;
    case MemberKind::kInstallation:
      return signature == SignatureKind::kInstallationKey;
    case MemberKind::kPasskey:
      return signature == SignatureKind::kPasskey;
  }
  return false;
}

// implements: IDENT-050 — replay keys of earlier updates only
bool Replayed(const AssociationState& s, const VerifiedSignature& sig) {
  return s.seen_replay_keys.contains(sig.replay_key);
}

// implements: IDENT-046 member chain check ("none" compares as a value)
bool ChainMatches(const AssociationState& s, const VerifiedSignature& sig) {
  auto it = s.members.find(sig.signer);
  return it == s.members.end() || it->second.added_on_chain_id == sig.chain_id;
}

std::optional<IdentityError> ApplyCreate(std::optional<AssociationState>& state,
                                         const CreateInboxAction& a, const VerifiedSignature& sig) {
  if (state.has_value()) {
    return Reject("create inbox on an existing inbox");
  }
  if (sig.signer != a.initial) {
    return Reject("create inbox signer is not the initial identifier");
  }
  if (!KindMaySign(a.initial.kind, sig.kind)) {
    return Reject("signature kind not allowed for the initial identifier");
  }
  AssociationState s;
  s.inbox_id = DeriveInboxId(a.initial, a.nonce);
  s.members.emplace(a.initial, MemberRecord{.id = a.initial,
                                            .added_by = std::nullopt,
                                            .client_timestamp_ns = std::nullopt,
                                            .added_on_chain_id = sig.chain_id});
  s.recovery = a.initial;
  state = std::move(s);
  return std::nullopt;
}

// implements: IDENT-040, IDENT-041, IDENT-042 (VALIDATION.md 5.7 AddAssociation, in order)
std::optional<IdentityError> ApplyAdd(AssociationState& s, const AddAssociationAction& a,
                                      const VerifiedSignature& existing,
                                      const VerifiedSignature& added, uint64_t timestamp_ns) {
  if (Replayed(s, existing) || Replayed(s, added)) {
    return Reject("signature already used by an earlier update");
  }
  if (added.signer != a.new_member) {
    return Reject("new member signer is not the new member");
  }
  if (existing.signer == added.signer) {
    return Reject("a member cannot add itself");
  }
  if (!KindMaySign(a.new_member.kind, added.kind)) {
    return Reject("signature kind not allowed for the new member");
  }
  const bool existing_is_member = s.members.contains(existing.signer);
  if (existing_is_member && !ChainMatches(s, existing)) {
    return Reject("signer chain does not match the member's chain");
  }
  MemberId adder;
  if (existing_is_member) {
    adder = existing.signer;
  } else if (existing.signer == s.recovery) {
    adder = s.recovery;
  } else {
    return Reject("existing signer is neither a member nor the recovery identifier");
  }
  if (!KindMaySign(adder.kind, existing.kind)) {
    return Reject("signature kind not allowed for the existing member");
  }
  if (adder.kind == MemberKind::kInstallation && a.new_member.kind == MemberKind::kInstallation) {
    return Reject("an installation cannot add an installation");
  }
  if (s.members.contains(a.new_member)) {
    return Reject("new member is already a member");
  }
  s.members.emplace(a.new_member, MemberRecord{.id = a.new_member,
                                               .added_by = adder,
                                               .client_timestamp_ns = timestamp_ns,
                                               .added_on_chain_id = added.chain_id});
  return std::nullopt;
}

// Revoke and ChangeRecoveryAddress share steps 1-3.
std::optional<IdentityError> CheckRecoverySigner(const AssociationState& s,
                                                 const VerifiedSignature& sig) {
  if (Replayed(s, sig)) {
    return Reject("signature already used by an earlier update");
  }
  if (!ChainMatches(s, sig)) {
    return Reject("signer chain does not match the member's chain");
  }
  if (sig.signer != s.recovery) {
    return Reject("signer is not the recovery identifier");
  }
  return std::nullopt;
}

// implements: IDENT-043, IDENT-044
std::optional<IdentityError> ApplyRevoke(AssociationState& s, const RevokeAssociationAction& a,
                                         const VerifiedSignature& sig) {
  if (auto e = CheckRecoverySigner(s, sig)) {
    return e;
  }
  s.members.erase(a.member);
  std::erase_if(s.members, [&a](const auto& entry) {
    return entry.first.kind == MemberKind::kInstallation && entry.second.added_by == a.member;
  });
  return std::nullopt;
}

// implements: IDENT-045
std::optional<IdentityError> ApplyChangeRecovery(AssociationState& s, const ChangeRecoveryAction& a,
                                                 const VerifiedSignature& sig) {
  if (auto e = CheckRecoverySigner(s, sig)) {
    return e;
  }
  s.recovery = a.new_recovery;
  return std::nullopt;
}

}  // namespace

// implements: IDENT-010
std::string DeriveInboxId(const MemberId& identifier, uint64_t nonce) {
  std::string text =
      identifier.kind == MemberKind::kEthereum ? identifier.value : LowerHex(identifier.value);
  text += std::to_string(nonce);
  const crypto::Sha256Digest digest = crypto::Sha256(text);
  return LowerHex(std::string_view(reinterpret_cast<const char*>(digest.data()), digest.size()));
}

// implements: IDENT-001, IDENT-002, IDENT-003 (VALIDATION.md 5.8)
std::variant<AssociationState, IdentityError> ApplyUpdate(
    const std::optional<AssociationState>& state, const DecodedIdentityUpdate& update,
    const std::vector<VerifiedAction>& actions) {
  if (actions.empty()) {
    return Reject("identity update has no actions");
  }
  std::optional<AssociationState> next = state;  // a copy: the input is untouched on failure
  for (const VerifiedAction& va : actions) {
    std::optional<IdentityError> error;
    const auto& sigs = va.signatures;
    if (const auto* c = std::get_if<CreateInboxAction>(va.action)) {
      error = ApplyCreate(next, *c, sigs.at(0));
    } else if (!next.has_value()) {
      error = Reject("the first action of an inbox must create it");  // IDENT-004
    } else if (const auto* a = std::get_if<AddAssociationAction>(va.action)) {
      error = ApplyAdd(*next, *a, sigs.at(0), sigs.at(1), update.client_timestamp_ns);
    } else if (const auto* r = std::get_if<RevokeAssociationAction>(va.action)) {
      error = ApplyRevoke(*next, *r, sigs.at(0));
    } else {
      error = ApplyChangeRecovery(*next, std::get<ChangeRecoveryAction>(*va.action), sigs.at(0));
    }
    if (error) {
      return *std::move(error);
    }
  }
  if (next->inbox_id != update.inbox_id) {
    return Reject("inbox id does not match the inbox");
  }
  for (const VerifiedAction& va : actions) {
    for (const VerifiedSignature& sig : va.signatures) {
      next->seen_replay_keys.insert(sig.replay_key);
    }
  }
  return *std::move(next);
}

}  // namespace xb::validate
