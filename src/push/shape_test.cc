// The request-shape rows of NotificationService admission (push/shape.h, spec/PUSH.md 4.1 rows 1,
// 4d, 4e and section 5.1): each rule at its edges, status asserted by code and message.
#include "push/shape.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace xb::push {
namespace {

std::string GroupTopic(char fill = 'g') { return std::string(1, '\x00') + std::string(16, fill); }
std::string WelcomeTopic(char fill = 'w') { return std::string(1, '\x01') + std::string(32, fill); }
std::string Key(char fill = 'k') { return std::string(42, fill); }

std::string Repeat(std::string_view unit, size_t count) {
  std::string out;
  for (size_t i = 0; i < count; ++i) {
    out += unit;
  }
  return out;
}

void ExpectMalformed(const Status& status) {
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(), "request is malformed");
}

void ExpectSubscriptionMalformed(const Status& status) {
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(), "subscription is malformed");
}

SubscriptionInput Add(std::string topic, std::vector<std::string> keys = {}, int64_t base = 0) {
  return {.topic = std::move(topic),
          .hmac_epoch_base = base,
          .hmac_keys = std::move(keys),
          .include_commits = false};
}

// verifies: PUSH-253
TEST(PushShape, RecipientIdAndSecretAreExactly32Bytes) {
  const std::string ok(32, 'a');
  EXPECT_TRUE(CheckRecipientCredentials(ok, ok).ok());
  for (size_t bad : {0, 1, 31, 33, 64}) {
    ExpectMalformed(CheckRecipientCredentials(std::string(bad, 'a'), ok));
    ExpectMalformed(CheckRecipientCredentials(ok, std::string(bad, 'a')));
  }
}

// verifies: PUSH-253
TEST(PushShape, DeliveryTextCountsUnicodeScalarValues) {
  EXPECT_TRUE(CheckDeliveryText("a").ok());
  EXPECT_TRUE(CheckDeliveryText(std::string(2048, 'a')).ok());
  ExpectMalformed(CheckDeliveryText(std::string(2049, 'a')));
  // Two, three and four bytes per scalar value: the limit is on characters, not bytes.
  EXPECT_TRUE(CheckDeliveryText(Repeat("\xc3\xa9", 2048)).ok());
  ExpectMalformed(CheckDeliveryText(Repeat("\xc3\xa9", 2049)));
  EXPECT_TRUE(CheckDeliveryText(Repeat("\xe2\x82\xac", 2048)).ok());
  EXPECT_TRUE(CheckDeliveryText(Repeat("\xf0\x9f\x98\x80", 2048)).ok());
  ExpectMalformed(CheckDeliveryText(Repeat("\xf0\x9f\x98\x80", 2049)));
  EXPECT_TRUE(CheckDeliveryText(std::string(2047, 'a') + "\xf0\x9f\x98\x80").ok());
}

