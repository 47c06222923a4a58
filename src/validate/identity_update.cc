#include "validate/identity_update.h"

#include <charconv>
#include <cstdio>

#include "crypto/ed25519ph.h"
#include "crypto/keccak256.h"

namespace xb::validate {
namespace {

namespace pb = xmtp::identity::associations;

IdentityError Malformed(std::string message) {
  return IdentityError{IdentityFailure::kMalformed, std::move(message)};
}

bool IsHexDigit(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') {
    return c - '0';
  }
  if (c >= 'a' && c <= 'f') {
    return c - 'a' + 10;
  }
  return c - 'A' + 10;
}

// Hex of either case to bytes; nullopt for an odd length or a non-hex character.
std::optional<std::string> DecodeHex(std::string_view hex) {
  if (hex.size() % 2 != 0) {
    return std::nullopt;
  }
  std::string out;
  out.reserve(hex.size() / 2);
  for (size_t i = 0; i < hex.size(); i += 2) {
    if (!IsHexDigit(hex[i]) || !IsHexDigit(hex[i + 1])) {
      return std::nullopt;
    }
    out.push_back(static_cast<char>(HexValue(hex[i]) * 16 + HexValue(hex[i + 1])));
  }
  return out;
}

bool AllOf(std::string_view s, bool (*allowed)(char)) {
  for (char c : s) {
    if (!allowed(c)) {
      return false;
    }
  }
  return true;
}

bool NamespaceChar(char c) { return c == '-' || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }
bool ReferenceChar(char c) {
  return c == '-' || c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9');
}
bool AddressChar(char c) { return c == '.' || c == '%' || ReferenceChar(c); }

// Kind mapping of 5.2: PASSKEY is passkey; UNSPECIFIED and unknown values read as Ethereum.
bool IsPasskeyKind(int kind) { return kind == pb::IDENTIFIER_KIND_PASSKEY; }

// A string-carried identifier (CreateInbox, ChangeRecoveryAddress) of the given kind.
std::variant<MemberId, IdentityError> StringIdentifier(const std::string& text, int kind) {
  if (IsPasskeyKind(kind)) {
    auto key = DecodeHex(text);
    if (!key) {
      return Malformed("passkey identifier is not hex");
    }
    return MemberId{MemberKind::kPasskey, *std::move(key)};
  }
  // implements: IDENT-013 (never rewritten, only refused)
  if (!IsCanonicalEthereumAddress(text)) {
    return Malformed("ethereum identifier is not 0x and 40 lowercase hex digits");
  }
  return MemberId{MemberKind::kEthereum, text};
}

std::variant<MemberId, IdentityError> Member(const pb::MemberIdentifier& m) {
  switch (m.kind_case()) {
    case pb::MemberIdentifier::kEthereumAddress:
      if (!IsCanonicalEthereumAddress(m.ethereum_address())) {
        return Malformed("ethereum identifier is not 0x and 40 lowercase hex digits");
      }
      return MemberId{MemberKind::kEthereum, m.ethereum_address()};
    case pb::MemberIdentifier::kInstallationPublicKey:
      return MemberId{MemberKind::kInstallation, m.installation_public_key()};
    case pb::MemberIdentifier::kPasskey:
      return MemberId{MemberKind::kPasskey, m.passkey().key()};
    case pb::MemberIdentifier::KIND_NOT_SET:
      break;
  }
  return Malformed("member identifier kind is not set");
}

std::variant<SignatureInput, IdentityError> Signature(const pb::Signature& s) {
  SignatureInput out;
  switch (s.signature_case()) {
    case pb::Signature::kErc191:
      out.kind = SignatureKind::kErc191;
      out.bytes = s.erc_191().bytes();
      return out;
    case pb::Signature::kErc6492: {
      out.kind = SignatureKind::kErc6492;
      out.account_id = s.erc_6492().account_id();
      auto account = ParseCaip10(out.account_id);
      if (!account) {
        return Malformed("smart contract wallet account id is not CAIP-10");
      }
      out.account = *std::move(account);
      out.block_number = s.erc_6492().block_number();
      out.bytes = s.erc_6492().signature();
      return out;
    }
    case pb::Signature::kInstallationKey:
      out.kind = SignatureKind::kInstallationKey;
      out.public_key = s.installation_key().public_key();
      if (!crypto::Ed25519PointDecodes(out.public_key)) {
        return Malformed("installation public key is not an Ed25519 point");
      }
      out.bytes = s.installation_key().bytes();
      return out;
    case pb::Signature::kPasskey:
      out.kind = SignatureKind::kPasskey;
      out.public_key = s.passkey().public_key();
      out.bytes = s.passkey().signature();
      out.authenticator_data = s.passkey().authenticator_data();
      out.client_data_json = s.passkey().client_data_json();
      return out;
    case pb::Signature::SIGNATURE_NOT_SET:
      break;
  }
  // implements: VALIDATION.md 5.2, 5.5.5 — the retired field 4 is reserved in the proto, so a
  // signature carrying only it arrives here.
  return Malformed("signature kind is not set (the legacy delegated kind is retired)");
}

template <typename T>
bool Take(std::variant<T, IdentityError>&& from, T& to, std::optional<IdentityError>& error) {
  if (auto* e = std::get_if<IdentityError>(&from)) {
    error = std::move(*e);
    return false;
  }
  to = std::move(std::get<T>(from));
  return true;
}

std::variant<IdentityActionValue, IdentityError> Action(const pb::IdentityAction& a) {
  std::optional<IdentityError> error;
  switch (a.kind_case()) {
    case pb::IdentityAction::kCreateInbox: {
      const auto& c = a.create_inbox();
      CreateInboxAction out;
      out.nonce = c.nonce();
      if (Take(StringIdentifier(c.initial_identifier(), c.initial_identifier_kind()), out.initial,
               error) &&
          Take(Signature(c.initial_identifier_signature()), out.signature, error)) {
        return out;
      }
      break;
    }
    case pb::IdentityAction::kAdd: {
      const auto& c = a.add();
      AddAssociationAction out;
      if (!c.has_new_member_identifier()) {
        return Malformed("new member identifier is absent");
      }
      if (Take(Member(c.new_member_identifier()), out.new_member, error) &&
          Take(Signature(c.existing_member_signature()), out.existing_member_signature, error) &&
          Take(Signature(c.new_member_signature()), out.new_member_signature, error)) {
        return out;
      }
      break;
    }
    case pb::IdentityAction::kRevoke: {
      const auto& c = a.revoke();
      RevokeAssociationAction out;
      if (!c.has_member_to_revoke()) {
        return Malformed("member to revoke is absent");
      }
      if (Take(Member(c.member_to_revoke()), out.member, error) &&
          Take(Signature(c.recovery_identifier_signature()), out.recovery_signature, error)) {
        return out;
      }
      break;
    }
    case pb::IdentityAction::kChangeRecoveryAddress: {
      const auto& c = a.change_recovery_address();
      ChangeRecoveryAction out;
      if (Take(StringIdentifier(c.new_recovery_identifier(), c.new_recovery_identifier_kind()),
               out.new_recovery, error) &&
          Take(Signature(c.existing_recovery_identifier_signature()), out.recovery_signature,
               error)) {
        return out;
      }
      break;
    }
    case pb::IdentityAction::KIND_NOT_SET:
      return Malformed("identity action kind is not set");
  }
  return *std::move(error);
}

// Identifier text of 5.4: the address as carried, or lowercase hex of key bytes.
std::string IdentifierText(const MemberId& m) {
  return m.kind == MemberKind::kEthereum ? m.value : LowerHex(m.value);
}

struct ActionLine {
  const char* first;
  const char* label;
};

ActionLine MemberLine(MemberKind kind, bool add) {
  switch (kind) {
    case MemberKind::kInstallation:
      return add ? ActionLine{"Grant messaging access to app", "ID"}
                 : ActionLine{"Revoke messaging access from app", "ID"};
    case MemberKind::kEthereum:
      return add ? ActionLine{"Link address to inbox", "Address"}
                 : ActionLine{"Unlink address from inbox", "Address"};
    case MemberKind::kPasskey:
      break;
  }
  return add ? ActionLine{"Link passkey to inbox", "Passkey"}
             : ActionLine{"Unlink passkey from inbox", "Passkey"};
}

// Days since 1970-01-01 to a civil date (proleptic Gregorian; H. Hinnant's days_from_civil
// inverse), valid for every day an int64 nanosecond count can name.
void CivilFromDays(int64_t z, int64_t& y, unsigned& m, unsigned& d) {
  z += 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const auto doe = static_cast<unsigned>(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  y = static_cast<int64_t>(yoe) + era * 400;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  d = doy - (153 * mp + 2) / 5 + 1;
  m = mp < 10 ? mp + 3 : mp - 9;
  y += (m <= 2);
}

// 5.4: the timestamp read as int64, floor-divided to seconds, RFC 3339 UTC without fraction.
std::string Rfc3339(uint64_t client_timestamp_ns) {
  const auto ns = static_cast<int64_t>(client_timestamp_ns);
  int64_t secs = ns / 1000000000;
  if (ns % 1000000000 < 0) {
    --secs;
  }
  int64_t days = secs / 86400;
  int64_t rem = secs % 86400;
  if (rem < 0) {
    rem += 86400;
    --days;
  }
  int64_t y = 0;
  unsigned m = 0;
  unsigned d = 0;
  CivilFromDays(days, y, m, d);
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%04lld-%02u-%02uT%02lld:%02lld:%02lldZ",
                static_cast<long long>(y), m, d, static_cast<long long>(rem / 3600),
                static_cast<long long>(rem / 60 % 60), static_cast<long long>(rem % 60));
  return buf;
}

}  // namespace

