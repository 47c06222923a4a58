// Identity-update admission (VALIDATION.md 5): decoding, signature text, every signature kind
// with positive and tamper cases, replay keys, the association state machine and the projection
// diff. Inputs are the spec's vectors (VALIDATION-vectors.json) and signatures made with
// independent tools (identity_test_vectors.h); nothing here is signed by the code under test.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "validate/identity_test_vectors.h"
#include "validate/identity_validator.h"
#include "validate/test_bytes.h"
#include "validate/validation_vectors_test_data.h"
#include "validate/webauthn.h"
#include "xmtp/backend/v1/backend.pb.h"

namespace xb::validate {
namespace {

namespace pb = xmtp::identity::associations;
using testing::Unhex;

constexpr std::string_view kWallet = "0x34dd95109b587ca90778cde5e2dd87e022453699";
constexpr std::string_view kInstallationKey =
    "03a107bff3ce10be1d70dd18e74bc09967e4d6309ba50d5f1ddc8664125531b8";
constexpr std::string_view kPasskeyKey =
    "0460fed4ba255a9d31c961eb74c6356d68c049b8923b61fa6ce669622e60f29fb67903fe1008b8bc99a41ae9e956"
    "28bc64f2f1b20c2d7e9f5177a3c294d4462299";

std::string Payload(std::string_view envelope_hex) { return Unhex(envelope_hex); }

pb::IdentityUpdate UpdateOf(std::string_view envelope_hex) {
  xmtp::backend::v1::ClientEnvelope envelope;
  EXPECT_TRUE(envelope.ParseFromString(Unhex(envelope_hex)));
  return envelope.identity_update();
}

struct Outcome {
  std::optional<IdentityOutcome> ok;
  std::optional<IdentityError> error;
};

Outcome Admit(const std::vector<std::string>& history, const pb::IdentityUpdate& update,
              const ScwVerdictFn& scw = {}, IdentityLimits limits = {}) {
  auto prepared = PrepareIdentityUpdate(history, update, limits);
  if (auto* e = std::get_if<IdentityError>(&prepared)) {
    return {std::nullopt, *e};
  }
  if (const auto& deferred = std::get<PreparedIdentityUpdate>(prepared).decoding_failure) {
    return {std::nullopt, *deferred};  // as the caller does once no freshness probe failed
  }
  auto done = FinishIdentityUpdate(std::get<PreparedIdentityUpdate>(prepared), scw);
  if (auto* e = std::get_if<IdentityError>(&done)) {
    return {std::nullopt, *e};
  }
  return {std::get<IdentityOutcome>(std::move(done)), std::nullopt};
}

std::vector<std::string> History(int n) {
  std::vector<std::string> out;
  const std::string_view all[] = {vectors::kUpdate1Envelope, vectors::kUpdate2Envelope,
                                  vectors::kUpdate3Envelope};
  for (int i = 0; i < n; ++i) {
    out.push_back(Payload(all[i]));
  }
  return out;
}

void ExpectFailure(const Outcome& o, IdentityFailure kind) {
  ASSERT_TRUE(o.error.has_value()) << "accepted";
  EXPECT_EQ(static_cast<int>(o.error->kind), static_cast<int>(kind)) << o.error->message;
}

// ---------------------------------------------------------------- 5.3, 5.4

TEST(IdentityVectors, InboxIdDerivation) {
  // verifies: IDENT-010 (VALIDATION.md 5.3, 8.1, 8.2)
  struct Case {
    MemberId id;
    uint64_t nonce;
    std::string_view inbox;
  } cases[] = {
      {{MemberKind::kEthereum, "0x1234567890abcdef1234567890abcdef12345678"},
       0,
       "fcd18d86276d7a99fe522dba9660c420f03c8648785ada7c5daae232a3df77a9"},
      {{MemberKind::kEthereum, "0x1234567890abcdef1234567890abcdef12345678"},
       1,
       "a38db5b39c536ce8cda4a67ce2a2d2fee6360dd0935875f26138e7899d6c15f7"},
      {{MemberKind::kEthereum, std::string(kWallet)},
       0,
       "3f32eda0e45ae49c871fdd6facebe8f29e11b788d830ced24989d64db11b8cb7"},
      {{MemberKind::kEthereum, std::string(kWallet)},
       1,
       "d6f67d5767e7b54999d6a39f73ccda8ba478f0d45991d2e66dfb0001c3e1462a"},
      {{MemberKind::kEthereum, std::string(kWallet)},
       18446744073709551615ULL,
       "2471a87cbe1cdac6f546ba11f763125cd0e514016b6842e611f4d087a05eccc3"},
      {{MemberKind::kEthereum, "0x220ca99fb7fafa18cb623d924794dde47b4bc2e9"},
       0,
       "f98d5ebe9896b0bb75189d9edcc397451f7f8cccecc6fc3099a86f608dca4b64"},
      {{MemberKind::kPasskey, Unhex("02aabbcc")},
       0,
       "978f5559c3de936d6c4f818c4a150afd9274613f62c282cf581f8a684e38ad23"},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(DeriveInboxId(c.id, c.nonce), c.inbox);
  }
}

TEST(IdentityVectors, SignatureTextOfTheReferenceTest) {
  // verifies: IDENT-020 (VALIDATION.md 8.1, reference implementation's test)
  DecodedIdentityUpdate u;
  u.inbox_id = "fcd18d86276d7a99fe522dba9660c420f03c8648785ada7c5daae232a3df77a9";
  u.client_timestamp_ns = 12;
  const MemberId owner{MemberKind::kEthereum, "0x1234567890abcdef1234567890abcdef12345678"};
  const MemberId address{MemberKind::kEthereum, "0x4567890abcdef1234567890abcdef12345678123"};
  const MemberId installation{MemberKind::kInstallation, Unhex("010203")};
  u.actions.push_back(CreateInboxAction{.initial = owner, .nonce = 0, .signature = {}});
  u.actions.push_back(AddAssociationAction{.new_member = address});
  u.actions.push_back(AddAssociationAction{.new_member = installation});
  u.actions.push_back(RevokeAssociationAction{.member = address});
  u.actions.push_back(RevokeAssociationAction{.member = installation});
  u.actions.push_back(ChangeRecoveryAction{
      .new_recovery = {MemberKind::kEthereum, "0x7890abcdef1234567890abcdef12345678123456"}});
  EXPECT_EQ(SignatureText(u),
            "XMTP : Authenticate to inbox\n\n"
            "Inbox ID: fcd18d86276d7a99fe522dba9660c420f03c8648785ada7c5daae232a3df77a9\n"
            "Current time: 1970-01-01T00:00:00Z\n\n"
            "- Create inbox\n  (Owner: 0x1234567890abcdef1234567890abcdef12345678)\n"
            "- Link address to inbox\n  (Address: 0x4567890abcdef1234567890abcdef12345678123)\n"
            "- Grant messaging access to app\n  (ID: 010203)\n"
            "- Unlink address from inbox\n  (Address: 0x4567890abcdef1234567890abcdef12345678123)\n"
            "- Revoke messaging access from app\n  (ID: 010203)\n"
            "- Change inbox recovery address\n"
            "  (Address: 0x7890abcdef1234567890abcdef12345678123456)\n\n"
            "For more info: https://xmtp.org/signatures");
}

TEST(IdentityVectors, TimestampFormatting) {
  DecodedIdentityUpdate u;
  u.inbox_id = "x";
  auto line = [&u](uint64_t ns) {
    u.client_timestamp_ns = ns;
    std::string t = SignatureText(u);
    return t.substr(t.find("Current time: ") + 14, 20);
  };
  EXPECT_EQ(line(0), "1970-01-01T00:00:00Z");
  EXPECT_EQ(line(12), "1970-01-01T00:00:00Z");
  EXPECT_EQ(line(1700000000000000000ULL), "2023-11-14T22:13:20Z");
  // Values >= 2^63 read as negative and floor toward the past.
  EXPECT_EQ(line(static_cast<uint64_t>(-1)), "1969-12-31T23:59:59Z");
}

// ---------------------------------------------------------------- the spec's identity log

TEST(IdentityLog, Update1RegistersWalletAndInstallation) {
  // verifies: IDENT-011, IDENT-012, IDENT-040, VALIDATION.md 8.2 update 1
  Outcome o = Admit({}, UpdateOf(vectors::kUpdate1Envelope));
  ASSERT_TRUE(o.ok) << o.error->message;
  const auto& s = o.ok->state;
  EXPECT_EQ(s.inbox_id, vectors::kIdentityInboxId);
  ASSERT_EQ(s.members.size(), 2u);
  const MemberId wallet{MemberKind::kEthereum, std::string(kWallet)};
  const MemberId installation{MemberKind::kInstallation, Unhex(kInstallationKey)};
  EXPECT_FALSE(s.members.at(wallet).added_by.has_value());
  EXPECT_FALSE(s.members.at(wallet).added_on_chain_id.has_value());
  EXPECT_EQ(s.members.at(installation).added_by, wallet);
  EXPECT_EQ(s.members.at(installation).client_timestamp_ns, 1700000000000000000ULL);
  EXPECT_EQ(s.recovery, wallet);
  EXPECT_EQ(s.seen_replay_keys,
            (std::set<std::string>{
                Unhex("3249138830018a2cd8954058d18a3d9773ac5e62ebf4f1aee368cc392027f84854347f9fdf"
                      "92a5c510202792ff078e8531a997e0bd44669fe9eba57e542132f901"),
                Unhex("39e7e5a9362dd59960be9de2ea46cb3cf8c163e075443f292327786aaeff82d8f3cccad7f3"
                      "218c58975e627269816c301d7cf4ff7086f0df704b9829d0b8e00f")}));
  ASSERT_EQ(o.ok->changes.size(), 1u);
  EXPECT_EQ(o.ok->changes[0].identifier, kWallet);
  EXPECT_EQ(o.ok->changes[0].identifier_kind, kProjectedEthereum);
  EXPECT_TRUE(o.ok->changes[0].added);
}

TEST(IdentityLog, Update2RevokesTheInstallation) {
  // verifies: IDENT-043
  Outcome o = Admit(History(1), UpdateOf(vectors::kUpdate2Envelope));
  ASSERT_TRUE(o.ok) << o.error->message;
  ASSERT_EQ(o.ok->state.members.size(), 1u);
  EXPECT_TRUE(o.ok->state.members.contains({MemberKind::kEthereum, std::string(kWallet)}));
  EXPECT_TRUE(o.ok->changes.empty());  // installations are never projected
}

TEST(IdentityLog, Update3AddsThePasskey) {
  // verifies: VALIDATION.md 5.5.3, 6 (passkey projected as lowercase hex, kind 2)
  for (int stored : {1, 2}) {
    Outcome o = Admit(History(stored), UpdateOf(vectors::kUpdate3Envelope));
    ASSERT_TRUE(o.ok) << o.error->message;
    ASSERT_EQ(o.ok->changes.size(), 1u);
    EXPECT_EQ(o.ok->changes[0].identifier, kPasskeyKey);
    EXPECT_EQ(o.ok->changes[0].identifier_kind, kProjectedPasskey);
    EXPECT_TRUE(o.ok->state.seen_replay_keys.contains(
        Unhex("b2dd83a85a2223b8092cf7bc8fb93eb47b55fa55f025ae067a25ed9e895dc4fd635ed6fc6aeb4bf7e0"
              "23c2cd00a2d65932d6e83f991c7f0b3ded8d4a4c8afcd4")));
  }
}

TEST(IdentityLog, WholeLogReplays) {
  // verifies: IDENT-004 (the stored log folds in id order before the new update)
  pb::IdentityUpdate u = UpdateOf(vectors::kUpdate3Envelope);
  Outcome o = Admit(History(2), u);
  ASSERT_TRUE(o.ok);
  EXPECT_EQ(o.ok->state.members.size(), 2u);  // wallet + passkey
}

void SetWalletSignature(pb::IdentityUpdate& u, const std::string& sig) {
  u.mutable_actions(0)
      ->mutable_create_inbox()
      ->mutable_initial_identifier_signature()
      ->mutable_erc_191()
      ->set_bytes(sig);
  u.mutable_actions(1)
      ->mutable_add()
      ->mutable_existing_member_signature()
      ->mutable_erc_191()
      ->set_bytes(sig);
}

TEST(IdentityLog, ModifiedUpdate1OnExistingInboxIsRejected) {
  // verifies: IDENT-011 (VALIDATION.md 8.2: a modified re-publication of update 1 — here its
  // v = 0/1 alias, validly signed — is CreateInbox on an existing inbox)
  pb::IdentityUpdate u = UpdateOf(vectors::kUpdate1Envelope);
  std::string sig = u.actions(0).create_inbox().initial_identifier_signature().erc_191().bytes();
  sig[64] = static_cast<char>(sig[64] - 27);
  SetWalletSignature(u, sig);
  ASSERT_TRUE(Admit({}, u).ok);
  ExpectFailure(Admit(History(2), u), IdentityFailure::kInvalidUpdate);
}

TEST(IdentityLog, Erc191AliasFormsVerifyToTheSameSignerAndKey) {
  // verifies: VALIDATION.md 5.5.1 steps 1-3, 5.6 (canonical replay key)
  const std::string v01 = Unhex(
      "3249138830018a2cd8954058d18a3d9773ac5e62ebf4f1aee368cc392027f84854347f9fdf92a5c510202792ff"
      "078e8531a997e0bd44669fe9eba57e542132f901");
  const std::string high_s = Unhex(
      "3249138830018a2cd8954058d18a3d9773ac5e62ebf4f1aee368cc392027f848abcb8060206d5a3aefdfd86d00"
      "f8717989054505f204399bd5e6b90e7c150e481b");
  const Outcome reference = Admit({}, UpdateOf(vectors::kUpdate1Envelope));
  ASSERT_TRUE(reference.ok);
  for (const std::string& sig : {v01, high_s}) {
    pb::IdentityUpdate u = UpdateOf(vectors::kUpdate1Envelope);
    SetWalletSignature(u, sig);
    Outcome o = Admit({}, u);
    ASSERT_TRUE(o.ok) << o.error->message;
    EXPECT_EQ(o.ok->state.seen_replay_keys, reference.ok->state.seen_replay_keys);
  }
}

// ---------------------------------------------------------------- tamper: ERC-191

TEST(IdentityTamper, Erc191FlippedByteChangesTheSigner) {
  pb::IdentityUpdate u = UpdateOf(vectors::kUpdate1Envelope);
  std::string sig = u.actions(0).create_inbox().initial_identifier_signature().erc_191().bytes();
  sig[40] ^= 0x01;  // inside s: a valid signature of some other key
  SetWalletSignature(u, sig);
  ExpectFailure(Admit({}, u), IdentityFailure::kInvalidUpdate);
}

TEST(IdentityTamper, Erc191BadVOrLengthIsInvalidSignature) {
  pb::IdentityUpdate u = UpdateOf(vectors::kUpdate1Envelope);
  std::string sig = u.actions(0).create_inbox().initial_identifier_signature().erc_191().bytes();
  std::string bad_v = sig;
  bad_v[64] = 29;
  SetWalletSignature(u, bad_v);
  ExpectFailure(Admit({}, u), IdentityFailure::kInvalidSignature);
  SetWalletSignature(u, sig.substr(0, 64));
  ExpectFailure(Admit({}, u), IdentityFailure::kInvalidSignature);
  SetWalletSignature(u, std::string(32, '\0') + sig.substr(32));  // r = 0
  ExpectFailure(Admit({}, u), IdentityFailure::kInvalidSignature);
}

TEST(IdentityTamper, Erc191WrongKeyIsASignerMismatch) {
  // A valid ERC-191 signature over the same text by another wallet (python3-cryptography).
  pb::IdentityUpdate u = UpdateOf(vectors::kUpdate1Envelope);
  SetWalletSignature(u, Unhex(identity_vectors::kUpdate1TextOtherWalletErc191));
  ExpectFailure(Admit({}, u), IdentityFailure::kInvalidUpdate);
}

TEST(IdentityTamper, WrongTextFailsTheInstallationSignature) {
  // verifies: IDENT-020 (the text is built by the backend, so any field change breaks it)
  pb::IdentityUpdate u = UpdateOf(vectors::kUpdate1Envelope);
  u.set_client_timestamp_ns(u.client_timestamp_ns() + 1000000000);
  ExpectFailure(Admit({}, u), IdentityFailure::kInvalidSignature);
}

TEST(IdentityTamper, Erc191ReplayedWithTheOtherVFormIsRejected) {
  // verifies: IDENT-050 (canonical ERC-191 replay key: v 28 and v 1 are one signature)
  pb::IdentityUpdate u = UpdateOf(vectors::kUpdate2Envelope);
  auto* sig = u.mutable_actions(0)
                  ->mutable_revoke()
                  ->mutable_recovery_identifier_signature()
                  ->mutable_erc_191();
  std::string bytes = sig->bytes();
  ASSERT_EQ(bytes[64], 28);
  bytes[64] = 1;
  sig->set_bytes(bytes);
  EXPECT_TRUE(Admit(History(1), u).ok);  // the alias alone is a fine first revoke
  ExpectFailure(Admit(History(2), u), IdentityFailure::kInvalidUpdate);
}

// ---------------------------------------------------------------- tamper: installation key

pb::RecoverableEd25519Signature* InstallationSig(pb::IdentityUpdate& u) {
  return u.mutable_actions(1)
      ->mutable_add()
      ->mutable_new_member_signature()
      ->mutable_installation_key();
}

TEST(IdentityTamper, InstallationFlippedByte) {
  for (size_t at : {0u, 40u, 63u}) {
    pb::IdentityUpdate u = UpdateOf(vectors::kUpdate1Envelope);
    std::string b = InstallationSig(u)->bytes();
    b[at] ^= 0x01;
    InstallationSig(u)->set_bytes(b);
    ExpectFailure(Admit({}, u), IdentityFailure::kInvalidSignature);
  }
}

TEST(IdentityTamper, InstallationWrongKey) {
  // Signed by another installation (plain-Python RFC 8032 Ed25519ph) but claiming this key.
  pb::IdentityUpdate u = UpdateOf(vectors::kUpdate1Envelope);
  InstallationSig(u)->set_bytes(Unhex(identity_vectors::kUpdate1TextOtherInstallationSig));
  ExpectFailure(Admit({}, u), IdentityFailure::kInvalidSignature);
  // A valid signature by the other key under its own key: the signer is not the new member.
  InstallationSig(u)->set_public_key(Unhex(identity_vectors::kUpdate1TextOtherInstallationKey));
  ExpectFailure(Admit({}, u), IdentityFailure::kInvalidUpdate);
  // The wrong length is invalid; a non-point key is malformed at decoding (5.2).
  InstallationSig(u)->set_bytes(
      Unhex(identity_vectors::kUpdate1TextOtherInstallationSig).substr(1));
  ExpectFailure(Admit({}, u), IdentityFailure::kInvalidSignature);
  InstallationSig(u)->set_public_key(Unhex(kInstallationKey).substr(1));
  ExpectFailure(Admit({}, u), IdentityFailure::kMalformed);
}

// ---------------------------------------------------------------- tamper: passkey

pb::RecoverablePasskeySignature* PasskeySig(pb::IdentityUpdate& u) {
  return u.mutable_actions(0)->mutable_add()->mutable_new_member_signature()->mutable_passkey();
}

TEST(IdentityTamper, PasskeyFlippedByte) {
  for (std::string_view field : {"signature", "authenticator_data", "client_data_json"}) {
    pb::IdentityUpdate u = UpdateOf(vectors::kUpdate3Envelope);
    auto* p = PasskeySig(u);
    std::string* target = field == "signature"            ? p->mutable_signature()
                          : field == "authenticator_data" ? p->mutable_authenticator_data()
                                                          : p->mutable_client_data_json();
    (*target)[field == "client_data_json" ? 2 : target->size() - 1] ^= 0x01;
    ExpectFailure(Admit(History(2), u), IdentityFailure::kInvalidSignature);
  }
}

TEST(IdentityTamper, PasskeyWrongKey) {
  pb::IdentityUpdate u = UpdateOf(vectors::kUpdate3Envelope);
  PasskeySig(u)->set_signature(Unhex(identity_vectors::kUpdate3OtherPasskeyDer));
  ExpectFailure(Admit(History(2), u), IdentityFailure::kInvalidSignature);
  // Valid under the other key, which is not the member being added.
  PasskeySig(u)->set_public_key(Unhex(identity_vectors::kUpdate3OtherPasskeyPublicKey));
  ExpectFailure(Admit(History(2), u), IdentityFailure::kInvalidUpdate);
}

TEST(IdentityTamper, PasskeyWrongTextIsAChallengeMismatch) {
  pb::IdentityUpdate u = UpdateOf(vectors::kUpdate3Envelope);
  u.set_client_timestamp_ns(u.client_timestamp_ns() + 1000000000);
  ExpectFailure(Admit(History(2), u), IdentityFailure::kInvalidSignature);
}

TEST(IdentityTamper, PasskeyHighSAliasIsAReplay) {
  // verifies: IDENT-050 (passkey replay key has s in the lower half), 5.5.3 step 5 (high S ok)
  const std::string der = Unhex(
      "3045022100b2dd83a85a2223b8092cf7bc8fb93eb47b55fa55f025ae067a25ed9e895dc4fd0220635ed6fc6aeb"
      "4bf7e023c2cd00a2d65932d6e83f991c7f0b3ded8d4a4c8afcd4");
  // n - s for P-256, re-encoded as DER (s' has its top bit set: 33-byte INTEGER).
  auto raw = P256DerToLowSRaw(der);
  ASSERT_TRUE(raw.has_value());
  const std::string n = Unhex("ffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551");
  std::string s_high(32, '\0');
  int borrow = 0;
  for (int i = 31; i >= 0; --i) {
    int v = static_cast<uint8_t>(n[i]) - static_cast<uint8_t>((*raw)[32 + i]) - borrow;
    borrow = v < 0;
    s_high[i] = static_cast<char>(v + (borrow ? 256 : 0));
  }
  std::string high_der = "\x30" + std::string(1, static_cast<char>(2 + 33 + 2 + 33)) + "\x02\x21" +
                         std::string(1, '\0') + raw->substr(0, 32) + "\x02\x21" +
                         std::string(1, '\0') + s_high;
  pb::IdentityUpdate u = UpdateOf(vectors::kUpdate3Envelope);
  PasskeySig(u)->set_signature(high_der);
  Outcome first = Admit(History(2), u);
  ASSERT_TRUE(first.ok) << first.error->message;
  std::vector<std::string> log = History(3);
  ExpectFailure(Admit(log, u), IdentityFailure::kInvalidUpdate);
}

// ---------------------------------------------------------------- decoding (5.2)

// Signature field 4 (delegated_erc_191), length-delimited, empty: the retired kind on the wire.
const std::string kRetiredDelegatedField("\x22\x00", 2);

TEST(IdentityDecoding, RetiredFieldNextToAListedSignatureIsIgnored) {
  // verifies: VALIDATION.md 5.2 (a field-4 entry next to a listed signature is ignored), 5.5.5
  pb::IdentityUpdate u = UpdateOf(vectors::kUpdate1Envelope);
  auto* sig = u.mutable_actions(0)->mutable_create_inbox()->mutable_initial_identifier_signature();
  ASSERT_EQ(sig->signature_case(), pb::Signature::kErc191);
  // After the listed signature, where a oneof member would replace it.
  ASSERT_TRUE(sig->ParseFromString(sig->SerializeAsString() + kRetiredDelegatedField));
  ASSERT_EQ(sig->signature_case(), pb::Signature::kErc191);
  Outcome o = Admit({}, u);
  ASSERT_TRUE(o.ok) << o.error->message;
}

TEST(IdentityDecoding, MalformedShapes) {
  // verifies: VALIDATION.md 5.2 (every decoding failure is malformed)
  auto expect_malformed = [](pb::IdentityUpdate u) {
    ExpectFailure(Admit({}, u), IdentityFailure::kMalformed);
  };
  pb::IdentityUpdate base = UpdateOf(vectors::kUpdate1Envelope);
  {
    pb::IdentityUpdate u = base;
    u.mutable_actions(0)->Clear();
    expect_malformed(u);
  }
  {
    pb::IdentityUpdate u = base;
    u.mutable_actions(1)->mutable_add()->clear_existing_member_signature();
    expect_malformed(u);
  }
  {
    pb::IdentityUpdate u = base;  // the retired delegated kind (field 4) alone
    auto* sig =
        u.mutable_actions(0)->mutable_create_inbox()->mutable_initial_identifier_signature();
    ASSERT_TRUE(sig->ParseFromString(kRetiredDelegatedField));
    expect_malformed(u);
  }
  {
    pb::IdentityUpdate u = base;
    u.mutable_actions(1)->mutable_add()->clear_new_member_identifier();
    expect_malformed(u);
  }
  {
    pb::IdentityUpdate u = base;
    u.mutable_actions(1)->mutable_add()->mutable_new_member_identifier()->Clear();
    expect_malformed(u);
  }
  {
    pb::IdentityUpdate u = base;  // CAIP-10 shape
    u.mutable_actions(0)
        ->mutable_create_inbox()
        ->mutable_initial_identifier_signature()
        ->mutable_erc_6492()
        ->set_account_id("eip/155:1:0xab16a96D359eC26a11e2C2b3d8f8B8942d5Bfcd");
    expect_malformed(u);
  }
  {
    pb::IdentityUpdate u = base;  // passkey string that is not hex
    auto* c = u.mutable_actions(0)->mutable_create_inbox();
    c->set_initial_identifier_kind(pb::IDENTIFIER_KIND_PASSKEY);
    c->set_initial_identifier("04zz");
    expect_malformed(u);
  }
}

TEST(IdentityDecoding, EthereumIdentifierFormsAreNeverRewritten) {
  // verifies: IDENT-013 in each of the four positions
  const std::string h = "34dd95109b587ca90778cde5e2dd87e022453699";
  std::string upper = h;
  for (char& c : upper) {
    c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  const std::vector<std::string> bad = {
      "0x" + upper,   "0x" + h.substr(0, 39) + "A", "0X" + h, h, "0x" + h.substr(0, 39),
      "0x" + h + "0", "0x" + h.substr(0, 39) + "g", ""};
  for (const std::string& form : bad) {
    pb::IdentityUpdate create = UpdateOf(vectors::kUpdate1Envelope);
    create.mutable_actions(0)->mutable_create_inbox()->set_initial_identifier(form);
    ExpectFailure(Admit({}, create), IdentityFailure::kMalformed);

    pb::IdentityUpdate add = UpdateOf(vectors::kUpdate1Envelope);
    add.mutable_actions(1)->mutable_add()->mutable_new_member_identifier()->set_ethereum_address(
        form);
    ExpectFailure(Admit({}, add), IdentityFailure::kMalformed);

    pb::IdentityUpdate revoke = UpdateOf(vectors::kUpdate2Envelope);
    revoke.mutable_actions(0)->mutable_revoke()->mutable_member_to_revoke()->set_ethereum_address(
        form);
    ExpectFailure(Admit(History(1), revoke), IdentityFailure::kMalformed);

    pb::IdentityUpdate change = UpdateOf(vectors::kUpdate2Envelope);
    auto* c = change.mutable_actions(0)->mutable_change_recovery_address();
    c->set_new_recovery_identifier(form);
    c->mutable_existing_recovery_identifier_signature()->mutable_erc_191()->set_bytes("x");
    ExpectFailure(Admit(History(1), change), IdentityFailure::kMalformed);
  }
}

TEST(IdentityRules, EmptyUpdateAndInboxIdMismatch) {
  // verifies: IDENT-001, IDENT-003
  pb::IdentityUpdate empty;
  empty.set_inbox_id(std::string(vectors::kIdentityInboxId));
  ExpectFailure(Admit(History(1), empty), IdentityFailure::kInvalidUpdate);
  pb::IdentityUpdate upper = UpdateOf(vectors::kUpdate1Envelope);
  std::string id = upper.inbox_id();
  for (char& c : id) {
    c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  upper.set_inbox_id(id);  // routes to the same topic; the text changes too, so the
  // installation signature fails first: the exact-compare rule is covered by ApplyUpdate below.
  ExpectFailure(Admit({}, upper), IdentityFailure::kInvalidSignature);
}

TEST(IdentityRules, Limits) {
  // verifies: API-234, VALIDATION.md 5.10 step 2
  std::vector<std::string> full(256, Payload(vectors::kUpdate1Envelope));
  ExpectFailure(Admit(full, UpdateOf(vectors::kUpdate2Envelope)), IdentityFailure::kInvalidUpdate);
  pb::IdentityUpdate many = UpdateOf(vectors::kUpdate1Envelope);
  for (int i = 0; i < 3; ++i) {
    auto* add = many.add_actions()->mutable_add();
    add->mutable_existing_member_signature()->mutable_erc_6492()->set_account_id(
        "eip155:1:0x" + std::string(40, 'a'));
    add->mutable_new_member_signature()->mutable_erc_6492()->set_account_id("eip155:1:0x" +
                                                                            std::string(40, 'b'));
  }
  ExpectFailure(
      Admit({}, many, {}, IdentityLimits{.max_identity_entries = 256, .max_scw_signatures = 5}),
      IdentityFailure::kTooLarge);
}

// ---------------------------------------------------------------- state machine (5.7)

VerifiedSignature Sig(MemberId signer, std::string key,
                      std::optional<uint64_t> chain = std::nullopt) {
  SignatureKind kind = SignatureKind::kErc191;
  if (signer.kind == MemberKind::kInstallation) {
    kind = SignatureKind::kInstallationKey;
  } else if (signer.kind == MemberKind::kPasskey) {
    kind = SignatureKind::kPasskey;
  } else if (chain) {
    kind = SignatureKind::kErc6492;
  }
  return VerifiedSignature{
      .kind = kind, .signer = std::move(signer), .chain_id = chain, .replay_key = std::move(key)};
}

class StateMachine : public ::testing::Test {
 protected:
  const MemberId wallet_{MemberKind::kEthereum, "0x" + std::string(40, '1')};
  const MemberId wallet2_{MemberKind::kEthereum, "0x" + std::string(40, '2')};
  const MemberId inst_{MemberKind::kInstallation, std::string(32, 'i')};
  const MemberId inst2_{MemberKind::kInstallation, std::string(32, 'j')};
  const MemberId passkey_{MemberKind::kPasskey, "\x04pk"};

  // Applies one update of the given actions (each with its signatures) to `state_`.
  std::optional<IdentityError> Apply(
      std::vector<std::pair<IdentityActionValue, std::vector<VerifiedSignature>>> acts,
      std::string inbox = "") {
    DecodedIdentityUpdate u;
    u.client_timestamp_ns = 7;
    u.inbox_id = inbox.empty() ? DeriveInboxId(wallet_, 0) : inbox;
    for (auto& a : acts) {
      u.actions.push_back(a.first);
    }
    std::vector<VerifiedAction> verified;
    for (size_t i = 0; i < acts.size(); ++i) {
      verified.push_back(VerifiedAction{.action = &u.actions[i], .signatures = acts[i].second});
    }
    auto next = ApplyUpdate(state_, u, verified);
    if (auto* e = std::get_if<IdentityError>(&next)) {
      return *e;
    }
    state_ = std::get<AssociationState>(std::move(next));
    return std::nullopt;
  }

  void Create(std::optional<uint64_t> chain = std::nullopt) {
    ASSERT_FALSE(Apply({{CreateInboxAction{.initial = wallet_, .nonce = 0, .signature = {}},
                         {Sig(wallet_, "c", chain)}}}));
  }
  std::optional<IdentityError> Add(MemberId by, MemberId added, std::string key,
                                   std::optional<uint64_t> chain = std::nullopt) {
    return Apply({{AddAssociationAction{.new_member = added},
                   {Sig(by, key + "e", chain), Sig(added, key + "n")}}});
  }

  std::optional<AssociationState> state_;
};

TEST_F(StateMachine, FirstActionMustCreate) {
  // verifies: IDENT-004, IDENT-011
  auto e = Add(wallet_, inst_, "a");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->kind, IdentityFailure::kInvalidUpdate);
  Create();
  EXPECT_TRUE(Apply({{CreateInboxAction{.initial = wallet_, .nonce = 0, .signature = {}},
                      {Sig(wallet_, "c2")}}}));
}

TEST_F(StateMachine, CreateSignerAndKindRules) {
  // verifies: IDENT-012, IDENT-031
  EXPECT_TRUE(Apply({{CreateInboxAction{.initial = wallet_, .nonce = 0, .signature = {}},
                      {Sig(wallet2_, "c")}}}));
  VerifiedSignature wrong_kind = Sig(wallet_, "c");
  wrong_kind.kind = SignatureKind::kPasskey;
  EXPECT_TRUE(
      Apply({{CreateInboxAction{.initial = wallet_, .nonce = 0, .signature = {}}, {wrong_kind}}}));
  EXPECT_TRUE(Apply(
      {{CreateInboxAction{.initial = wallet_, .nonce = 1, .signature = {}}, {Sig(wallet_, "c")}}}))
      << "inbox id of nonce 1 differs from the update's (IDENT-003)";
}

TEST_F(StateMachine, AddRules) {
  // verifies: IDENT-040, IDENT-041, IDENT-042
  Create();
  EXPECT_TRUE(Add(wallet_, wallet_, "self"));     // cannot add yourself
  EXPECT_TRUE(Add(wallet2_, inst_, "stranger"));  // neither member nor recovery
  ASSERT_FALSE(Add(wallet_, inst_, "a1"));
  EXPECT_TRUE(Add(wallet_, inst_, "again"));  // already a member
  EXPECT_TRUE(Add(inst_, inst2_, "ii"));      // installation adds installation
  ASSERT_FALSE(Add(inst_, passkey_, "ip"));   // installation adds passkey
  ASSERT_FALSE(Add(passkey_, wallet2_, "pw"));
  EXPECT_EQ(state_->members.at(wallet2_).added_by, passkey_);
  // Replay of an earlier update's key in either slot.
  EXPECT_TRUE(Apply(
      {{AddAssociationAction{.new_member = inst2_}, {Sig(wallet_, "a1e"), Sig(inst2_, "fresh")}}}));
  EXPECT_TRUE(Apply(
      {{AddAssociationAction{.new_member = inst2_}, {Sig(wallet_, "fresh"), Sig(inst2_, "a1n")}}}));
  // One update may reuse a key across its own slots.
  ASSERT_FALSE(
      Apply({{AddAssociationAction{.new_member = inst2_}, {Sig(wallet_, "same"), Sig(inst2_, "x")}},
             {RevokeAssociationAction{.member = inst2_}, {Sig(wallet_, "same")}}}));
}

TEST_F(StateMachine, RecoveryMayAddWithoutBeingAMember) {
  Create();
  ASSERT_FALSE(Apply({{RevokeAssociationAction{.member = wallet_}, {Sig(wallet_, "r")}}}));
  EXPECT_TRUE(state_->members.empty());
  EXPECT_EQ(state_->recovery, wallet_);  // keeps its role (5.7)
  ASSERT_FALSE(Add(wallet_, inst_, "a"));
  EXPECT_EQ(state_->members.at(inst_).added_by, wallet_);
}

TEST_F(StateMachine, RevokeCascadesToInstallationsAndNeedsRecovery) {
  // verifies: IDENT-043, IDENT-044
  Create();
  ASSERT_FALSE(Add(wallet_, wallet2_, "w2"));
  ASSERT_FALSE(Add(wallet2_, inst_, "i"));
  ASSERT_FALSE(Add(wallet_, inst2_, "j"));
  EXPECT_TRUE(Apply({{RevokeAssociationAction{.member = wallet2_}, {Sig(wallet2_, "r0")}}}));
  ASSERT_FALSE(Apply({{RevokeAssociationAction{.member = wallet2_}, {Sig(wallet_, "r1")}}}));
  EXPECT_FALSE(state_->members.contains(wallet2_));
  EXPECT_FALSE(state_->members.contains(inst_));  // added by the revoked address
  EXPECT_TRUE(state_->members.contains(inst2_));
  // Revoking a non-member is valid.
  EXPECT_FALSE(Apply({{RevokeAssociationAction{.member = passkey_}, {Sig(wallet_, "r2")}}}));
  // A revoked member may be added again.
  EXPECT_FALSE(Add(wallet_, wallet2_, "w2b"));
}

TEST_F(StateMachine, ChangeRecoveryMovesTheRole) {
  // verifies: IDENT-045
  Create();
  ASSERT_FALSE(Add(wallet_, wallet2_, "w2"));
  EXPECT_TRUE(Apply({{ChangeRecoveryAction{.new_recovery = passkey_}, {Sig(wallet2_, "x")}}}));
  ASSERT_FALSE(Apply({{ChangeRecoveryAction{.new_recovery = passkey_}, {Sig(wallet_, "cr")}}}));
  EXPECT_EQ(state_->recovery, passkey_);
  EXPECT_EQ(state_->members.size(), 2u);
  EXPECT_TRUE(Apply({{RevokeAssociationAction{.member = wallet2_}, {Sig(wallet_, "r")}}}));
  EXPECT_FALSE(Apply({{RevokeAssociationAction{.member = wallet2_}, {Sig(passkey_, "r")}}}));
}

TEST_F(StateMachine, ChainCheckComparesNoneAsAValue) {
  // verifies: IDENT-046 (member chain check)
  Create(/*chain=*/8453);
  EXPECT_EQ(state_->members.at(wallet_).added_on_chain_id, 8453u);
  EXPECT_TRUE(Add(wallet_, inst_, "erc191"));     // ERC-191 by an address added on a chain
  EXPECT_TRUE(Add(wallet_, inst_, "chain1", 1));  // another chain
  EXPECT_FALSE(Add(wallet_, inst_, "chain8453", 8453));
}

TEST_F(StateMachine, FailureLeavesTheStateUnchanged) {
  // verifies: IDENT-002
  Create();
  const AssociationState before = *state_;
  EXPECT_TRUE(
      Apply({{AddAssociationAction{.new_member = inst_}, {Sig(wallet_, "1"), Sig(inst_, "2")}},
             {AddAssociationAction{.new_member = inst_}, {Sig(wallet_, "3"), Sig(inst_, "4")}}}));
  EXPECT_EQ(state_->members.size(), before.members.size());
  EXPECT_EQ(state_->seen_replay_keys, before.seen_replay_keys);
}

// ---------------------------------------------------------------- smart-contract wallets

pb::IdentityUpdate ScwCreate(const std::string& account, uint64_t block) {
  const std::string address = "0x" + std::string(40, 'a');
  pb::IdentityUpdate u;
  u.set_inbox_id(DeriveInboxId({MemberKind::kEthereum, address}, 0));
  auto* c = u.add_actions()->mutable_create_inbox();
  c->set_initial_identifier(address);
  auto* s = c->mutable_initial_identifier_signature()->mutable_erc_6492();
  s->set_account_id(account);
  s->set_block_number(block);
  s->set_signature("scw-signature");
  return u;
}

TEST(IdentityScw, VerdictDecidesAndChainIsRecorded) {
  // verifies: VALIDATION.md 5.5.4, 5.9.3, 5.9.6
  const pb::IdentityUpdate u = ScwCreate("eip155:8453:0x" + std::string(40, 'A'), 77);
  std::vector<ScwCheck> seen;
  auto valid = [&seen](const ScwCheck& c) -> std::variant<bool, IdentityError> {
    seen.push_back(c);
    return true;
  };
  Outcome o = Admit({}, u, valid);
  ASSERT_TRUE(o.ok) << o.error->message;
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].chain, "eip155:8453");
  EXPECT_EQ(seen[0].address, "0x" + std::string(40, 'A'));  // as given
  EXPECT_EQ(seen[0].block_number, 77u);
  EXPECT_EQ(seen[0].signature, "scw-signature");
  auto decoded = DecodeIdentityUpdate(u);
  EXPECT_EQ(seen[0].hash,
            PersonalMessageHash(SignatureText(std::get<DecodedIdentityUpdate>(decoded))));
  const MemberId member{MemberKind::kEthereum, "0x" + std::string(40, 'a')};
  EXPECT_EQ(o.ok->state.members.at(member).added_on_chain_id, 8453u);