// verifies: PUSH-253
TEST(PushShape, DeliveryTextRefusesEmptyNulAndInvalidUtf8) {
  ExpectMalformed(CheckDeliveryText(""));
  ExpectMalformed(CheckDeliveryText(std::string("a\0b", 3)));
  ExpectMalformed(CheckDeliveryText(std::string(1, '\0')));
  for (const char* bad :
       {"\xff", "a\x80", "\xc0\x80", "\xc3", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xe2\x82"}) {
    ExpectMalformed(CheckDeliveryText(bad));
  }
}

// verifies: PUSH-253
TEST(PushShape, SigningKeyIs16To64Bytes) {
  EXPECT_TRUE(CheckSigningKey(std::string(16, 'k')).ok());
  EXPECT_TRUE(CheckSigningKey(std::string(64, 'k')).ok());
  for (size_t bad : {0, 15, 65}) {
    const Status status = CheckSigningKey(std::string(bad, 'k'));
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(status.message(), "webhook signing key length is not allowed");
  }
}

// verifies: PUSH-215
TEST(PushShape, GroupMessageAndWelcomeTopicsPass) {
  EXPECT_TRUE(CheckSubscriptions({}, {}).ok());
  EXPECT_TRUE(CheckSubscriptions(
                  {Add(GroupTopic(), {Key('a'), Key('b'), Key('c')}, 654), Add(WelcomeTopic())},
                  {GroupTopic('h'), WelcomeTopic('x')})
                  .ok());
  // Without keys the epoch base is not stored, but it is still checked (below) when negative.
  EXPECT_TRUE(CheckSubscriptions({Add(GroupTopic(), {}, INT64_MAX)}, {}).ok());
}

// verifies: PUSH-215
TEST(PushShape, OtherTopicKindsAndLengthsFail) {
  std::vector<std::string> bad_topics = {
      "",
      std::string(1, '\x00'),
      std::string(1, '\x00') + std::string(15, 'g'),
      std::string(1, '\x00') + std::string(17, 'g'),
      std::string(1, '\x01') + std::string(31, 'w'),
      std::string(1, '\x01') + std::string(33, 'w'),
      std::string(1, '\x01') + std::string(16, 'w'),
      std::string(1, '\x02') + std::string(32, 'i'),  // identity update
      std::string(1, '\x03') + std::string(32, 'k'),  // key package
      std::string(1, '\x04') + std::string(16, 'c'),  // commit log
      std::string(1, '\x05') + std::string(16, 'x'),
  };
  for (const std::string& topic : bad_topics) {
    ExpectSubscriptionMalformed(CheckSubscriptions({Add(topic)}, {}));
    ExpectSubscriptionMalformed(CheckSubscriptions({}, {topic}));
  }
}

// verifies: PUSH-215
TEST(PushShape, ATopicAppearsOnceAcrossAddsAndRemoves) {
  ExpectSubscriptionMalformed(CheckSubscriptions({Add(GroupTopic()), Add(GroupTopic())}, {}));
  ExpectSubscriptionMalformed(CheckSubscriptions({}, {WelcomeTopic(), WelcomeTopic()}));
  ExpectSubscriptionMalformed(CheckSubscriptions({Add(GroupTopic())}, {GroupTopic()}));
  EXPECT_TRUE(CheckSubscriptions({Add(GroupTopic('a'))}, {GroupTopic('b')}).ok());
}

// verifies: PUSH-215
TEST(PushShape, NegativeEpochBaseFailsWithOrWithoutKeys) {
  ExpectSubscriptionMalformed(CheckSubscriptions({Add(GroupTopic(), {}, -1)}, {}));
  ExpectSubscriptionMalformed(CheckSubscriptions({Add(GroupTopic(), {Key()}, -1)}, {}));
  ExpectSubscriptionMalformed(CheckSubscriptions({Add(WelcomeTopic(), {}, INT64_MIN)}, {}));
  EXPECT_TRUE(CheckSubscriptions({Add(GroupTopic(), {Key()}, 0)}, {}).ok());
}

// verifies: PUSH-215
TEST(PushShape, AtMostThreeKeysOfExactly42Bytes) {
  ExpectSubscriptionMalformed(
      CheckSubscriptions({Add(GroupTopic(), {Key(), Key(), Key(), Key()}, 1)}, {}));
  for (size_t bad : {0, 41, 43}) {
    ExpectSubscriptionMalformed(
        CheckSubscriptions({Add(GroupTopic(), {Key(), std::string(bad, 'k')}, 1)}, {}));
  }
  EXPECT_TRUE(CheckSubscriptions({Add(GroupTopic(), {Key()}, 1)}, {}).ok());
}

// verifies: PUSH-215
TEST(PushShape, OneBadAddFailsTheWholeRequest) {
  ExpectSubscriptionMalformed(
      CheckSubscriptions({Add(GroupTopic('a')), Add(GroupTopic('b'), {}, -5)}, {WelcomeTopic()}));
}

}  // namespace
}  // namespace xb::push
