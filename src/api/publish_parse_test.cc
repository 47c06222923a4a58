#include "api/publish_parse.h"

#include <gtest/gtest.h>

#include <string>

#include "mls/message_contents/commit_log.pb.h"
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

// ---- PUSH-219: what is pushed is decided at publish. ----

// A group message of `content_type` (1 application, 2 proposal, 3 commit) on group `group`.
v1::ClientEnvelope GroupEnvelope(char group, uint8_t content_type, bool should_push,
                                 const std::string& sender_hmac = "") {
  v1::ClientEnvelope e;
  auto* message = e.mutable_group_message();
  message->set_data(validate::testing::PrivateMessage(std::string(16, group), 1, content_type));
  message->set_should_push(should_push);
  message->set_sender_hmac(sender_hmac);
  return e;
}

// The one stored item of a request with the single envelope `e`.
store::PublishItem OnlyItem(const v1::ClientEnvelope& e) {
  const ParsedPublish parsed = ParsePublish(Field1(e.SerializeAsString()), config::LimitsConfig{});
  EXPECT_FALSE(parsed.rejected.has_value());
  EXPECT_FALSE(parsed.failure.has_value());
  EXPECT_EQ(parsed.items.size(), 1u);
  return parsed.items.empty() ? store::PublishItem{} : parsed.items[0];
}

// verifies: PUSH-219
TEST(PublishParse, PushEligibleGroupMessagesAreShouldPushOrCommitsAndProposals) {
  EXPECT_TRUE(OnlyItem(GroupEnvelope('a', 1, /*should_push=*/true)).push_eligible);
  EXPECT_FALSE(OnlyItem(GroupEnvelope('a', 1, /*should_push=*/false)).push_eligible);
  // Regression (issue 30): a commit or proposal sent with should_push = false was stored as not
  // eligible.
  for (uint8_t content_type : {uint8_t{2}, uint8_t{3}}) {
    for (bool should_push : {false, true}) {
      const store::PublishItem item = OnlyItem(GroupEnvelope('b', content_type, should_push));
      EXPECT_TRUE(item.is_commit_or_proposal);
      EXPECT_TRUE(item.push_eligible) << int{content_type} << " " << should_push;
    }
  }
}

// verifies: PUSH-219
TEST(PublishParse, SenderHmacIsStoredOnlyWhenExactly32Bytes) {
  const std::string hmac(32, '\x5a');
  const store::PublishItem kept = OnlyItem(GroupEnvelope('a', 1, true, hmac));
  ASSERT_TRUE(kept.sender_hmac.has_value());
  EXPECT_EQ(std::string(kept.sender_hmac->begin(), kept.sender_hmac->end()), hmac);
  for (size_t n : {size_t{0}, size_t{31}, size_t{33}}) {
    EXPECT_FALSE(OnlyItem(GroupEnvelope('a', 1, true, std::string(n, '\x5a'))).sender_hmac) << n;
  }
  // Stored also for a message that is not eligible (the rule does not depend on should_push).
  EXPECT_TRUE(OnlyItem(GroupEnvelope('a', 1, false, hmac)).sender_hmac.has_value());
}

// verifies: PUSH-219
TEST(PublishParse, WelcomesAreEligibleWithoutSenderHmac) {
  v1::ClientEnvelope welcome_v1;
  welcome_v1.mutable_welcome_message()->mutable_v1()->set_installation_key(std::string(32, 'k'));
  v1::ClientEnvelope pointer;
  pointer.mutable_welcome_message()->mutable_welcome_pointer()->set_installation_key(
      std::string(32, 'p'));
  for (const v1::ClientEnvelope& e : {welcome_v1, pointer}) {
    const store::PublishItem item = OnlyItem(e);
    EXPECT_TRUE(item.push_eligible);
    EXPECT_FALSE(item.sender_hmac.has_value());
  }
}

// verifies: PUSH-219
TEST(PublishParse, CommitLogEntriesAreNotEligible) {
  xmtp::mls::message_contents::PlaintextCommitLogEntry entry;
  entry.set_group_id(std::string(16, 'g'));
  entry.set_commit_sequence_id(7);
  v1::ClientEnvelope e;
  e.mutable_commit_log_entry()->set_serialized_commit_log_entry(entry.SerializeAsString());
  const store::PublishItem item = OnlyItem(e);
  EXPECT_FALSE(item.push_eligible);
  EXPECT_FALSE(item.sender_hmac.has_value());
}

}  // namespace
}  // namespace xb::api
