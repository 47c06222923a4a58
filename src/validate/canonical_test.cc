#include "validate/canonical.h"

#include <gtest/gtest.h>

#include "identity/associations/association.pb.h"
#include "validate/test_bytes.h"
#include "validate/validation_vectors_test_data.h"

namespace xb::validate {
namespace {

using testing::Hex;
using testing::PbBytes;
using testing::PbUint;
using testing::Squeeze;
using testing::Unhex;
using xmtp::backend::v1::ClientEnvelope;
using xmtp::backend::v1::PublishRequest;

ClientEnvelope Decode(std::string_view bytes) {
  ClientEnvelope e;
  EXPECT_TRUE(e.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())));
  return e;
}

std::string CanonicalOf(std::string_view wire) { return CanonicalEncoding(Decode(wire)); }

// verifies: API-211 — fields in ascending field-number order, each once.
TEST(Canonical, FieldsInAscendingOrder) {
  // GroupMessage written as should_push (3), sender_hmac (2), data (1).
  const std::string wire = PbBytes(1, Unhex("1801 1202aabb 0a03010203"));
  EXPECT_EQ(Hex(CanonicalOf(wire)), Squeeze("0a0b 0a03010203 1202aabb 1801"));
}

// verifies: API-211 — implicit-presence scalars at their default are omitted.
TEST(Canonical, ImplicitDefaultsAreOmitted) {
  // data = "", sender_hmac = "", should_push = false, all written explicitly.
  const std::string wire = PbBytes(1, Unhex("0a00 1200 1800"));
  EXPECT_EQ(Hex(CanonicalOf(wire)), "0a00");
  // SmartContractWalletSignature.block_number = 0 (implicit presence) is omitted too.
  xmtp::identity::associations::SmartContractWalletSignature scw;
  scw.set_block_number(0);
  scw.set_account_id("eip155:1:0x");
  EXPECT_EQ(scw.SerializeAsString().find('\x10'), std::string::npos);
}

// verifies: API-211 — set oneof members, optional fields and sub-messages are written even when
// they hold only defaults.
TEST(Canonical, OneofOptionalAndEmptySubMessagesAreWritten) {
  {
    ClientEnvelope e;
    e.mutable_group_message();
    EXPECT_EQ(Hex(CanonicalEncoding(e)), "0a00");
  }
  {
    ClientEnvelope e;
    e.mutable_welcome_message()->mutable_v1();
    EXPECT_EQ(Hex(CanonicalEncoding(e)), "12020a00");
  }
  {
    // CreateInbox.relying_party is proto3 optional: "" is written as 2a 00.
    ClientEnvelope e;
    e.mutable_identity_update()->add_actions()->mutable_create_inbox()->set_relying_party("");
    EXPECT_EQ(Hex(CanonicalEncoding(e)), Squeeze("2206 0a04 0a02 2a00"));
  }
  {
    // MemberIdentifier.installation_public_key is a oneof member: "" is written as 12 00.
    ClientEnvelope e;
    e.mutable_identity_update()
        ->add_actions()
        ->mutable_add()
        ->mutable_new_member_identifier()
        ->set_installation_public_key("");
    EXPECT_EQ(Hex(CanonicalEncoding(e)), Squeeze("2208 0a06 1204 0a02 1200"));
  }
  {
    // CommitLogEntry.signature set but empty.
    ClientEnvelope e;
    e.mutable_commit_log_entry()->mutable_signature();
    EXPECT_EQ(Hex(CanonicalEncoding(e)), "2a021200");
  }
}

// verifies: API-211 — varints are re-encoded minimally (tags, lengths and values).
TEST(Canonical, VarintsAreMinimal) {
  // Tag 0x0a as 8a 00, length 4 as 84 00, should_push = 1 as 81 80 00.
  const std::string wire = Unhex("8a00 8400 18818000");
  ClientEnvelope e;
  ASSERT_TRUE(e.ParseFromString(wire));
  EXPECT_EQ(Hex(CanonicalEncoding(e)), "0a021801");
}

// verifies: API-211 — unknown enum numbers are kept as their integer.
TEST(Canonical, UnknownEnumNumbersAreKept) {
  // WelcomeMessage.V1.wrapper_algorithm = 77 (written non-minimally as cd 00).
  const std::string wire = PbBytes(2, PbBytes(1, Unhex("20cd00")));
  EXPECT_EQ(Hex(CanonicalOf(wire)), Squeeze("1204 0a02 204d"));
  // WelcomePointer.wrapper_algorithm = 1, a value its enum does not define.
  const std::string pointer = PbBytes(2, PbBytes(2, Unhex("2001")));
  EXPECT_EQ(Hex(CanonicalOf(pointer)), Squeeze("1204 1202 2001"));
}

