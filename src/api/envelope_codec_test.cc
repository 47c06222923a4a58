#include "api/envelope_codec.h"

#include <gtest/gtest.h>

namespace xb::api {
namespace {

namespace v1 = xmtp::backend::v1;

store::StoredEnvelope Row(int64_t id, int64_t server_ns, int64_t expiry_ns, bool commit,
                          size_t payload_bytes) {
  store::StoredEnvelope row;
  row.meta.sequence_id = id;
  row.meta.server_ns = server_ns;
  row.meta.expiry_ns = expiry_ns;
  row.meta.is_commit_or_proposal = commit;
  row.meta.topic = std::string("\x00", 1) + std::string(16, 'g');
  for (size_t i = 0; i < row.meta.message_hash.size(); ++i) {
    row.meta.message_hash[i] = static_cast<uint8_t>(i * 7);
  }
  v1::ClientEnvelope envelope;
  envelope.mutable_group_message()->set_data(std::string(payload_bytes, 'd'));
  row.payload = envelope.SerializeAsString();
  return row;
}

// verifies: API-212 (streams deliver the same ServerEnvelope bytes as unary reads)
TEST(EnvelopeCodecTest, HandEncodingEqualsTheProtobufEncoding) {
  for (const auto& row : {Row(1, 1795966011000747226, 1803742011000747226, false, 10),
                          Row(INT64_MAX, 1, 0, true, 1000), Row(300, 0, 0, false, 70000)}) {
    v1::ServerEnvelope message;
    ASSERT_TRUE(ToWire(row, &message));
    std::string encoded;
    ASSERT_TRUE(EncodeServerEnvelope(store::StoredEnvelopeView::Of(row), &encoded));
    EXPECT_EQ(encoded, message.SerializeAsString());
  }
}

}  // namespace
}  // namespace xb::api
