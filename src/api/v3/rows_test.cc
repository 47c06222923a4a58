#include "api/v3/rows.h"

#include <gtest/gtest.h>

#include <string>

#include "identity/api/v1/identity.pb.h"
#include "mls/api/v1/mls.pb.h"
#include "mls/message_contents/commit_log.pb.h"
#include "xmtp/backend/v1/backend.pb.h"

namespace xb::api::v3 {
namespace {

namespace v1 = xmtp::backend::v1;
namespace mls = xmtp::mls::api::v1;

// A stored row of `envelope` on `topic`, with ids large enough to need multi-byte varints.
store::StoredEnvelope Row(const v1::ClientEnvelope& envelope, std::string topic,
                          bool commit = false) {
  store::StoredEnvelope row;
  row.meta.sequence_id = 300;
  row.meta.server_ns = 1'700'000'000'123'456'789;
  row.meta.topic = std::move(topic);
  row.meta.is_commit_or_proposal = commit;
  row.payload = envelope.SerializeAsString();
  return row;
}

// `bytes` is one length-delimited field 1 of an enclosing message: that field's value parsed as T.
template <typename T>
T FieldOne(const std::string& bytes) {
  mls::FetchKeyPackagesRequest shell;  // field 1: repeated bytes, taken as they are
  T parsed;
  EXPECT_TRUE(shell.ParseFromString(bytes));
  EXPECT_EQ(shell.installation_keys_size(), 1);
  EXPECT_TRUE(parsed.ParseFromString(shell.installation_keys(0)));
  return parsed;
}

const std::string kGroup(16, '\x42');

// verifies: issue 33 (docs/v3-api.md 2.1) — a stored group message reads back as GroupMessage.V1
TEST(V3Rows, GroupMessageCarriesTheStoredFieldsAndTheRowsMeta) {
  v1::ClientEnvelope envelope;
  envelope.mutable_group_message()->set_data(std::string(200, 'd'));
  envelope.mutable_group_message()->set_sender_hmac(std::string(32, 'h'));
  envelope.mutable_group_message()->set_should_push(true);
  const auto row = Row(envelope, '\x00' + kGroup, /*commit=*/true);
  std::string out;
  ASSERT_TRUE(AppendGroupMessage(out, 1, store::StoredEnvelopeView::Of(row), true));
  const auto message = FieldOne<mls::GroupMessage>(out);
  ASSERT_TRUE(message.has_v1());
  EXPECT_EQ(message.v1().id(), 300u);
  EXPECT_EQ(message.v1().created_ns(), 1'700'000'000'123'456'789u);
  EXPECT_EQ(message.v1().group_id(), kGroup);
  EXPECT_EQ(message.v1().data(), std::string(200, 'd'));
  EXPECT_EQ(message.v1().sender_hmac(), std::string(32, 'h'));
  EXPECT_TRUE(message.v1().should_push());
  EXPECT_TRUE(message.v1().is_commit());
  // Protobuf writes the same bytes for the same message, as a field or alone.
  mls::QueryGroupMessagesResponse expected;
  *expected.add_messages() = message;
  EXPECT_EQ(out, expected.SerializeAsString());
  std::string alone;
  ASSERT_TRUE(AppendGroupMessage(alone, kWholeMessage, store::StoredEnvelopeView::Of(row), true));
  EXPECT_EQ(alone, message.SerializeAsString());
}

// verifies: issue 33 (docs/v3-api.md 3.6) — without content only the metadata remains
TEST(V3Rows, GroupMessageWithoutContentHasOnlyTheMetadata) {
  v1::ClientEnvelope envelope;
  envelope.mutable_group_message()->set_data("data");
  envelope.mutable_group_message()->set_should_push(true);
  auto row = Row(envelope, '\x00' + kGroup);
  row.payload.clear();  // Store::Newest without payloads
  std::string out;
  ASSERT_TRUE(AppendGroupMessage(out, 1, store::StoredEnvelopeView::Of(row), false));
  const auto message = FieldOne<mls::GroupMessage>(out);
  EXPECT_EQ(message.v1().id(), 300u);
  EXPECT_EQ(message.v1().group_id(), kGroup);
  EXPECT_TRUE(message.v1().data().empty());
  EXPECT_FALSE(message.v1().should_push());
  EXPECT_FALSE(message.v1().is_commit());
}

// verifies: issue 33 (docs/v3-api.md 2.1) — stored Welcome fields 1..5 are V3's 3..7
TEST(V3Rows, WelcomeV1AndPointerShiftTheirFieldsAfterIdAndTime) {
  v1::ClientEnvelope v1_welcome;
  auto* w = v1_welcome.mutable_welcome_message()->mutable_v1();
  w->set_installation_key(std::string(32, 'k'));
  w->set_data("welcome");
  w->set_hpke_public_key("hpke");
  w->set_wrapper_algorithm(
      xmtp::mls::message_contents::WELCOME_WRAPPER_ALGORITHM_XWING_MLKEM_768_DRAFT_6);
  w->set_welcome_metadata("meta");
  const auto row = Row(v1_welcome, '\x01' + std::string(32, 'k'));
  std::string out;
  ASSERT_TRUE(AppendWelcomeMessage(out, 1, store::StoredEnvelopeView::Of(row)));
  const auto got = FieldOne<mls::WelcomeMessage>(out);
  ASSERT_TRUE(got.has_v1());
  EXPECT_EQ(got.v1().id(), 300u);
  EXPECT_EQ(got.v1().created_ns(), 1'700'000'000'123'456'789u);
  EXPECT_EQ(got.v1().installation_key(), std::string(32, 'k'));
  EXPECT_EQ(got.v1().data(), "welcome");
  EXPECT_EQ(got.v1().hpke_public_key(), "hpke");
  EXPECT_EQ(static_cast<int>(got.v1().wrapper_algorithm()),
            static_cast<int>(w->wrapper_algorithm()));
  EXPECT_EQ(got.v1().welcome_metadata(), "meta");

  v1::ClientEnvelope pointer;
  auto* p = pointer.mutable_welcome_message()->mutable_welcome_pointer();
  p->set_installation_key(std::string(32, 'k'));
  p->set_welcome_pointer("pointer");
  p->set_hpke_public_key("hpke");
  p->set_wrapper_algorithm(
      xmtp::mls::message_contents::WELCOME_POINTER_WRAPPER_ALGORITHM_XWING_MLKEM_768_DRAFT_6);
  const auto pointer_row = Row(pointer, '\x01' + std::string(32, 'k'));
  std::string pointer_out;
  ASSERT_TRUE(AppendWelcomeMessage(pointer_out, 1, store::StoredEnvelopeView::Of(pointer_row)));
  const auto got_pointer = FieldOne<mls::WelcomeMessage>(pointer_out);
  ASSERT_TRUE(got_pointer.has_welcome_pointer());
  EXPECT_EQ(got_pointer.welcome_pointer().id(), 300u);
  EXPECT_EQ(got_pointer.welcome_pointer().installation_key(), std::string(32, 'k'));
  EXPECT_EQ(got_pointer.welcome_pointer().welcome_pointer(), "pointer");
  EXPECT_EQ(got_pointer.welcome_pointer().hpke_public_key(), "hpke");
  EXPECT_EQ(static_cast<int>(got_pointer.welcome_pointer().wrapper_algorithm()),
            static_cast<int>(p->wrapper_algorithm()));
}

// verifies: issue 33 (docs/v3-api.md 2.1) — commit-log entries and identity updates
TEST(V3Rows, CommitLogEntryAndIdentityUpdateLogCarryTheSequenceId) {
  v1::ClientEnvelope commit;
  commit.mutable_commit_log_entry()->set_serialized_commit_log_entry("entry");
  commit.mutable_commit_log_entry()->mutable_signature()->set_bytes(std::string(64, 's'));
  const auto row = Row(commit, '\x04' + kGroup);
  std::string out;
  ASSERT_TRUE(AppendCommitLogEntry(out, 1, store::StoredEnvelopeView::Of(row)));
  const auto entry = FieldOne<xmtp::mls::message_contents::CommitLogEntry>(out);
  EXPECT_EQ(entry.sequence_id(), 300u);
  EXPECT_EQ(entry.serialized_commit_log_entry(), "entry");
  EXPECT_EQ(entry.signature().bytes(), std::string(64, 's'));

  v1::ClientEnvelope identity;
  identity.mutable_identity_update()->set_inbox_id(std::string(64, 'a'));
  identity.mutable_identity_update()->set_client_timestamp_ns(5);
  const auto identity_row = Row(identity, '\x02' + std::string(32, '\xaa'));
  std::string log_out;
  ASSERT_TRUE(AppendIdentityUpdateLog(log_out, 1, store::StoredEnvelopeView::Of(identity_row)));
  const auto log =
      FieldOne<xmtp::identity::api::v1::GetIdentityUpdatesResponse::IdentityUpdateLog>(log_out);
  EXPECT_EQ(log.sequence_id(), 300u);
  EXPECT_EQ(log.server_timestamp_ns(), 1'700'000'000'123'456'789u);
  EXPECT_EQ(log.update().inbox_id(), std::string(64, 'a'));
  EXPECT_EQ(log.update().client_timestamp_ns(), 5u);
}

// verifies: issue 33 (docs/v3-api.md 3.4) — the stored KeyPackage is FetchKeyPackages' entry
TEST(V3Rows, KeyPackageBytesAreTheFetchEntry) {
  v1::ClientEnvelope envelope;
  envelope.mutable_key_package()->set_key_package_tls_serialized("tls");
  const auto row = Row(envelope, '\x03' + std::string(32, 'k'));
  const auto bytes = StoredKeyPackage(store::StoredEnvelopeView::Of(row));
  ASSERT_TRUE(bytes.has_value());
  mls::FetchKeyPackagesResponse::KeyPackage entry;
  ASSERT_TRUE(entry.ParseFromString(std::string(*bytes)));
  EXPECT_EQ(entry.key_package_tls_serialized(), "tls");
}

// A row of another kind, or a payload that is not a ClientEnvelope, appends nothing.
TEST(V3Rows, ARowOfAnotherKindIsRefusedAndAppendsNothing) {
  v1::ClientEnvelope envelope;
  envelope.mutable_key_package()->set_key_package_tls_serialized("tls");
  const auto row = Row(envelope, '\x03' + std::string(32, 'k'));
  const auto view = store::StoredEnvelopeView::Of(row);
  std::string out = "x";
  EXPECT_FALSE(AppendGroupMessage(out, 1, view, true));
  EXPECT_FALSE(AppendWelcomeMessage(out, 1, view));
  EXPECT_FALSE(AppendCommitLogEntry(out, 1, view));
  EXPECT_FALSE(AppendIdentityUpdateLog(out, 1, view));
  EXPECT_EQ(out, "x");
  store::StoredEnvelope broken = row;
  broken.payload =
      "\x0a\x05"
      "ab";  // a length past the end
  EXPECT_FALSE(StoredKeyPackage(store::StoredEnvelopeView::Of(broken)).has_value());
}

// A stored field whose number, raised past id and created_ns, would exceed protobuf's largest is
// refused, never written with a key whose dropped high bits make it field 1 (the row's id). Stored
// payloads cannot hold such a field (API-211 discards unknown fields); the fuzzer found the shape.
TEST(V3Rows, AFieldNumberShiftedPastTheLimitIsRefusedNotWrappedOntoTheId) {
  // WelcomeMessage.welcome_pointer holding field 2^29 - 1 (varint 100).
  const std::string pointer = "\xf8\xff\xff\xff\x0f\x64";
  const std::string welcome = "\x12\x06" + pointer;
  store::StoredEnvelope row;
  row.meta.sequence_id = 4242;
  row.meta.topic = '\x01' + std::string(32, 'w');
  row.payload = "\x12\x08" + welcome;
  std::string out = "x";
  EXPECT_FALSE(AppendWelcomeMessage(out, 1, store::StoredEnvelopeView::Of(row)));
  EXPECT_EQ(out, "x");
  // The largest number that still fits once shifted is copied as it is.
  const std::string fits = "\xe8\xff\xff\xff\x0f\x64";  // field 2^29 - 3
  row.payload = std::string("\x12\x08\x12\x06", 4) + fits;
  out.clear();
  ASSERT_TRUE(AppendWelcomeMessage(out, 1, store::StoredEnvelopeView::Of(row)));
  EXPECT_EQ(FieldOne<mls::WelcomeMessage>(out).welcome_pointer().id(), 4242u);
}

}  // namespace
}  // namespace xb::api::v3
