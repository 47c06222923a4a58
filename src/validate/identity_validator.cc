#include "validate/identity_validator.h"

#include "xmtp/backend/v1/backend.pb.h"

namespace xb::validate {
namespace {

// The signature slots of one action, in slot order (5.10 step 6).
std::vector<const SignatureInput*> Slots(const IdentityActionValue& action) {
  if (const auto* c = std::get_if<CreateInboxAction>(&action)) {
    return {&c->signature};
  }
  if (const auto* a = std::get_if<AddAssociationAction>(&action)) {
    return {&a->existing_member_signature, &a->new_member_signature};
  }
  if (const auto* r = std::get_if<RevokeAssociationAction>(&action)) {
    return {&r->recovery_signature};
  }
  return {&std::get<ChangeRecoveryAction>(action).recovery_signature};
}

std::optional<ProjectionChange> Projected(const MemberId& m, bool added) {
  switch (m.kind) {
    case MemberKind::kEthereum:
      return ProjectionChange{m.value, kProjectedEthereum, added};  // already lower case (5.2)
    case MemberKind::kPasskey:
      return ProjectionChange{LowerHex(m.value), kProjectedPasskey, added};
    case MemberKind::kInstallation:
      break;  // installations are never projected
  }
  return std::nullopt;
}

}  // namespace

// implements: VALIDATION.md 5.10 steps 2, 3, 4's probes, 5; API-234
std::variant<PreparedIdentityUpdate, IdentityError> PrepareIdentityUpdate(
    const std::vector<std::string>& history,
    const xmtp::identity::associations::IdentityUpdate& update, const IdentityLimits& limits) {
  if (CountScwSignatures(update) > limits.max_scw_signatures) {
    return IdentityError{IdentityFailure::kTooLarge, "identity update exceeds signature limit"};
  }
  if (history.size() >= limits.max_identity_entries) {
    return IdentityError{IdentityFailure::kInvalidUpdate, "identity history limit reached"};
  }
  PreparedIdentityUpdate out;
  auto blocks = FreshnessBlocksOf(update);
  if (auto* e = std::get_if<IdentityError>(&blocks)) {
    return std::move(*e);
  }
  out.fresh_blocks = std::get<FreshnessBlocks>(std::move(blocks));
  // Step 5 comes after the freshness probes: with probes to make, a decoding failure waits for
  // them (a stale block decides first); without, it is the answer now.
  auto fail_decoding =
      [&out](IdentityError e) -> std::variant<PreparedIdentityUpdate, IdentityError> {
    if (out.fresh_blocks.empty()) {
      return e;
    }
    out.updates.clear();
    out.decoding_failure = std::move(e);
    return std::move(out);
  };
  out.updates.reserve(history.size() + 1);
  for (const std::string& payload : history) {
    xmtp::backend::v1::ClientEnvelope envelope;
    if (!envelope.ParseFromString(payload) || !envelope.has_identity_update()) {
      return IdentityError{IdentityFailure::kInternal,
                           "a stored identity entry is not an identity update"};
    }
    auto decoded = DecodeIdentityUpdate(envelope.identity_update());
    if (auto* e = std::get_if<IdentityError>(&decoded)) {
      return fail_decoding(std::move(*e));
    }
    out.updates.push_back(std::move(std::get<DecodedIdentityUpdate>(decoded)));
  }
  auto decoded = DecodeIdentityUpdate(update);
  if (auto* e = std::get_if<IdentityError>(&decoded)) {
    return fail_decoding(std::move(*e));
  }
  out.updates.push_back(std::move(std::get<DecodedIdentityUpdate>(decoded)));

  for (size_t u = 0; u < out.updates.size(); ++u) {
    out.texts.push_back(SignatureText(out.updates[u]));
    out.personal_hashes.push_back(PersonalMessageHash(out.texts.back()));
    for (const auto& action : out.updates[u].actions) {
      for (const SignatureInput* slot : Slots(action)) {
        if (slot->kind != SignatureKind::kErc6492) {
          continue;
        }
        auto check = ScwCheckOf(*slot, out.personal_hashes.back());
        if (std::holds_alternative<IdentityError>(check)) {
          continue;  // stored: fails the same way in FinishIdentityUpdate; new: refused above
        }
        out.scw_checks.insert(std::get<ScwCheck>(std::move(check)));
      }
    }
  }
  return out;
}

// implements: VALIDATION.md 5.10 steps 6-8, IDENT-004, IDENT-005
std::variant<IdentityOutcome, IdentityError> FinishIdentityUpdate(
    const PreparedIdentityUpdate& prepared, const ScwVerdictFn& scw) {
  if (prepared.decoding_failure) {
    return *prepared.decoding_failure;
  }
  // Step 6: every signature of every update, in log, action, slot order.
  std::vector<std::vector<VerifiedAction>> verified(prepared.updates.size());
  for (size_t u = 0; u < prepared.updates.size(); ++u) {
    for (const auto& action : prepared.updates[u].actions) {
      VerifiedAction va{.action = &action, .signatures = {}};
      for (const SignatureInput* slot : Slots(action)) {
        auto sig = VerifySignature(*slot, prepared.texts[u], prepared.personal_hashes[u], scw);
        if (auto* e = std::get_if<IdentityError>(&sig)) {
          return std::move(*e);
        }
        va.signatures.push_back(std::move(std::get<VerifiedSignature>(sig)));
      }
      verified[u].push_back(std::move(va));
    }
  }
  // Step 7: fold the stored log from an empty state, then the new update.
  std::optional<AssociationState> state;
  for (size_t u = 0; u + 1 < prepared.updates.size(); ++u) {
    auto next = ApplyUpdate(state, prepared.updates[u], verified[u]);
    if (auto* e = std::get_if<IdentityError>(&next)) {
      return std::move(*e);
    }
    state = std::move(std::get<AssociationState>(next));
  }
  auto next = ApplyUpdate(state, prepared.updates.back(), verified.back());
  if (auto* e = std::get_if<IdentityError>(&next)) {
    return std::move(*e);
  }
  // Step 8: the member diff.
  IdentityOutcome out{.state = std::move(std::get<AssociationState>(next)), .changes = {}};
  for (const auto& [id, record] : out.state.members) {
    if (!state || !state->members.contains(id)) {
      if (auto change = Projected(id, /*added=*/true)) {
        out.changes.push_back(*std::move(change));
      }
    }
  }
  if (state) {
    for (const auto& [id, record] : state->members) {
      if (!out.state.members.contains(id)) {
        if (auto change = Projected(id, /*added=*/false)) {
          out.changes.push_back(*std::move(change));
        }
      }
    }
  }
  return out;
}

}  // namespace xb::validate
