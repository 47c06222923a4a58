#include "api/v3/stream_rows.h"

#include <gtest/gtest.h>

#include <string>

#include "api/envelope_codec.h"
#include "api/v3/rows.h"
#include "mls/api/v1/mls.pb.h"
#include "xmtp/backend/v1/backend.pb.h"

namespace xb::api::v3 {
namespace {

namespace v1 = xmtp::backend::v1;
namespace mls = xmtp::mls::api::v1;

// A stored row with ids large enough to need multi-byte varints and every meta field set.
store::StoredEnvelope Row(const v1::ClientEnvelope& envelope, std::string topic, bool commit) {
  store::StoredEnvelope row;
  row.meta.sequence_id = 1'234'567;
  row.meta.server_ns = 1'700'000'000'123'456'789;
  row.meta.topic = std::move(topic);
  row.meta.expiry_ns = 1'800'000'000'000'000'000;
  row.meta.is_commit_or_proposal = commit;
  row.meta.message_hash.fill(0x5a);
  row.payload = envelope.SerializeAsString();
  return row;
}

store::StoredEnvelope GroupRow(std::string data) {
  v1::ClientEnvelope envelope;
  envelope.mutable_group_message()->set_data(std::move(data));
  envelope.mutable_group_message()->set_sender_hmac(std::string(32, 'h'));
  envelope.mutable_group_message()->set_should_push(true);
  return Row(envelope, '\x00' + std::string(16, '\x42'), /*commit=*/true);
}

std::string ServerEnvelopeOf(const store::StoredEnvelope& row) {
  std::string bytes;
  EXPECT_TRUE(EncodeServerEnvelope(store::StoredEnvelopeView::Of(row), &bytes));
  return bytes;
}

// verifies: issue 33 (docs/v3-api.md 4.1) — a stream message is one whole GroupMessage, the
// bytes a V3 read writes for the row, without the enclosing field
TEST(V3StreamRows, AGroupRowIsOneGroupMessage) {
  for (const size_t size : {size_t{10}, size_t{300}, size_t{70'000}}) {
    const auto row = GroupRow(std::string(size, 'd'));
    std::string out = "prefix";
    ASSERT_TRUE(EncodeStreamRow(store::StoredEnvelopeView::Of(row), &out));
    std::string as_field;
    ASSERT_TRUE(AppendGroupMessage(as_field, 1, store::StoredEnvelopeView::Of(row), true));
    ASSERT_EQ(out.substr(0, 6), "prefix");
    mls::GroupMessage message;
    ASSERT_TRUE(message.ParseFromString(out.substr(6)));
    EXPECT_TRUE(as_field.ends_with(out.substr(6)));
    ASSERT_TRUE(message.has_v1());
    EXPECT_EQ(message.v1().id(), 1'234'567u);
    EXPECT_EQ(message.v1().created_ns(), 1'700'000'000'123'456'789u);
    EXPECT_EQ(message.v1().group_id(), std::string(16, '\x42'));
    EXPECT_EQ(message.v1().data(), std::string(size, 'd'));
    EXPECT_EQ(message.v1().sender_hmac(), std::string(32, 'h'));
    EXPECT_TRUE(message.v1().should_push());
    EXPECT_TRUE(message.v1().is_commit());
  }
}

// verifies: issue 33 (docs/v3-api.md 4.2) — Welcome rows (V1 and pointer) are WelcomeMessages
TEST(V3StreamRows, WelcomeRowsAreWelcomeMessages) {
  v1::ClientEnvelope welcome;
  welcome.mutable_welcome_message()->mutable_v1()->set_installation_key(std::string(32, 'k'));
  welcome.mutable_welcome_message()->mutable_v1()->set_data("welcome");
  welcome.mutable_welcome_message()->mutable_v1()->set_welcome_metadata("meta");
  std::string out;
  ASSERT_TRUE(EncodeStreamRow(
      store::StoredEnvelopeView::Of(Row(welcome, '\x01' + std::string(32, 'k'), false)), &out));
  mls::WelcomeMessage message;
  ASSERT_TRUE(message.ParseFromString(out));
  ASSERT_TRUE(message.has_v1());
  EXPECT_EQ(message.v1().id(), 1'234'567u);
  EXPECT_EQ(message.v1().data(), "welcome");
  EXPECT_EQ(message.v1().welcome_metadata(), "meta");

  v1::ClientEnvelope pointer;
  pointer.mutable_welcome_message()->mutable_welcome_pointer()->set_welcome_pointer("p");
  out.clear();
  ASSERT_TRUE(EncodeStreamRow(
      store::StoredEnvelopeView::Of(Row(pointer, '\x01' + std::string(32, 'k'), false)), &out));
  ASSERT_TRUE(message.ParseFromString(out));
  ASSERT_TRUE(message.has_welcome_pointer());
  EXPECT_EQ(message.welcome_pointer().welcome_pointer(), "p");
}

TEST(V3StreamRows, RowsOfOtherKindsAreRefusedWithNothingAppended) {
  v1::ClientEnvelope update;
  update.mutable_identity_update()->set_inbox_id("inbox");
  std::string out = "x";
  EXPECT_FALSE(EncodeStreamRow(
      store::StoredEnvelopeView::Of(Row(update, '\x02' + std::string(32, 'i'), false)), &out));
  // A group topic whose payload is not a group message breaks an invariant.
  EXPECT_FALSE(EncodeStreamRow(
      store::StoredEnvelopeView::Of(Row(update, '\x00' + std::string(16, 'g'), false)), &out));
  EXPECT_EQ(out, "x");
}

// verifies: docs/v3-api.md G3 — the live path (from the shared ServerEnvelope bytes) gives the
// same bytes as the catch-up path (from the stored row)
TEST(V3StreamRows, TranscodingTheServerEnvelopeEqualsEncodingTheRow) {
  const auto row = GroupRow(std::string(500, 'd'));
  const std::string server_envelope = ServerEnvelopeOf(row);
  const auto read = ReadServerEnvelope(server_envelope);
  ASSERT_TRUE(read.has_value());
  const auto view = store::StoredEnvelopeView::Of(row);
  EXPECT_EQ(read->sequence_id, view.sequence_id);
  EXPECT_EQ(read->server_ns, view.server_ns);
  EXPECT_EQ(read->message_hash, view.message_hash);
  EXPECT_EQ(read->topic, view.topic);
  EXPECT_EQ(read->expiry_ns, view.expiry_ns);
  EXPECT_EQ(read->is_commit_or_proposal, view.is_commit_or_proposal);
  EXPECT_EQ(read->payload, view.payload);
  std::string encoded;
  std::string transcoded;
  ASSERT_TRUE(EncodeStreamRow(view, &encoded));
  ASSERT_TRUE(TranscodeStreamRow(server_envelope, &transcoded));
  EXPECT_EQ(transcoded, encoded);
}

TEST(V3StreamRows, MalformedServerEnvelopesAreRefused) {
  std::string out;
  EXPECT_FALSE(TranscodeStreamRow("", &out));
  EXPECT_FALSE(TranscodeStreamRow("\x0a\x05\x01", &out));  // meta runs past the end
  const std::string whole = ServerEnvelopeOf(GroupRow("d"));
  EXPECT_FALSE(TranscodeStreamRow(whole.substr(0, whole.size() - 1), &out));
  EXPECT_TRUE(out.empty());
}

// The response message WrapSubscribeRow makes of `row` (the bytes of a V3 stream row) in `lane`.
std::string Wrapped(std::string_view topic, const std::string& row, uint64_t lane) {
  fanout::RowFraming framing;
  WrapSubscribeRow(topic, row.size(), lane, &framing);
  return std::string(framing.head, framing.head_size) + row +
         std::string(framing.tail, framing.tail_size);
}

// verifies: issue 33 (docs/v3-api.md 4.3) — an XIP-83 row is a SubscribeResponse of its own:
// v1.messages with the row under its kind's field and the lane as mutate_id (none when live)
TEST(V3StreamRows, SubscribeRowsAreMessagesOfTheirLane) {
  for (const size_t size : {size_t{10}, size_t{300}, size_t{70'000}, size_t{3'000'000}}) {
    for (const uint64_t lane : {uint64_t{0}, uint64_t{1}, uint64_t{300}, UINT64_MAX}) {
      mls::GroupMessage group;
      group.mutable_v1()->set_id(7);
      group.mutable_v1()->set_data(std::string(size, 'g'));
      mls::SubscribeResponse response;
      ASSERT_TRUE(response.ParseFromString(
          Wrapped(std::string(1, '\x00') + std::string(16, 'i'), group.SerializeAsString(), lane)));
      ASSERT_TRUE(response.v1().has_messages());
      const auto& messages = response.v1().messages();
      EXPECT_EQ(messages.mutate_id(), lane);
      ASSERT_EQ(messages.group_messages_size(), 1);
      EXPECT_EQ(messages.welcome_messages_size(), 0);
      EXPECT_EQ(messages.group_messages(0).v1().data().size(), size);

      mls::WelcomeMessage welcome;
      welcome.mutable_v1()->set_data(std::string(size, 'w'));
      ASSERT_TRUE(response.ParseFromString(Wrapped(std::string(1, '\x01') + std::string(32, 'k'),
                                                   welcome.SerializeAsString(), lane)));
      EXPECT_EQ(response.v1().messages().mutate_id(), lane);
      ASSERT_EQ(response.v1().messages().welcome_messages_size(), 1);
      EXPECT_EQ(response.v1().messages().welcome_messages(0).v1().data().size(), size);
      EXPECT_EQ(response.v1().messages().group_messages_size(), 0);
    }
  }
}

}  // namespace
}  // namespace xb::api::v3