bool IsCanonicalEthereumAddress(std::string_view address) {
  if (address.size() != 42 || address[0] != '0' || address[1] != 'x') {
    return false;
  }
  for (char c : address.substr(2)) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
      return false;
    }
  }
  return true;
}

// implements: VALIDATION.md 5.2 (CAIP-10 shape)
std::optional<Caip10> ParseCaip10(std::string_view account_id) {
  const size_t first = account_id.find(':');
  if (first == std::string_view::npos) {
    return std::nullopt;
  }
  const size_t second = account_id.find(':', first + 1);
  if (second == std::string_view::npos ||
      account_id.find(':', second + 1) != std::string_view::npos) {
    return std::nullopt;
  }
  const std::string_view ns = account_id.substr(0, first);
  const std::string_view ref = account_id.substr(first + 1, second - first - 1);
  const std::string_view address = account_id.substr(second + 1);
  if (ns.size() < 3 || ns.size() > 8 || !AllOf(ns, NamespaceChar) || ref.empty() ||
      ref.size() > 32 || !AllOf(ref, ReferenceChar) || address.empty() || address.size() > 128 ||
      !AllOf(address, AddressChar)) {
    return std::nullopt;
  }
  return Caip10{std::string(account_id.substr(0, second)), std::string(address)};
}

