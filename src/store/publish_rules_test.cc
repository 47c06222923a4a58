#include "store/publish_rules.h"

#include <gtest/gtest.h>

#include <limits>
#include <string>

namespace xb::store {
namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

std::string Topic(uint8_t kind, size_t id_bytes) {
  return std::string(1, static_cast<char>(kind)) + std::string(id_bytes, 'a');
}

TEST(PublishRules, IdentityTopicKindAndShape) {
  EXPECT_TRUE(HasIdentityKind(Topic(0x02, 32)));
  EXPECT_TRUE(HasIdentityKind(Topic(0x02, 3)));  // the kind alone, whatever the length
  EXPECT_FALSE(HasIdentityKind(Topic(0x00, 32)));
  EXPECT_FALSE(HasIdentityKind(""));
  EXPECT_TRUE(IsInboxTopic(Topic(0x02, 32)));
  EXPECT_FALSE(IsInboxTopic(Topic(0x02, 31)));
  EXPECT_FALSE(IsInboxTopic(Topic(0x02, 33)));
  EXPECT_FALSE(IsInboxTopic(Topic(0x01, 32)));
}

TEST(PublishRules, RetentionPeriodByClass) {
  // verifies: API-212, OPS-001
  const RetentionSeconds seconds{.group_message = 1, .welcome = 2, .key_package = 3};
  EXPECT_EQ(RetentionPeriod(RetentionClass::kGroupMessage, seconds), 1u);
  EXPECT_EQ(RetentionPeriod(RetentionClass::kWelcome, seconds), 2u);
  EXPECT_EQ(RetentionPeriod(RetentionClass::kKeyPackage, seconds), 3u);
  EXPECT_EQ(RetentionPeriod(RetentionClass::kExempt, seconds), std::nullopt);
}

TEST(PublishRules, CheckedExpiryAtEveryEdge) {
  // verifies: OPS-020
  const uint64_t max_seconds = static_cast<uint64_t>(kMax / kNanosPerSecond);
  const int64_t max_period = static_cast<int64_t>(max_seconds) * kNanosPerSecond;
  EXPECT_EQ(CheckedExpiryNs(10, 1), 1000000010);
  EXPECT_EQ(CheckedExpiryNs(kMax, 0), kMax);  // a zero period expires at the store time
  EXPECT_EQ(CheckedExpiryNs(kMax - max_period, max_seconds), kMax);
  EXPECT_EQ(CheckedExpiryNs(kMax - max_period + 1, max_seconds), std::nullopt);
  EXPECT_EQ(CheckedExpiryNs(0, max_seconds + 1), std::nullopt);  // the period alone
  EXPECT_EQ(CheckedExpiryNs(-1, max_seconds), kMax - 1 - (kMax - max_period));
  static_assert(CheckedExpiryNs(1, 2) == 2000000001);
}

}  // namespace
}  // namespace xb::store
