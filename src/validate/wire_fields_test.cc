#include "validate/wire_fields.h"

#include <gtest/gtest.h>

#include <string>

#include "xmtp/backend/v1/backend.pb.h"

namespace xb::validate {
namespace {

namespace v1 = xmtp::backend::v1;

TEST(WireFields, CountsARepeatedFieldAsProtobufParsesIt) {
  v1::QueryRequest request;
  for (int i = 0; i < 7; ++i) {
    request.add_queries()->mutable_topic()->set_topic("t" + std::to_string(i));
  }
  request.set_limit(5);
  const std::string bytes = request.SerializeAsString();
  EXPECT_EQ(CountField(bytes, 1), 7u);
  EXPECT_EQ(CountField(bytes, 2), 1u);
  EXPECT_EQ(CountField(bytes, 9), 0u);
  EXPECT_EQ(CountField("", 1), 0u);
}

// The attack of issue 28: millions of empty sub-messages. Counting stops past the bound.
TEST(WireFields, EmptySubMessagesAreCountedWithoutDecodingAndCountingStops) {
  std::string bytes;
  for (int i = 0; i < 100000; ++i) {
    bytes += std::string("\x0a\x00", 2);
  }
  EXPECT_EQ(CountField(bytes, 1), 100000u);
  EXPECT_EQ(CountField(bytes, 1, 10), 11u);
}

TEST(WireFields, MalformedTopLevelIsRefusedLikeTheParser) {
  for (const std::string& bad :
       {std::string("\x0a\x05zz", 4), std::string("\x08", 1),
        std::string("\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff", 11), std::string("\x0b", 1),
        std::string("\x00\x01", 2), std::string("\x0d\x01\x02", 3)}) {
    EXPECT_FALSE(CountField(bad, 1).has_value()) << bad.size();
    v1::QueryRequest parsed;
    EXPECT_FALSE(parsed.ParseFromString(bad)) << bad.size();
  }
}

TEST(WireFields, ReaderHandsOutEachFieldInOrder) {
  v1::PublishRequest request;
  request.add_envelopes()->mutable_group_message()->set_data("a");
  request.add_envelopes();
  request.add_envelopes()->mutable_group_message()->set_data("bcd");
  const std::string bytes = request.SerializeAsString();
  WireFieldReader reader(bytes);
  for (int i = 0; i < 3; ++i) {
    auto field = reader.Next();
    ASSERT_TRUE(field.has_value());
    EXPECT_EQ(field->number, 1u);
    EXPECT_EQ(field->wire_type, 2u);
    EXPECT_EQ(field->bytes, request.envelopes(i).SerializeAsString());
  }
  EXPECT_FALSE(reader.Next().has_value());
  EXPECT_TRUE(reader.ok());
}

// Each field's raw value is what follows its key: varint bytes, or the length prefix and bytes.
TEST(WireFields, RawIsTheValueAsOnTheWire) {
  v1::GroupMessage message;
  message.set_data(std::string(200, 'x'));
  message.set_should_push(true);
  const std::string bytes = message.SerializeAsString();
  WireFieldReader reader(bytes);
  auto data = reader.Next();
  ASSERT_TRUE(data.has_value());
  EXPECT_EQ(data->raw, std::string("\xc8\x01", 2) + std::string(200, 'x'));
  auto push = reader.Next();
  ASSERT_TRUE(push.has_value());
  EXPECT_EQ(push->number, 3u);
  EXPECT_EQ(push->raw, std::string("\x01", 1));
  EXPECT_EQ(push->value, 1u);
  EXPECT_FALSE(reader.Next().has_value());
}

}  // namespace
}  // namespace xb::validate