// verifies: API-211 — unknown fields of every wire type, at every depth, are discarded.
TEST(Canonical, UnknownFieldsAreDiscardedAtEveryDepth) {
  const std::string clean = Unhex(vectors::kUpdate1Envelope);
  // Wire unknowns at the top level: varint (50), fixed64 (51), bytes (52), group (53),
  // fixed32 (54), and a known number with the wrong wire type (field 1 as a varint).
  const std::string unknowns =
      Unhex("9003 05 9903 0102030405060708 a203 02 abcd ab03 0801 ac03 b503 01020304 0807");
  EXPECT_EQ(CanonicalOf(unknowns + clean), clean);
  EXPECT_EQ(CanonicalOf(clean + unknowns), clean);

  // Unknown fields added inside nested messages.
  ClientEnvelope e = Decode(clean);
  auto add_unknown = [](google::protobuf::Message* m) {
    m->GetReflection()->MutableUnknownFields(m)->AddVarint(99, 5);
    m->GetReflection()->MutableUnknownFields(m)->AddLengthDelimited(98, "junk");
  };
  add_unknown(&e);
  add_unknown(e.mutable_identity_update());
  add_unknown(e.mutable_identity_update()->mutable_actions(0));
  add_unknown(e.mutable_identity_update()->mutable_actions(0)->mutable_create_inbox());
  add_unknown(e.mutable_identity_update()
                  ->mutable_actions(0)
                  ->mutable_create_inbox()
                  ->mutable_initial_identifier_signature());
  add_unknown(e.mutable_identity_update()
                  ->mutable_actions(1)
                  ->mutable_add()
                  ->mutable_new_member_signature()
                  ->mutable_installation_key());
  ASSERT_GT(e.ByteSizeLong(), clean.size());
  EXPECT_EQ(CanonicalEncoding(e), clean);
  EXPECT_EQ(CanonicalSize(e), clean.size());
  // The input is not modified.
  EXPECT_GT(e.ByteSizeLong(), clean.size());
}

// verifies: API-211 — every payload bytes field comes back byte for byte.
TEST(Canonical, PayloadBytesAreVerbatim) {
  std::string every_byte;
  for (int b = 0; b < 256; ++b) {
    every_byte.push_back(static_cast<char>(b));
  }
  const std::string not_utf8 = Unhex("c328a0a1e228a1f0288cbc");
  ClientEnvelope e;
  e.mutable_group_message()->set_data(every_byte + every_byte);
  e.mutable_group_message()->set_sender_hmac(not_utf8);
  ClientEnvelope back = Decode(CanonicalEncoding(e));
  EXPECT_EQ(back.group_message().data(), every_byte + every_byte);
  EXPECT_EQ(back.group_message().sender_hmac(), not_utf8);

  ClientEnvelope kp;
  kp.mutable_key_package()->set_key_package_tls_serialized(every_byte);
  EXPECT_EQ(Decode(CanonicalEncoding(kp)).key_package().key_package_tls_serialized(), every_byte);
}

TEST(Canonical, RepeatedOccurrencesDecodeToOneValue) {
  // Two occurrences of group_message merge; the canonical form writes the merged value once.
  EXPECT_EQ(Hex(CanonicalOf(Unhex("0a021801 0a031201aa"))), Squeeze("0a05 1201aa 1801"));
  // A later oneof member replaces an earlier one.
  EXPECT_EQ(Hex(CanonicalOf(Unhex("0a00 1a00"))), "1a00");
  // A later scalar replaces an earlier one.
  EXPECT_EQ(Hex(CanonicalOf(PbBytes(1, PbUint(3, 0) + PbUint(3, 1)))), "0a021801");
}

// The VALIDATION.md 8.2 envelopes were written by a canonical encoder; they come back unchanged.
TEST(Canonical, SpecEnvelopesAreAlreadyCanonical) {
  for (std::string_view hex :
       {vectors::kUpdate1Envelope, vectors::kUpdate2Envelope, vectors::kUpdate3Envelope,
        vectors::kKeyPackageMinimalClientEnvelope, vectors::kGroupPrivateCommitEnvelope,
        vectors::kCommitLogEnvelope, vectors::kWelcomeV1Envelope, vectors::kWelcomePointerEnvelope,
        vectors::kWelcomeNoVersionEnvelope}) {
    const std::string bytes = Unhex(hex);
    EXPECT_EQ(CanonicalOf(bytes), bytes) << hex.substr(0, 16);
    EXPECT_EQ(CanonicalSize(Decode(bytes)), bytes.size());
  }
}

TEST(Canonical, CanonicalizeCleansInPlace) {
  ClientEnvelope e = Decode(Unhex("9003 05") + Unhex(vectors::kGroupPrivateCommitEnvelope));
  const std::string expected = CanonicalEncoding(e);
  EXPECT_EQ(Canonicalize(e), expected);
  EXPECT_EQ(e.SerializeAsString(), expected);
}

TEST(Canonical, RequestSizeIsTheReencodedRequest) {
  PublishRequest request;
  *request.add_envelopes() = Decode(Unhex(vectors::kGroupPrivateCommitEnvelope));
  *request.add_envelopes() = Decode(Unhex(vectors::kUpdate2Envelope));
  const size_t clean = request.ByteSizeLong();
  request.mutable_envelopes(1)
      ->GetReflection()
      ->MutableUnknownFields(request.mutable_envelopes(1))
      ->AddLengthDelimited(77, std::string(1000, 'x'));
  request.GetReflection()->MutableUnknownFields(&request)->AddVarint(9, 1);
  EXPECT_EQ(CanonicalRequestSize(request), clean);
  // Each envelope contributes tag + length prefix + its canonical size.
  size_t sum = 0;
  for (const ClientEnvelope& e : request.envelopes()) {
    const size_t n = CanonicalSize(e);
    sum += 1 + testing::PbVarint(n).size() + n;
  }
  EXPECT_EQ(sum, clean);
}

}  // namespace
}  // namespace xb::validate