// implements: VALIDATION.md 5.9.1 (IDENT-060: checked before any chain access)
std::optional<uint64_t> Eip155ChainId(const Caip10& account) {
  static constexpr std::string_view kPrefix = "eip155:";
  const std::string_view chain = account.chain;
  if (chain.substr(0, kPrefix.size()) != kPrefix) {
    return std::nullopt;
  }
  const std::string_view ref = chain.substr(kPrefix.size());
  if (ref.empty() || (ref.size() > 1 && ref[0] == '0')) {
    return std::nullopt;
  }
  for (char c : ref) {
    if (c < '0' || c > '9') {
      return std::nullopt;
    }
  }
  uint64_t id = 0;
  auto [end, ec] = std::from_chars(ref.data(), ref.data() + ref.size(), id);
  if (ec != std::errc() || end != ref.data() + ref.size()) {
    return std::nullopt;  // above 2^64 - 1
  }
  const std::string_view address = account.address;
  if (address.size() != 42 || address[0] != '0' || address[1] != 'x' ||
      !AllOf(address.substr(2), IsHexDigit)) {
    return std::nullopt;
  }
  return id;
}

// implements: VALIDATION.md 5.2, IDENT-013
std::variant<DecodedIdentityUpdate, IdentityError> DecodeIdentityUpdate(
    const pb::IdentityUpdate& update) {
  DecodedIdentityUpdate out;
  out.client_timestamp_ns = update.client_timestamp_ns();
  out.inbox_id = update.inbox_id();
  out.actions.reserve(static_cast<size_t>(update.actions_size()));
  for (const auto& a : update.actions()) {
    auto action = Action(a);
    if (auto* e = std::get_if<IdentityError>(&action)) {
      return std::move(*e);
    }
    out.actions.push_back(std::move(std::get<IdentityActionValue>(action)));
  }
  return out;
}