  auto invalid = [](const ScwCheck&) -> std::variant<bool, IdentityError> { return false; };
  ExpectFailure(Admit({}, u, invalid), IdentityFailure::kInvalidSignature);
  auto down = [](const ScwCheck&) -> std::variant<bool, IdentityError> {
    return IdentityError{IdentityFailure::kUnavailable, "signature verifier unavailable"};
  };
  ExpectFailure(Admit({}, u, down), IdentityFailure::kUnavailable);
}

TEST(IdentityScw, Eip155FormIsCheckedBeforeAnyChainAccess) {
  // verifies: IDENT-060 (VALIDATION.md 5.9.1)
  const std::string a = "0x" + std::string(40, 'a');
  for (const std::string& account :
       {"cosmos:cosmoshub-4:" + a, "eip155:01:" + a, "eip155:+1:" + a, "eip155:0x1:" + a,
        "eip155:18446744073709551616:" + a, "EIP155:1:" + a, std::string("eip155:1:bad"),
        "eip155:1:" + a.substr(2), "eip155:1:" + a + "1",
        "eip155:1:0x" + std::string(39, 'a') + "g"}) {
    auto prepared = PrepareIdentityUpdate({}, ScwCreate(account, 1), {});
    ASSERT_TRUE(std::holds_alternative<IdentityError>(prepared)) << account;
    const auto& e = std::get<IdentityError>(prepared);
    // Shape failures are malformed, eip155 form failures invalid signatures.
    EXPECT_TRUE(e.kind == IdentityFailure::kInvalidSignature ||
                e.kind == IdentityFailure::kMalformed);
  }
  EXPECT_EQ(
      std::get<IdentityError>(PrepareIdentityUpdate({}, ScwCreate("eip155:01:" + a, 1), {})).kind,
      IdentityFailure::kInvalidSignature);
  EXPECT_EQ(
      std::get<IdentityError>(PrepareIdentityUpdate({}, ScwCreate("eip/155:1:" + a, 1), {})).kind,
      IdentityFailure::kMalformed);
  auto ok = PrepareIdentityUpdate({}, ScwCreate("eip155:18446744073709551615:" + a, 9), {});
  ASSERT_TRUE(std::holds_alternative<PreparedIdentityUpdate>(ok));
  const auto& p = std::get<PreparedIdentityUpdate>(ok);
  EXPECT_EQ(p.scw_checks.size(), 1u);
  EXPECT_EQ(p.fresh_blocks,
            (std::set<std::pair<std::string, uint64_t>>{{"eip155:18446744073709551615", 9}}));
}

TEST(IdentityScw, FreshnessProbesComeBeforeDecoding) {
  // verifies: VALIDATION.md 5.10 steps 4-5, 5.9.2 (a stale block decides over a decoding failure)
  const std::string a = "0x" + std::string(40, 'a');
  pb::IdentityUpdate u = ScwCreate("eip155:10:" + a, 5);
  u.add_actions();  // an action whose kind is unset: malformed at step 5
  auto prepared = PrepareIdentityUpdate({}, u, {});
  ASSERT_TRUE(std::holds_alternative<PreparedIdentityUpdate>(prepared));
  const auto& p = std::get<PreparedIdentityUpdate>(prepared);
  EXPECT_EQ(p.fresh_blocks, (FreshnessBlocks{{"eip155:10", 5}}));
  ASSERT_TRUE(p.decoding_failure.has_value());
  EXPECT_EQ(p.decoding_failure->kind, IdentityFailure::kMalformed);
  EXPECT_TRUE(p.updates.empty());
  EXPECT_TRUE(p.scw_checks.empty());
  // Finish never verifies a half-decoded update.
  auto finished = FinishIdentityUpdate(p, {});
  ASSERT_TRUE(std::holds_alternative<IdentityError>(finished));
  EXPECT_EQ(std::get<IdentityError>(finished).kind, IdentityFailure::kMalformed);

  // Without an ERC-6492 signature there is nothing to probe: the decoding failure is immediate.
  pb::IdentityUpdate plain = UpdateOf(vectors::kUpdate1Envelope);
  plain.add_actions();
  auto direct = PrepareIdentityUpdate({}, plain, {});
  ASSERT_TRUE(std::holds_alternative<IdentityError>(direct));
  EXPECT_EQ(std::get<IdentityError>(direct).kind, IdentityFailure::kMalformed);

  // A CAIP-10 shape failure is found by the probes themselves, in slot order.
  pb::IdentityUpdate shape = ScwCreate("eip155:10:" + a, 5);
  shape.mutable_actions(0)
      ->mutable_create_inbox()
      ->mutable_initial_identifier_signature()
      ->mutable_erc_6492()
      ->set_account_id("eip155:10");
  auto refused = PrepareIdentityUpdate({}, shape, {});
  ASSERT_TRUE(std::holds_alternative<IdentityError>(refused));
  EXPECT_EQ(std::get<IdentityError>(refused).kind, IdentityFailure::kMalformed);
}

TEST(IdentityScw, Caip10Shapes) {
  // verifies: VALIDATION.md 8.1 CAIP-10 parsing
  struct Case {
    std::string_view in, chain, address;
  } ok[] = {
      {"eip155:1:0xab16a96D359eC26a11e2C2b3d8f8B8942d5Bfcdb", "eip155:1",
       "0xab16a96D359eC26a11e2C2b3d8f8B8942d5Bfcdb"},
      {"bip122:000000000019d6689c085ae165831e93:128Lkh3S7CkDTBZ8W7BbpsN3YYizJMp8p6",
       "bip122:000000000019d6689c085ae165831e93", "128Lkh3S7CkDTBZ8W7BbpsN3YYizJMp8p6"},
      {"cosmos:cosmoshub-3:cosmos1t2uflqwqe0fsj0shcfkrvpukewcw40yjj6hdc0", "cosmos:cosmoshub-3",
       "cosmos1t2uflqwqe0fsj0shcfkrvpukewcw40yjj6hdc0"},
      {"starknet:SN_GOERLI:0x02dd1b492765c064eac4039e3841aa5f382773b598097a40073bd8b48170ab57",
       "starknet:SN_GOERLI", "0x02dd1b492765c064eac4039e3841aa5f382773b598097a40073bd8b48170ab57"},
      {"hedera:mainnet:0.0.1234567890-zbhlt", "hedera:mainnet", "0.0.1234567890-zbhlt"},
      {"chainstd:8c3444cf8970a9e41a706fab93e7a6c4:"
       "6d9b0b4b9994e8a6afbd3dc3ed983cd51c755afb27cd1dc7825ef59c134a39f7",
       "chainstd:8c3444cf8970a9e41a706fab93e7a6c4",
       "6d9b0b4b9994e8a6afbd3dc3ed983cd51c755afb27cd1dc7825ef59c134a39f7"},
  };
  for (const auto& c : ok) {
    auto parsed = ParseCaip10(c.in);
    ASSERT_TRUE(parsed) << c.in;
    EXPECT_EQ(parsed->chain, c.chain);
    EXPECT_EQ(parsed->address, c.address);
  }
  EXPECT_FALSE(ParseCaip10("eip/155:1:0xab16a96D359eC26a11e2C2b3d8f8B8942d5Bfcd"));
  EXPECT_FALSE(ParseCaip10("eip155:1"));
  EXPECT_FALSE(ParseCaip10("eip155:1:a:b"));
}

// ---------------------------------------------------------------- WebAuthn pieces

TEST(WebAuthn, ClientDataJson) {
  auto ok = ParseClientDataJson(
      R"({"type":"webauthn.get","challenge":"abc","origin":"https://x","n":[1,{"a":null}]})");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->challenge, "abc");
  EXPECT_EQ(ok->origin, "https://x");
  auto escaped = ParseClientDataJson(R"({"challenge":"a\u0062c","origin":"\ud83d\ude00"})");
  ASSERT_TRUE(escaped);
  EXPECT_EQ(escaped->challenge, "abc");
  EXPECT_EQ(escaped->origin, "\xf0\x9f\x98\x80");
  auto array = ParseClientDataJson(R"(["https://x","abc"])");  // [quirk] [origin, challenge]
  ASSERT_TRUE(array);
  EXPECT_EQ(array->challenge, "abc");
  EXPECT_FALSE(ParseClientDataJson(R"({"challenge":"a","challenge":"b","origin":"o"})"));
  EXPECT_FALSE(ParseClientDataJson(R"({"challenge":"a"})"));
  EXPECT_FALSE(ParseClientDataJson(R"({"challenge":1,"origin":"o"})"));
  EXPECT_FALSE(ParseClientDataJson(R"({"challenge":"a","origin":"o"} x)"));
  EXPECT_FALSE(ParseClientDataJson(R"(["o","c","d"])"));
  EXPECT_FALSE(ParseClientDataJson(""));
  EXPECT_FALSE(ParseClientDataJson(std::string(1000, '[')));
}

TEST(WebAuthn, StrictDer) {
  const std::string der = Unhex(
      "3045022100b2dd83a85a2223b8092cf7bc8fb93eb47b55fa55f025ae067a25ed9e895dc4fd0220635ed6fc6aeb"
      "4bf7e023c2cd00a2d65932d6e83f991c7f0b3ded8d4a4c8afcd4");
  ASSERT_TRUE(P256DerToLowSRaw(der));
  EXPECT_FALSE(P256DerToLowSRaw(der + std::string(1, '\0')));  // trailing byte
  std::string non_minimal = Unhex(
      "3007020200010201"
      "01");
  EXPECT_FALSE(P256DerToLowSRaw(non_minimal));
  EXPECT_FALSE(P256DerToLowSRaw(Unhex("3006020100020101")));  // r = 0
  EXPECT_FALSE(P256DerToLowSRaw(Unhex("3006020180020101")));  // negative r
}

TEST(WebAuthn, Base64Url) {
  EXPECT_EQ(Base64UrlNoPad(""), "");
  EXPECT_EQ(Base64UrlNoPad("f"), "Zg");
  EXPECT_EQ(Base64UrlNoPad("fo"), "Zm8");
  EXPECT_EQ(Base64UrlNoPad("foo"), "Zm9v");
  EXPECT_EQ(Base64UrlNoPad("\xfb\xff"), "-_8");
}

}  // namespace
}  // namespace xb::validate
