#include "api/publish_parse.h"

#include <gtest/gtest.h>

#include <string>

#include "validate/mls_test_builders.h"

namespace xb::api {
namespace {

namespace v1 = xmtp::backend::v1;

std::string GroupMessage(char group) {
  v1::ClientEnvelope e;
  e.mutable_group_message()->set_data(
      validate::testing::PrivateMessage(std::string(16, group), 1, 1));
  return e.SerializeAsString();
}

std::string Field1(const std::string& bytes) {
  return std::string(1, '\x0a') + static_cast<char>(bytes.size()) + bytes;
}

// Regression (issue 28, defect 3): 13,000,000 empty envelopes were all decoded before the first
// was looked at. Reading stops at the first failing envelope; positions are still all counted.
TEST(PublishParse, StopsAtTheFirstFailingEnvelope) {
  std::string request = Field1(GroupMessage('a')) + Field1("");
  for (int i = 0; i < 1000; ++i) {
    request += Field1(GroupMessage('b'));
  }
  const ParsedPublish parsed = ParsePublish(request, config::LimitsConfig{});
  EXPECT_EQ(parsed.positions, 1002);
  ASSERT_TRUE(parsed.failure.has_value());
  EXPECT_EQ(parsed.failure->index, 1u);
  EXPECT_EQ(parsed.failure->message, "envelope has no payload");
  EXPECT_EQ(parsed.items.size(), 1u);  // nothing past the failure was kept
  EXPECT_EQ(parsed.item_of.size(), 2u);
}

TEST(PublishParse, CollapsesRepeatsAndIgnoresUnknownFieldsAsTheParserDoes) {
  const std::string a = Field1(GroupMessage('a'));
  // An unknown field (2, varint) and a field 1 of the wrong wire type (varint): both ignored.
  const std::string request = a + "\x10\x05" + a + "\x08\x01" + Field1(GroupMessage('c'));
  const ParsedPublish parsed = ParsePublish(request, config::LimitsConfig{});
  EXPECT_FALSE(parsed.rejected.has_value());
  EXPECT_FALSE(parsed.failure.has_value());
  EXPECT_EQ(parsed.positions, 3);
  ASSERT_EQ(parsed.item_of.size(), 3u);
  EXPECT_EQ(parsed.item_of[0], parsed.item_of[1]);
  EXPECT_EQ(parsed.items.size(), 2u);
}

TEST(PublishParse, AMalformedRequestIsRefusedWhole) {
  const ParsedPublish truncated = ParsePublish(Field1(GroupMessage('a')) + "\x0a\x05", {});
  ASSERT_TRUE(truncated.rejected.has_value());
  EXPECT_EQ(truncated.rejected->message(), "request is malformed");
  const ParsedPublish bad_envelope = ParsePublish(Field1("\x0a\x05z"), {});
  ASSERT_TRUE(bad_envelope.rejected.has_value());
}

TEST(PublishParse, TheDistinctTopicBoundIsCheckedAsTopicsAreRead) {
  config::LimitsConfig limits;
  limits.max_publish_topics = 2;
  const std::string request =
      Field1(GroupMessage('a')) + Field1(GroupMessage('b')) + Field1(GroupMessage('c'));
  const ParsedPublish parsed = ParsePublish(request, limits);
  ASSERT_TRUE(parsed.too_large.has_value());
  EXPECT_EQ(*parsed.too_large, "too many distinct topics in one publish");
}

}  // namespace
}  // namespace xb::api
