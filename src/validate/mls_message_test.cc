#include "validate/mls_message.h"

#include <gtest/gtest.h>

#include "validate/mls_test_builders.h"
#include "validate/test_bytes.h"
#include "validate/validation_vectors_test_data.h"

namespace xb::validate {
namespace {

using testing::Extension;
using testing::Extensions;
using testing::ExternalSender;
using testing::KeyPackage;
using testing::KeyPackageSpec;
using testing::LeafNode;
using testing::LeafNodeSpec;
using testing::MemberSender;
using testing::MlsHeader;
using testing::NewMemberCommitSender;
using testing::NewMemberProposalSender;
using testing::PrivateMessage;
using testing::PublicMessage;
using testing::Repeat;
using testing::Signature;
using testing::Tag;
using testing::U16;
using testing::U16List;
using testing::U32;
using testing::U64;
using testing::U8;
using testing::Unhex;
using testing::Vec;

const std::string kGroupId = Unhex("00112233445566778899aabbccddeeff");

constexpr uint8_t kApplication = 1;
constexpr uint8_t kProposal = 2;
constexpr uint8_t kCommit = 3;

// A proposal: uint16 type + body.
std::string Proposal(uint16_t type, std::string_view body) { return U16(type) + std::string(body); }
std::string Remove(uint32_t leaf) { return Proposal(3, U32(leaf)); }

// A Commit: ProposalOrRef proposals<V>, optional<UpdatePath>.
std::string Commit(std::initializer_list<std::string> proposals_or_refs, std::string_view path) {
  std::string list;
  for (const std::string& p : proposals_or_refs) {
    list += p;
  }
  return Vec(list) + std::string(path);
}
std::string ByValue(std::string_view proposal) { return U8(1) + std::string(proposal); }
std::string ByRef(std::string_view ref) { return U8(2) + Vec(ref); }

std::string CommitLeaf() {
  LeafNodeSpec leaf;
  leaf.source = 3;
  leaf.source_body = Vec(Repeat(0x99, 32));  // parent_hash
  return LeafNode(leaf);
}

// UpdatePath: leaf_node, UpdatePathNode nodes<V> (encryption_key<V>, HPKECiphertext
// encrypted_path_secret<V> with HPKECiphertext = kem_output<V>, ciphertext<V>).
std::string UpdatePath() {
  const std::string ciphertext = Vec(Repeat(0xc1, 32)) + Vec(Repeat(0xc2, 48));
  const std::string node = Vec(Repeat(0xe1, 32)) + Vec(ciphertext + ciphertext);
  return U8(1) + CommitLeaf() + Vec(node + node);
}

// A member-sent public proposal with its signature and membership tag.
std::string PublicProposal(std::string_view proposal) {
  return PublicMessage(kGroupId, MemberSender(0), kProposal, proposal, Signature() + Tag());
}

bool Parses(std::string_view data) { return ParseGroupMessageData(data).ok(); }

// verifies: API-230 — the group-message vectors of VALIDATION.md 8.2. A group id other than 16
// bytes parses here and is refused by routing (TOPIC-002, envelope_test.cc).
TEST(MlsMessage, ValidationVectors) {
  for (const vectors::GroupMessageCase& c : vectors::kGroupMessageCases) {
    const std::string data = Unhex(c.data);
    Result<ParsedGroupMessage> parsed = ParseGroupMessageData(data);
    const bool accepted = parsed.ok() && parsed->group_id.size() == 16;
    EXPECT_EQ(accepted, c.expect == "accept") << c.name;
    if (accepted) {
      EXPECT_EQ(parsed->group_id, kGroupId) << c.name;
      EXPECT_EQ(parsed->is_commit_or_proposal(), c.commit_or_proposal) << c.name;
      EXPECT_EQ(parsed->epoch, 5u) << c.name;
    }
  }
}

TEST(MlsMessage, PrivateMessageFields) {
  const std::string data = PrivateMessage(kGroupId, 0x0102030405060708, kCommit, "aad");
  Result<ParsedGroupMessage> parsed = ParseGroupMessageData(data);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->wire_format, WireFormat::kPrivateMessage);
  EXPECT_EQ(parsed->group_id, kGroupId);
  EXPECT_EQ(parsed->epoch, 0x0102030405060708u);
  EXPECT_EQ(parsed->content_type, ContentType::kCommit);
  EXPECT_EQ(parsed->message_bytes, data.size());
  // VALIDATION.md 2.3: for a 16-byte group id the content type sits at offset 29.
  EXPECT_EQ(static_cast<uint8_t>(data[29]), kCommit);
}

// verifies: API-212 — is_commit_or_proposal = content type 2 or 3.
TEST(MlsMessage, CommitOrProposalFromContentType) {
  EXPECT_FALSE(
      ParseGroupMessageData(PrivateMessage(kGroupId, 1, kApplication))->is_commit_or_proposal());
  EXPECT_TRUE(
      ParseGroupMessageData(PrivateMessage(kGroupId, 1, kProposal))->is_commit_or_proposal());
  EXPECT_TRUE(ParseGroupMessageData(PrivateMessage(kGroupId, 1, kCommit))->is_commit_or_proposal());
}

TEST(MlsMessage, ContentTypeOutsideOneToThreeIsMalformed) {
  for (uint8_t ct : {0, 4, 5, 0xff}) {
    Result<ParsedGroupMessage> parsed = ParseGroupMessageData(PrivateMessage(kGroupId, 1, ct));
    ASSERT_FALSE(parsed.ok()) << int{ct};
    EXPECT_EQ(parsed.status().message(), "content type is unknown");
    EXPECT_FALSE(
        Parses(PublicMessage(kGroupId, MemberSender(0), ct, Vec("x"), Signature() + Tag())))
        << int{ct};
  }
}

TEST(MlsMessage, VersionMustBeMls10) {
  const std::string body = PrivateMessage(kGroupId, 1, kApplication).substr(4);
  for (uint16_t version : {0, 2, 0x0100, 0xffff}) {
    Result<ParsedGroupMessage> parsed = ParseGroupMessageData(MlsHeader(2, version) + body);
    ASSERT_FALSE(parsed.ok()) << version;
    EXPECT_EQ(parsed.status().message(), "MLS protocol version is not mls10");
  }
}

// VALIDATION.md 2.2: only public (1) and private (2) messages; welcome, group_info and
// key_package are refused even with a well-formed body, and unknown formats fail.
TEST(MlsMessage, OnlyPublicAndPrivateWireFormats) {
  const std::string private_body = PrivateMessage(kGroupId, 1, kApplication).substr(4);
  for (uint16_t wire_format : {0, 3, 4, 6, 0xffff}) {
    EXPECT_FALSE(Parses(MlsHeader(wire_format) + private_body)) << wire_format;
  }
  // A well-formed KeyPackage framed as MLSMessage(key_package) is still refused.
  EXPECT_FALSE(Parses(MlsHeader(5) + KeyPackage(KeyPackageSpec{})));
  EXPECT_FALSE(Parses(MlsHeader(1) + private_body));  // private body under the public format
}

// verifies: API-230 — bytes after the complete message are accepted.
TEST(MlsMessage, TrailingBytesAreAccepted) {
  const std::string message = PrivateMessage(kGroupId, 1, kCommit);
  for (std::string_view suffix : {std::string_view("\xaa\xbb", 2), std::string_view("\x00", 1),
                                  std::string_view("\xff\xff\xff\xff", 4)}) {
    Result<ParsedGroupMessage> parsed = ParseGroupMessageData(message + std::string(suffix));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(parsed->message_bytes, message.size());
  }
}

TEST(MlsMessage, EveryStrictPrefixOfAMessageIsMalformed) {
  KeyPackageSpec kp;
  const std::string messages[] = {
      PrivateMessage(kGroupId, 1, kCommit, "aad", Repeat(1, 70), Repeat(2, 20000)),
      PublicProposal(Remove(4)),
      PublicMessage(kGroupId, MemberSender(2), kCommit,
                    Commit({ByValue(Remove(1)), ByValue(Proposal(1, KeyPackage(kp))), ByRef("r")},
                           UpdatePath()),
                    Signature() + Tag() + Tag()),
  };
  for (const std::string& m : messages) {
    ASSERT_TRUE(Parses(m));
    for (size_t n = 0; n < m.size(); ++n) {
      ASSERT_FALSE(Parses(std::string_view(m).substr(0, n)))
          << "prefix " << n << " of " << m.size();
    }
  }
}

TEST(MlsMessage, LongVectorsWithTwoAndFourBytePrefixes) {
  Result<ParsedGroupMessage> parsed = ParseGroupMessageData(
      PrivateMessage(kGroupId, 1, kApplication, Repeat(1, 64), Repeat(2, 16383), Repeat(3, 16384)));
  EXPECT_TRUE(parsed.ok());
}

TEST(MlsMessage, BadVectorPrefixesAreMalformed) {
  // Group id length 16 written in two bytes.
  EXPECT_FALSE(
      Parses(MlsHeader(2) + U16(0x4010) + kGroupId + U64(1) + U8(1) + Vec("") + Vec("") + Vec("")));
  // Ciphertext length 2 written in four bytes.
  EXPECT_FALSE(Parses(MlsHeader(2) + Vec(kGroupId) + U64(1) + U8(1) + Vec("") + Vec("") +
                      U32(0x80000002) + "ct"));
  // A 0b11 prefix on the group id.
  EXPECT_FALSE(
      Parses(MlsHeader(2) + U8(0xd0) + kGroupId + U64(1) + U8(1) + Vec("") + Vec("") + Vec("")));
}

TEST(MlsMessage, PublicMessageSenders) {
  const std::string app = Vec("hello");
  // member: leaf_index, then signature and membership tag.
  Result<ParsedGroupMessage> member = ParseGroupMessageData(
      PublicMessage(kGroupId, MemberSender(9), kApplication, app, Signature() + Tag()));
  ASSERT_TRUE(member.ok()) << member.status().ToString();
  EXPECT_EQ(member->wire_format, WireFormat::kPublicMessage);
  EXPECT_EQ(member->group_id, kGroupId);
  EXPECT_EQ(member->epoch, 7u);
  EXPECT_FALSE(member->is_commit_or_proposal());
  // A member sender without its membership tag is truncated.
  EXPECT_FALSE(Parses(PublicMessage(kGroupId, MemberSender(9), kApplication, app, Signature())));
  // external: sender_index, no membership tag.
  EXPECT_TRUE(
      Parses(PublicMessage(kGroupId, ExternalSender(0), kProposal, Remove(1), Signature())));
  // new_member_proposal: nothing after the type.
  EXPECT_TRUE(Parses(PublicMessage(kGroupId, NewMemberProposalSender(), kProposal,
                                   Proposal(1, KeyPackage(KeyPackageSpec{})), Signature())));
  // new_member_commit: a commit with a path, confirmation tag, no membership tag.
  EXPECT_TRUE(Parses(PublicMessage(kGroupId, NewMemberCommitSender(), kCommit,
                                   Commit({ByValue(Proposal(6, Vec("kem")))}, UpdatePath()),
                                   Signature() + Tag())));
}

TEST(MlsMessage, UnknownSenderTypeIsMalformed) {
  for (uint8_t type : {0, 5, 0xff}) {
    Result<ParsedGroupMessage> parsed = ParseGroupMessageData(
        PublicMessage(kGroupId, U8(type) + U32(0), kApplication, Vec("x"), Signature() + Tag()));
    ASSERT_FALSE(parsed.ok()) << int{type};
    EXPECT_EQ(parsed.status().message(), "sender type is unknown");
  }
}

TEST(MlsMessage, CommitNeedsItsConfirmationTag) {
  const std::string commit = Commit({ByValue(Remove(1))}, U8(0));
  EXPECT_TRUE(Parses(
      PublicMessage(kGroupId, MemberSender(0), kCommit, commit, Signature() + Tag() + Tag())));
  EXPECT_FALSE(
      Parses(PublicMessage(kGroupId, MemberSender(0), kCommit, commit, Signature() + Tag())));
}

TEST(MlsMessage, CommitBodies) {
  auto commit = [](std::string body) {
    return PublicMessage(kGroupId, MemberSender(0), kCommit, body, Signature() + Tag() + Tag());
  };
  EXPECT_TRUE(Parses(commit(Commit({}, U8(0)))));
  EXPECT_TRUE(Parses(commit(Commit({ByRef(Repeat(0xab, 32)), ByValue(Remove(2))}, U8(0)))));
  EXPECT_TRUE(Parses(commit(Commit({}, UpdatePath()))));
  // ProposalOrRef type other than 1/2, optional presence other than 0/1.
  EXPECT_FALSE(Parses(commit(Commit({U8(3) + Vec("r")}, U8(0)))));
  EXPECT_FALSE(Parses(commit(Commit({}, U8(2)))));
  // An UpdatePath leaf with an unknown source.
  LeafNodeSpec bad_leaf;
  bad_leaf.source = 4;
  bad_leaf.source_body = "";
  EXPECT_FALSE(Parses(commit(Commit({}, U8(1) + LeafNode(bad_leaf) + Vec("")))));
}

// VALIDATION.md 2.1 quirk: inside a group message, an element that overruns its vector's
// declared length is accepted as the reference accepts it.
TEST(MlsMessage, ElementOverrunInsideAGroupMessageIsAccepted) {
  const std::string proposal = ByValue(Remove(1));    // 7 bytes
  const std::string body = U8(1) + proposal + U8(0);  // proposals<V> declares 1 byte
  EXPECT_TRUE(
      Parses(PublicMessage(kGroupId, MemberSender(0), kCommit, body, Signature() + Tag() + Tag())));
}

TEST(MlsMessage, ProposalBodies) {
  LeafNodeSpec update_leaf;
  update_leaf.source = 2;
  update_leaf.source_body = "";
  const std::string psk_nonce = Vec(Repeat(0x33, 32));
  const std::string ratchet_tree =
      Vec(U8(1) + U8(1) + LeafNode(KeyPackageSpec{}.leaf) +               // leaf node
          U8(0) +                                                         // blank
          U8(1) + U8(2) + Vec("ek") + Vec("ph") + Vec(U32(0) + U32(2)));  // parent node
  struct Case {
    std::string name;
    std::string proposal;
    bool ok;
  };
  const Case cases[] = {
      {"add", Proposal(1, KeyPackage(KeyPackageSpec{})), true},
      {"update", Proposal(2, LeafNode(update_leaf)), true},
      {"remove", Remove(5), true},
      {"psk external", Proposal(4, U8(1) + Vec("psk-id") + psk_nonce), true},
      {"psk resumption", Proposal(4, U8(2) + U8(1) + Vec(kGroupId) + U64(3) + psk_nonce), true},
      {"psk resumption branch", Proposal(4, U8(2) + U8(3) + Vec(kGroupId) + U64(3) + psk_nonce),
       true},
      {"psk resumption usage 0", Proposal(4, U8(2) + U8(0) + Vec(kGroupId) + U64(3) + psk_nonce),
       false},
      {"psk resumption usage 4", Proposal(4, U8(2) + U8(4) + Vec(kGroupId) + U64(3) + psk_nonce),
       false},
      {"psk type 3", Proposal(4, U8(3) + Vec("psk-id") + psk_nonce), false},
      {"reinit", Proposal(5, Vec(kGroupId) + U16(1) + U16(0x4d) + Extensions({})), true},
      {"reinit any version", Proposal(5, Vec(kGroupId) + U16(9) + U16(1) + Extensions({})), true},
      {"reinit unknown suite", Proposal(5, Vec(kGroupId) + U16(1) + U16(9) + Extensions({})),
       false},
      {"external_init", Proposal(6, Vec(Repeat(0x01, 32))), true},
      {"group_context_extensions",
       Proposal(7, Extensions({Extension(1, Vec("app")), Extension(0xff01, "opaque"),
                               Extension(3, U16List({10}) + U16List({7}) + U16List({1}))})),
       true},
      {"gce ratchet tree", Proposal(7, Extensions({Extension(2, ratchet_tree)})), true},
      {"gce ratchet tree bad node type",
       Proposal(7, Extensions({Extension(2, Vec(U8(1) + U8(3)))})), false},
      {"gce external senders",
       Proposal(7, Extensions({Extension(5, Vec(Vec(Repeat(1, 32)) + U16(1) + Vec("id")))})), true},
      {"gce duplicate extension",
       Proposal(7, Extensions({Extension(0xff01, ""), Extension(0xff01, "")})), false},
      {"gce known extension that does not parse", Proposal(7, Extensions({Extension(1, "\x05")})),
       false},
      {"app_data_update update", Proposal(8, U16(1) + U8(1) + Vec("data")), true},
      {"app_data_update remove", Proposal(8, U16(1) + U8(2)), true},
      {"app_data_update bad op", Proposal(8, U16(1) + U8(3)), false},
      {"app_ephemeral", Proposal(9, U16(1) + Vec("data")), true},
      {"self_remove", Proposal(10, ""), true},
      {"custom GREASE", Proposal(0x0a0a, Vec("anything")), true},
      {"custom 0xf0f0", Proposal(0xf0f0, Vec("")), true},
      {"custom without a vector payload", Proposal(0x1234, U8(0x45)), false},
      {"add with unknown suite",
       [] {
         KeyPackageSpec kp;
         kp.cipher_suite = 9;
         return Proposal(1, KeyPackage(kp));
       }(),
       false},
      {"add with a 65-byte signature key (no topic rule inside a proposal)",
       [] {
         KeyPackageSpec kp;
         kp.cipher_suite = 2;
         kp.leaf.signature_key = Repeat(0x04, 65);
         return Proposal(1, KeyPackage(kp));
       }(),
       true},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(Parses(PublicProposal(c.proposal)), c.ok) << c.name;
  }
}

}  // namespace
}  // namespace xb::validate
