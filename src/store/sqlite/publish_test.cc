#include "store/sqlite/publish.h"

#include <gtest/gtest.h>

#include <limits>

#include "store/sqlite/test_support.h"

namespace xb::store::sqlite {
namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

TEST(ComputeExpiryNs, UsesTheClassPeriod) {
  // verifies: API-212
  const RetentionSeconds seconds{.group_message = 1, .welcome = 2, .key_package = 3};
  EXPECT_EQ(ComputeExpiryNs(10, RetentionClass::kGroupMessage, seconds).value(), 1000000010);
  EXPECT_EQ(ComputeExpiryNs(10, RetentionClass::kWelcome, seconds).value(), 2000000010);
  EXPECT_EQ(ComputeExpiryNs(10, RetentionClass::kKeyPackage, seconds).value(), 3000000010);
}

TEST(ComputeExpiryNs, ExemptIsZeroWhateverIsConfigured) {
  // verifies: OPS-001
  const RetentionSeconds huge{.group_message = std::numeric_limits<uint64_t>::max(),
                              .welcome = std::numeric_limits<uint64_t>::max(),
                              .key_package = std::numeric_limits<uint64_t>::max()};
  EXPECT_EQ(ComputeExpiryNs(kMax, RetentionClass::kExempt, huge).value(), 0);
}

TEST(ComputeExpiryNs, OverflowIsAnErrorAtEveryEdge) {
  // verifies: OPS-020
  const uint64_t max_seconds = static_cast<uint64_t>(kMax / 1000000000);
  const int64_t max_period = static_cast<int64_t>(max_seconds) * 1000000000;
  RetentionSeconds s{.group_message = max_seconds, .welcome = max_seconds + 1, .key_package = 0};
  // The largest period, at the largest clock that still fits.
  auto fits = ComputeExpiryNs(kMax - max_period, RetentionClass::kGroupMessage, s);
  ASSERT_TRUE(IsOk(fits));
  EXPECT_EQ(fits.value(), kMax);
  EXPECT_EQ(ErrorOf(ComputeExpiryNs(kMax - max_period + 1, RetentionClass::kGroupMessage, s)).kind,
            ErrorKind::kOverflow);
  // The period alone does not fit.
  EXPECT_EQ(ErrorOf(ComputeExpiryNs(0, RetentionClass::kWelcome, s)).kind, ErrorKind::kOverflow);
  // A zero period expires at the store time.
  EXPECT_EQ(ComputeExpiryNs(kMax, RetentionClass::kKeyPackage, s).value(), kMax);
}

}  // namespace
}  // namespace xb::store::sqlite