void ForEachSignature(const pb::IdentityUpdate& update,
                      const std::function<void(const pb::Signature&)>& visit) {
  for (const auto& a : update.actions()) {
    switch (a.kind_case()) {
      case pb::IdentityAction::kCreateInbox:
        visit(a.create_inbox().initial_identifier_signature());
        break;
      case pb::IdentityAction::kAdd:
        visit(a.add().existing_member_signature());
        visit(a.add().new_member_signature());
        break;
      case pb::IdentityAction::kRevoke:
        visit(a.revoke().recovery_identifier_signature());
        break;
      case pb::IdentityAction::kChangeRecoveryAddress:
        visit(a.change_recovery_address().existing_recovery_identifier_signature());
        break;
      case pb::IdentityAction::KIND_NOT_SET:
        break;
    }
  }
}

size_t CountScwSignatures(const pb::IdentityUpdate& update) {
  size_t n = 0;
  ForEachSignature(update, [&n](const pb::Signature& s) { n += s.has_erc_6492() ? 1 : 0; });
  return n;
}

// implements: VALIDATION.md 5.9.2 (the blocks to probe, found before 5.10 step 5 decodes)
std::variant<FreshnessBlocks, IdentityError> FreshnessBlocksOf(const pb::IdentityUpdate& update) {
  FreshnessBlocks blocks;
  std::optional<IdentityError> error;
  ForEachSignature(update, [&](const pb::Signature& s) {
    if (error || !s.has_erc_6492()) {
      return;
    }
    auto account = ParseCaip10(s.erc_6492().account_id());
    if (!account) {
      error = Malformed("smart contract wallet account id is not CAIP-10");
    } else if (!Eip155ChainId(*account)) {
      error = IdentityError{IdentityFailure::kInvalidSignature,
                            "smart contract wallet account id is not an eip155 account"};
    } else {
      blocks.emplace(account->chain, s.erc_6492().block_number());
    }
  });
  if (error) {
    return *std::move(error);
  }
  return blocks;
}

// implements: IDENT-020 (VALIDATION.md 5.4)
std::string SignatureText(const DecodedIdentityUpdate& update) {
  std::string text = "XMTP : Authenticate to inbox\n\nInbox ID: ";
  text += update.inbox_id;
  text += "\nCurrent time: ";
  text += Rfc3339(update.client_timestamp_ns);
  text += "\n\n";
  bool first_action = true;
  for (const auto& action : update.actions) {
    ActionLine line{};
    const MemberId* named = nullptr;
    if (const auto* c = std::get_if<CreateInboxAction>(&action)) {
      line = {"Create inbox", "Owner"};
      named = &c->initial;
    } else if (const auto* a = std::get_if<AddAssociationAction>(&action)) {
      line = MemberLine(a->new_member.kind, /*add=*/true);
      named = &a->new_member;
    } else if (const auto* r = std::get_if<RevokeAssociationAction>(&action)) {
      line = MemberLine(r->member.kind, /*add=*/false);
      named = &r->member;
    } else {
      const auto& ch = std::get<ChangeRecoveryAction>(action);
      line = {"Change inbox recovery address", "Address"};
      named = &ch.new_recovery;
    }
    if (!first_action) {
      text += "\n";
    }
    first_action = false;
    text += "- ";
    text += line.first;
    text += "\n  (";
    text += line.label;
    text += ": ";
    text += IdentifierText(*named);
    text += ")";
  }
  text += "\n\nFor more info: https://xmtp.org/signatures";
  return text;
}

std::string PersonalMessageHash(std::string_view text) {
  std::string prefixed = "\x19";
  prefixed += "Ethereum Signed Message:\n";
  prefixed += std::to_string(text.size());
  prefixed += text;
  const auto digest = crypto::Keccak256(prefixed);
  return std::string(reinterpret_cast<const char*>(digest.data()), digest.size());
}

}  // namespace xb::validate
