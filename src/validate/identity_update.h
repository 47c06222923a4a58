// Identity updates as typed actions (VALIDATION.md 5.1-5.4): decoding the protobuf into actions
// with every decoding rule of 5.2, the CAIP-10 shape and eip155 form checks (5.2, 5.9.1), and the
// signature text every signature of an update signs (5.4, IDENT-020).
//
// Pure functions; thread-safe; never suspend. Messages are fixed plain words: they never quote an
// identifier, key or signature (OPS-014).
#pragma once

#include <compare>
#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "base/encoding.h"
#include "identity/associations/association.pb.h"

namespace xb::validate {

// Failure classes of identity-update admission (VALIDATION.md 5.11).
enum class IdentityFailure : uint8_t {
  kMalformed,         // REASON_MALFORMED_PAYLOAD
  kInvalidSignature,  // REASON_INVALID_SIGNATURE
  kInvalidUpdate,     // REASON_INVALID_IDENTITY_UPDATE
  kTooLarge,          // REASON_TOO_LARGE
  kUnavailable,       // UNAVAILABLE (retryable verifier failure, API-231)
  kInternal,          // INTERNAL (a stored entry that does not decode)
};

struct IdentityError {
  IdentityFailure kind = IdentityFailure::kInvalidUpdate;
  std::string message;
};

enum class MemberKind : uint8_t { kEthereum = 0, kInstallation = 1, kPasskey = 2 };

// A member identifier (5.7 equality): Ethereum by the exact address string, installation and
// passkey by key bytes. A passkey's relying party is display-only and not part of identity.
struct MemberId {
  MemberKind kind = MemberKind::kEthereum;
  std::string value;  // Ethereum: "0x" + 40 lowercase hex; otherwise the key bytes

  friend bool operator==(const MemberId& a, const MemberId& b) {
    return a.kind == b.kind && a.value == b.value;
  }
  friend auto operator<=>(const MemberId& a, const MemberId& b) {
    if (auto c = a.kind <=> b.kind; c != 0) {
      return c;
    }
    return a.value <=> b.value;
  }
};

enum class SignatureKind : uint8_t { kErc191, kErc6492, kInstallationKey, kPasskey };

// A CAIP-10 account id that passed the shape check (5.2).
struct Caip10 {
  std::string chain;    // "namespace:reference", the chain route key as given
  std::string address;  // third part as given
};

// One signature slot as carried, before verification (5.5).
struct SignatureInput {
  SignatureKind kind = SignatureKind::kErc191;
  std::string bytes;       // erc_191 r||s||v; installation signature; passkey DER; SCW signature
  std::string public_key;  // installation key (32 bytes, decodable) or passkey key
  std::string authenticator_data;  // passkey
  std::string client_data_json;    // passkey
  std::string account_id;          // erc_6492, as given
  Caip10 account;                  // erc_6492, split
  uint64_t block_number = 0;       // erc_6492
};

struct CreateInboxAction {
  MemberId initial;  // Ethereum or passkey
  uint64_t nonce = 0;
  SignatureInput signature = {};
};
struct AddAssociationAction {
  MemberId new_member;
  SignatureInput existing_member_signature = {};
  SignatureInput new_member_signature = {};
};
struct RevokeAssociationAction {
  MemberId member;
  SignatureInput recovery_signature = {};
};
struct ChangeRecoveryAction {
  MemberId new_recovery;  // Ethereum or passkey
  SignatureInput recovery_signature = {};
};

using IdentityActionValue = std::variant<CreateInboxAction, AddAssociationAction,
                                         RevokeAssociationAction, ChangeRecoveryAction>;

struct DecodedIdentityUpdate {
  std::vector<IdentityActionValue> actions;
  uint64_t client_timestamp_ns = 0;
  std::string inbox_id;  // exactly as received
};

// VALIDATION.md 5.2: every failure is kMalformed. An update with zero actions decodes (5.8 rejects
// it later).
std::variant<DecodedIdentityUpdate, IdentityError> DecodeIdentityUpdate(
    const xmtp::identity::associations::IdentityUpdate& update);

// Calls `visit` with every signature slot of `update`, in action and slot order.
void ForEachSignature(
    const xmtp::identity::associations::IdentityUpdate& update,
    const std::function<void(const xmtp::identity::associations::Signature&)>& visit);

// The number of erc_6492 signatures an update carries over every signature slot (5.10 step 2).
size_t CountScwSignatures(const xmtp::identity::associations::IdentityUpdate& update);

// Distinct (chain, block_number) pairs of a new update's erc_6492 signatures (5.9.2).
using FreshnessBlocks = std::set<std::pair<std::string, uint64_t>>;

// The freshness probes of `update`, read from the protobuf itself because 5.10 step 4 comes before
// step 5 decodes it. Failures: kMalformed (an account id that is not CAIP-10 shaped) and
// kInvalidSignature (not an eip155 account, 5.9.1), in slot order.
std::variant<FreshnessBlocks, IdentityError> FreshnessBlocksOf(
    const xmtp::identity::associations::IdentityUpdate& update);

// VALIDATION.md 5.4 (IDENT-020): the UTF-8 text every signature of `update` signs.
std::string SignatureText(const DecodedIdentityUpdate& update);

// VALIDATION.md 5.2: CAIP-10 shape (three ':'-separated parts, namespace:reference matching
// ^[-a-z0-9]{3,8}:[-_a-zA-Z0-9]{1,32}$, address ^[-.%a-zA-Z0-9]{1,128}$).
std::optional<Caip10> ParseCaip10(std::string_view account_id);

// VALIDATION.md 5.9.1: namespace exactly "eip155", reference a canonical decimal uint64, address
// "0x" + 40 hex digits of either case. The chain id, or nullopt when a check fails.
std::optional<uint64_t> Eip155ChainId(const Caip10& account);

// IDENT-013: "0x" followed by exactly 40 characters from 0-9a-f.
bool IsCanonicalEthereumAddress(std::string_view address);

// VALIDATION.md 5.5: keccak256(0x19 || "Ethereum Signed Message:\n" || len || text).
std::string PersonalMessageHash(std::string_view text);

}  // namespace xb::validate
