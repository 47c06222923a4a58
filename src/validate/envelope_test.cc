#include "validate/envelope.h"

#include <gtest/gtest.h>

#include <cctype>

#include "crypto/sha256.h"
#include "mls/message_contents/commit_log.pb.h"
#include "validate/mls_test_builders.h"
#include "validate/test_bytes.h"
#include "validate/validation_vectors_test_data.h"

namespace xb::validate {
namespace {

using testing::Hex;
using testing::KeyPackage;
using testing::KeyPackageSpec;
using testing::PrivateMessage;
using testing::Repeat;
using testing::Unhex;
using xmtp::backend::v1::ClientEnvelope;
using xmtp::backend::v1::PublishError;

ClientEnvelope Decode(std::string_view hex) {
  ClientEnvelope e;
  EXPECT_TRUE(e.ParseFromString(Unhex(hex)));
  return e;
}

// Parses and expects acceptance; returns the result (a default one after a failure).
ParsedEnvelope Accept(const ClientEnvelope& e) {
  Expected<ParsedEnvelope, Rejection> r = ParseEnvelope(e);
  if (!r.ok()) {
    ADD_FAILURE() << "rejected: " << r.error().message;
    return ParsedEnvelope{};
  }
  ParsedEnvelope p = std::move(r).value();
  // API-211: the hash is SHA-256 of the stored bytes, always.
  EXPECT_EQ(p.message_hash, crypto::Sha256(p.stored_bytes));
  EXPECT_TRUE(ValidateRequestTopic(p.topic).ok());
  EXPECT_EQ(KindOf(p.topic), p.kind);
  return p;
}

// Parses and expects REASON_MALFORMED_PAYLOAD with `message`. Every rejection message is plain
// printable words: it never carries payload bytes.
void ExpectMalformed(const ClientEnvelope& e, std::string_view message) {
  Expected<ParsedEnvelope, Rejection> r = ParseEnvelope(e);
  ASSERT_FALSE(r.ok()) << "accepted; wanted: " << message;
  const Rejection* rejection = &r.error();
  EXPECT_EQ(rejection->reason, PublishError::REASON_MALFORMED_PAYLOAD);
  EXPECT_EQ(rejection->message, message);
  for (char c : rejection->message) {
    EXPECT_TRUE(c >= 0x20 && c < 0x7f) << rejection->message;
  }
}

ClientEnvelope GroupMessage(std::string_view data) {
  ClientEnvelope e;
  e.mutable_group_message()->set_data(std::string(data));
  return e;
}

ClientEnvelope KeyPackageEnvelope(std::string_view tls) {
  ClientEnvelope e;
  e.mutable_key_package()->set_key_package_tls_serialized(std::string(tls));
  return e;
}

ClientEnvelope IdentityUpdate(std::string_view inbox_id) {
  ClientEnvelope e;
  e.mutable_identity_update()->set_inbox_id(std::string(inbox_id));
  e.mutable_identity_update()->set_client_timestamp_ns(1);
  return e;
}

ClientEnvelope CommitLog(std::string_view group_id) {
  xmtp::mls::message_contents::PlaintextCommitLogEntry entry;
  entry.set_group_id(std::string(group_id));
  entry.set_commit_sequence_id(7);
  ClientEnvelope e;
  e.mutable_commit_log_entry()->set_serialized_commit_log_entry(entry.SerializeAsString());
  return e;
}

const std::string kApiGroupId = Unhex("000102030405060708090a0b0c0d0e0f");
constexpr std::string_view kApiInbox =
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

// verifies: TOPIC-001 — API.md 4.1 topics, byte by byte, from whole envelopes.
TEST(Envelope, ApiTopicExamples) {
  ParsedEnvelope group = Accept(GroupMessage(PrivateMessage(kApiGroupId, 1, 1)));
  EXPECT_EQ(Hex(group.topic), "00000102030405060708090a0b0c0d0e0f");
  EXPECT_EQ(group.kind, TopicKind::kGroupMessage);

  ParsedEnvelope commit_log = Accept(CommitLog(kApiGroupId));
  EXPECT_EQ(Hex(commit_log.topic), "04000102030405060708090a0b0c0d0e0f");
  EXPECT_EQ(commit_log.kind, TopicKind::kCommitLog);

  ClientEnvelope welcome;
  welcome.mutable_welcome_message()->mutable_v1()->set_installation_key(Repeat(0x11, 32));
  EXPECT_EQ(Hex(Accept(welcome).topic), "01" + std::string(64, '1'));

  KeyPackageSpec kp;
  kp.leaf.signature_key = Repeat(0x22, 32);
  ParsedEnvelope key_package = Accept(KeyPackageEnvelope(KeyPackage(kp)));
  EXPECT_EQ(Hex(key_package.topic), "03" + std::string(64, '2'));
  EXPECT_EQ(key_package.kind, TopicKind::kKeyPackage);

  ParsedEnvelope identity = Accept(IdentityUpdate(kApiInbox));
  EXPECT_EQ(Hex(identity.topic), "02" + std::string(kApiInbox));
  EXPECT_EQ(identity.topic.size(), 33u);  // the 32 decoded bytes, not the 64 characters
  EXPECT_EQ(identity.kind, TopicKind::kIdentityUpdate);
}

// verifies: API-211 — VALIDATION.md 8.2 envelopes: stored bytes and message hashes.
TEST(Envelope, SpecVectorHashesAndTopics) {
  struct Case {
    std::string_view envelope;
    std::string_view hash;
    std::string_view topic;
    TopicKind kind;
  };
  const Case cases[] = {
      {vectors::kUpdate1Envelope, vectors::kUpdate1Hash, vectors::kIdentityTopic,
       TopicKind::kIdentityUpdate},
      {vectors::kUpdate2Envelope, vectors::kUpdate2Hash, vectors::kIdentityTopic,
       TopicKind::kIdentityUpdate},
      {vectors::kUpdate3Envelope, vectors::kUpdate3Hash, vectors::kIdentityTopic,
       TopicKind::kIdentityUpdate},
      {vectors::kKeyPackageMinimalClientEnvelope, vectors::kKeyPackageMinimalMessageHash,
       vectors::kKeyPackageTopic, TopicKind::kKeyPackage},
      {vectors::kGroupPrivateCommitEnvelope, vectors::kGroupPrivateCommitHash, vectors::kGroupTopic,
       TopicKind::kGroupMessage},
  };
  for (const Case& c : cases) {
    ParsedEnvelope p = Accept(Decode(c.envelope));
    EXPECT_EQ(Hex(p.stored_bytes), c.envelope);
    EXPECT_EQ(Hex(p.message_hash), c.hash);
    EXPECT_EQ(Hex(p.topic), c.topic);
    EXPECT_EQ(p.kind, c.kind);
  }
}

TEST(Envelope, SpecCommitLogAndWelcomeVectors) {
  ParsedEnvelope commit_log = Accept(Decode(vectors::kCommitLogEnvelope));
  EXPECT_EQ(Hex(commit_log.topic), vectors::kCommitLogTopic);
  EXPECT_FALSE(commit_log.is_commit_or_proposal);
  EXPECT_EQ(Hex(Accept(Decode(vectors::kWelcomeV1Envelope)).topic), vectors::kWelcomeTopic);
  EXPECT_EQ(Hex(Accept(Decode(vectors::kWelcomePointerEnvelope)).topic), vectors::kWelcomeTopic);
  ExpectMalformed(Decode(vectors::kWelcomeNoVersionEnvelope), "welcome message has no version");
}

// verifies: API-230, TOPIC-002 — the group-message vectors, end to end.
TEST(Envelope, SpecGroupMessageVectors) {
  for (const vectors::GroupMessageCase& c : vectors::kGroupMessageCases) {
    Expected<ParsedEnvelope, Rejection> r = ParseEnvelope(GroupMessage(Unhex(c.data)));
    if (c.expect == "accept") {
      ASSERT_TRUE(r.ok()) << c.name;
      const ParsedEnvelope& p = r.value();
      EXPECT_EQ(Hex(p.topic), vectors::kGroupTopic) << c.name;
      EXPECT_EQ(p.is_commit_or_proposal, c.commit_or_proposal) << c.name;
    } else {
      ASSERT_TRUE(!r.ok()) << c.name;
      EXPECT_EQ(r.error().reason, PublishError::REASON_MALFORMED_PAYLOAD) << c.name;
    }
  }
}

// verifies: API-230 — key-package vectors at admission's parse stage: parse failures are
// MALFORMED_PAYLOAD; everything else passes this stage and carries the parse for the validator.
TEST(Envelope, SpecKeyPackageVectors) {
  ParsedEnvelope minimal = Accept(KeyPackageEnvelope(Unhex(vectors::kKeyPackageMinimalTls)));
  ASSERT_TRUE(minimal.key_package.has_value());
  EXPECT_EQ(Hex(minimal.key_package->signature_key()), vectors::kKeyPackageSignatureKey);
  EXPECT_FALSE(minimal.identity_update.has_value());
  EXPECT_FALSE(minimal.is_commit_or_proposal);
  Accept(KeyPackageEnvelope(Unhex(vectors::kKeyPackageXmtpLike)));
  for (const vectors::KeyPackageCase& c : vectors::kKeyPackageCases) {
    Expected<ParsedEnvelope, Rejection> r = ParseEnvelope(KeyPackageEnvelope(Unhex(c.tls)));
    EXPECT_EQ(!r.ok(), c.expect == "REASON_MALFORMED_PAYLOAD") << c.name;
  }
}

// verifies: API-212 — is_commit_or_proposal only for group-message commits and proposals.
TEST(Envelope, IsCommitOrProposal) {
  const std::string gid = Repeat(0x42, 16);
  EXPECT_FALSE(Accept(GroupMessage(PrivateMessage(gid, 1, 1))).is_commit_or_proposal);
  EXPECT_TRUE(Accept(GroupMessage(PrivateMessage(gid, 1, 2))).is_commit_or_proposal);
  EXPECT_TRUE(Accept(GroupMessage(PrivateMessage(gid, 1, 3))).is_commit_or_proposal);
  EXPECT_FALSE(Accept(IdentityUpdate(kApiInbox)).is_commit_or_proposal);
  EXPECT_FALSE(Accept(Decode(vectors::kWelcomeV1Envelope)).is_commit_or_proposal);
}

// verifies: API-230 — an unset payload is malformed.
TEST(Envelope, UnsetPayloadIsMalformed) {
  ExpectMalformed(ClientEnvelope{}, "envelope has no payload");
  // Only unknown fields: still no payload.
  ClientEnvelope unknown_only;
  ASSERT_TRUE(unknown_only.ParseFromString(Unhex("3205abcdefabcd")));
  ExpectMalformed(unknown_only, "envelope has no payload");
}

TEST(Envelope, GroupMessageRejections) {
  const std::string gid = Repeat(0x42, 16);
  const std::string prefix = "group message data is not a well-formed MLS message: ";
  ExpectMalformed(GroupMessage(""), prefix + "input ends too early");
  ExpectMalformed(GroupMessage(Unhex("0002") + PrivateMessage(gid, 1, 1).substr(2)),
                  prefix + "MLS protocol version is not mls10");
  ExpectMalformed(GroupMessage(Unhex("00010003") + PrivateMessage(gid, 1, 1).substr(4)),
                  prefix + "MLS wire format is not a public or private message");
  ExpectMalformed(GroupMessage(PrivateMessage(gid, 1, 0)), prefix + "content type is unknown");
  const std::string whole = PrivateMessage(gid, 1, 1);
  ExpectMalformed(GroupMessage(whole.substr(0, whole.size() - 1)),
                  prefix + "vector runs past the end of the input");
  // TOPIC-002: the group id must be 16 bytes.
  for (size_t n : {size_t{0}, size_t{15}, size_t{17}, size_t{32}}) {
    ExpectMalformed(GroupMessage(PrivateMessage(Repeat(0x42, n), 1, 1)),
                    "group message group id has the wrong length for a topic");
  }
}

// verifies: API-230, API-211 — trailing bytes are stored, and each suffix is its own envelope.
TEST(Envelope, GroupMessageTrailingBytesAreStored) {
  const std::string message = PrivateMessage(Repeat(0x42, 16), 1, 3);
  ParsedEnvelope plain = Accept(GroupMessage(message));
  ParsedEnvelope suffixed = Accept(GroupMessage(message + Unhex("aabb")));
  EXPECT_EQ(plain.topic, suffixed.topic);
  EXPECT_NE(plain.message_hash, suffixed.message_hash);
  ClientEnvelope back;
  ASSERT_TRUE(back.ParseFromString(suffixed.stored_bytes));
  EXPECT_EQ(back.group_message().data(), message + Unhex("aabb"));
}

TEST(Envelope, WelcomeRejections) {
  ClientEnvelope no_version;
  no_version.mutable_welcome_message();
  ExpectMalformed(no_version, "welcome message has no version");
  for (size_t n : {size_t{0}, size_t{31}, size_t{33}, size_t{64}}) {
    ClientEnvelope v1;
    v1.mutable_welcome_message()->mutable_v1()->set_installation_key(Repeat(0x77, n));
    ExpectMalformed(v1, "welcome installation key has the wrong length for a topic");
    ClientEnvelope pointer;
    pointer.mutable_welcome_message()->mutable_welcome_pointer()->set_installation_key(
        Repeat(0x77, n));
    ExpectMalformed(pointer, "welcome installation key has the wrong length for a topic");
  }
}

// VALIDATION.md 3: nothing but the version and installation key is inspected.
TEST(Envelope, WelcomeOtherFieldsAreNotInspected) {
  ClientEnvelope e;
  auto* v1 = e.mutable_welcome_message()->mutable_v1();
  v1->set_installation_key(Repeat(0x77, 32));
  v1->set_wrapper_algorithm(static_cast<xmtp::mls::message_contents::WelcomeWrapperAlgorithm>(99));
  ParsedEnvelope p = Accept(e);
  EXPECT_EQ(Hex(p.topic), vectors::kWelcomeTopic);
}

TEST(Envelope, KeyPackageRejections) {
  const std::string prefix = "key package is not a well-formed RFC 9420 KeyPackage: ";
  ExpectMalformed(KeyPackageEnvelope(""), prefix + "input ends too early");
  ExpectMalformed(KeyPackageEnvelope(Unhex(vectors::kKeyPackageMinimalTls) + Unhex("00")),
                  prefix + "bytes follow the key package");
  KeyPackageSpec unknown_suite;
  unknown_suite.cipher_suite = 9;
  ExpectMalformed(KeyPackageEnvelope(KeyPackage(unknown_suite)),
                  prefix + "key package cipher suite is unknown");
  // TOPIC-002 / VALIDATION.md 4.2: the signature key must be 32 bytes (P-256 keys are 65).
  for (size_t n : {size_t{0}, size_t{31}, size_t{33}, size_t{65}}) {
    KeyPackageSpec spec;
    spec.cipher_suite = 2;
    spec.leaf.signature_key = Repeat(0x04, n);
    ExpectMalformed(KeyPackageEnvelope(KeyPackage(spec)),
                    "key package signature key has the wrong length for a topic");
  }
}

// verifies: TOPIC-002 — the inbox id must be 64 hex characters.
TEST(Envelope, IdentityUpdateInboxIdRejections) {
  const std::string inbox(kApiInbox);
  for (const std::string& bad :
       {std::string(), inbox.substr(0, 63), inbox + "0", inbox.substr(0, 63) + "g",
        "0x" + inbox.substr(0, 62), inbox.substr(0, 32)}) {
    ExpectMalformed(IdentityUpdate(bad), "identity update inbox id is not 64 hex characters");
  }
  ClientEnvelope no_inbox;
  no_inbox.mutable_identity_update();
  ExpectMalformed(no_inbox, "identity update inbox id is not 64 hex characters");
}

// VALIDATION.md 1.1/5.8: upper-case hex routes to the same topic (and fails IDENT-003 later);
// its stored bytes keep the spelling received, so its hash differs.
TEST(Envelope, UpperCaseInboxIdRoutesToTheSameTopic) {
  std::string upper(kApiInbox);
  for (char& c : upper) {
    c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  ParsedEnvelope lower_p = Accept(IdentityUpdate(kApiInbox));
  ParsedEnvelope upper_p = Accept(IdentityUpdate(upper));
  EXPECT_EQ(lower_p.topic, upper_p.topic);
  EXPECT_NE(lower_p.message_hash, upper_p.message_hash);
  ASSERT_TRUE(upper_p.identity_update.has_value());
  EXPECT_EQ(upper_p.identity_update->inbox_id(), upper);
}

TEST(Envelope, IdentityUpdateCarriesTheDecodedUpdate) {
  ClientEnvelope e = Decode(vectors::kUpdate1Envelope);
  e.GetReflection()->MutableUnknownFields(&e)->AddVarint(40, 1);
  auto* update = e.mutable_identity_update();
  update->GetReflection()->MutableUnknownFields(update)->AddVarint(40, 1);
  ParsedEnvelope p = Accept(e);
  ASSERT_TRUE(p.identity_update.has_value());
  EXPECT_FALSE(p.key_package.has_value());
  // The update as stored: unknown fields gone, everything else as received.
  EXPECT_EQ(p.identity_update->SerializeAsString(),
            Decode(vectors::kUpdate1Envelope).identity_update().SerializeAsString());
  EXPECT_EQ(p.identity_update->actions_size(), 2);
  EXPECT_EQ(Hex(p.message_hash), vectors::kUpdate1Hash);
}

TEST(Envelope, CommitLogRejections) {
  ClientEnvelope not_protobuf;
  not_protobuf.mutable_commit_log_entry()->set_serialized_commit_log_entry(Unhex("ff"));
  ExpectMalformed(not_protobuf, "commit log entry does not decode as a PlaintextCommitLogEntry");
  ClientEnvelope truncated;
  truncated.mutable_commit_log_entry()->set_serialized_commit_log_entry(Unhex("0a10001122"));
  ExpectMalformed(truncated, "commit log entry does not decode as a PlaintextCommitLogEntry");
  ClientEnvelope empty;
  empty.mutable_commit_log_entry();
  ExpectMalformed(empty, "commit log entry group id has the wrong length for a topic");
  for (size_t n : {size_t{15}, size_t{17}, size_t{32}}) {
    ExpectMalformed(CommitLog(Repeat(0x42, n)),
                    "commit log entry group id has the wrong length for a topic");
  }
}

// API-230: the commit-log signature is stored, never checked; unknown fields inside the
// serialized entry are payload bytes and stay.
TEST(Envelope, CommitLogSignatureAndEntryBytesAreNotInspected) {
  ClientEnvelope e = CommitLog(Repeat(0x42, 16));
  e.mutable_commit_log_entry()->mutable_signature()->set_bytes("not a signature");
  Accept(e);
  ClientEnvelope with_unknown = CommitLog(Repeat(0x42, 16));
  std::string entry = with_unknown.commit_log_entry().serialized_commit_log_entry() +
                      Unhex("f80101");  // unknown field 31
  with_unknown.mutable_commit_log_entry()->set_serialized_commit_log_entry(entry);
  ParsedEnvelope p = Accept(with_unknown);
  ClientEnvelope back;
  ASSERT_TRUE(back.ParseFromString(p.stored_bytes));
  EXPECT_EQ(back.commit_log_entry().serialized_commit_log_entry(), entry);
}

// verifies: API-211 — two inputs that decode to the same value (here: unknown fields, and
// non-minimal varints) are stored as the same bytes with the same hash.
TEST(Envelope, EqualDecodedValuesGiveEqualHashes) {
  const std::string clean = Unhex(vectors::kGroupPrivateCommitEnvelope);
  // Same envelope: unknown varint field 9, then group_message with a non-minimal length
  // (0x2e as ae 00) and a non-minimal data length, then an unknown bytes field inside.
  const std::string data = clean.substr(4);
  const std::string inner = Unhex("0aae00") + data + Unhex("3a03616263");
  const std::string noisy = Unhex("4801") + Unhex("0a") + testing::PbVarint(inner.size()) + inner;
  ClientEnvelope noisy_e;
  ASSERT_TRUE(noisy_e.ParseFromString(noisy));
  ParsedEnvelope a = Accept(Decode(vectors::kGroupPrivateCommitEnvelope));
  ParsedEnvelope b = Accept(noisy_e);
  EXPECT_EQ(a.stored_bytes, b.stored_bytes);
  EXPECT_EQ(a.message_hash, b.message_hash);
  EXPECT_EQ(Hex(b.message_hash), vectors::kGroupPrivateCommitHash);
  EXPECT_EQ(a.topic, b.topic);
}

// verifies: API-211 — payload bytes fields come back exactly as received.
TEST(Envelope, StoredBytesKeepPayloadBytesVerbatim) {
  ClientEnvelope e = GroupMessage(PrivateMessage(Repeat(0x42, 16), 1, 1) + Repeat(0xff, 3));
  e.mutable_group_message()->set_sender_hmac(Unhex("00ff80c3"));
  e.mutable_group_message()->set_should_push(true);
  ParsedEnvelope p = Accept(e);
  ClientEnvelope back;
  ASSERT_TRUE(back.ParseFromString(p.stored_bytes));
  EXPECT_EQ(back.group_message().data(), e.group_message().data());
  EXPECT_EQ(back.group_message().sender_hmac(), e.group_message().sender_hmac());
  EXPECT_TRUE(back.group_message().should_push());
}

}  // namespace
}  // namespace xb::validate
