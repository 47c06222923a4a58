// verifies: ATCH-073 (the Expiration timestamps of the credential sources)
#include "attach/iso8601.h"

#include <gtest/gtest.h>

namespace xb::attach {
namespace {

std::optional<int64_t> Micros(std::string_view text) {
  const auto at = ParseIso8601(text);
  if (!at) {
    return std::nullopt;
  }
  return std::chrono::duration_cast<std::chrono::microseconds>(at->time_since_epoch()).count();
}

constexpr int64_t k20261205T100000 = 1796464800;  // 2026-12-05T10:00:00Z

TEST(Iso8601, UtcWithZ) {
  EXPECT_EQ(Micros("2026-12-05T10:00:00Z"), k20261205T100000 * 1000000);
  EXPECT_EQ(Micros("1970-01-01T00:00:00Z"), 0);
  EXPECT_EQ(Micros("2026-12-05t10:00:00z"), k20261205T100000 * 1000000);
  EXPECT_EQ(Micros("2026-12-05 10:00:00Z"), k20261205T100000 * 1000000);
}

TEST(Iso8601, FractionsAreTruncatedToMicroseconds) {
  EXPECT_EQ(Micros("2026-12-05T10:00:00.5Z"), k20261205T100000 * 1000000 + 500000);
  EXPECT_EQ(Micros("2026-12-05T10:00:00.123456789Z"), k20261205T100000 * 1000000 + 123456);
  EXPECT_EQ(Micros("2026-12-05T10:00:00.Z"), std::nullopt);
}

TEST(Iso8601, Offsets) {
  EXPECT_EQ(Micros("2026-12-05T11:30:00+01:30"), k20261205T100000 * 1000000);
  EXPECT_EQ(Micros("2026-12-05T05:00:00-0500"), k20261205T100000 * 1000000);
  EXPECT_EQ(Micros("2026-12-05T10:00:00+00:00"), k20261205T100000 * 1000000);
  EXPECT_EQ(Micros("2026-12-05T10:00:00+24:00"), std::nullopt);
}

TEST(Iso8601, LeapYearsAndMonthEnds) {
  EXPECT_TRUE(Micros("2024-02-29T00:00:00Z"));
  EXPECT_FALSE(Micros("2025-02-29T00:00:00Z"));
  EXPECT_FALSE(Micros("2026-04-31T00:00:00Z"));
  EXPECT_EQ(Micros("2000-03-01T00:00:00Z"), int64_t{951868800} * 1000000);
}

TEST(Iso8601, RejectsWhatIsNotATimestamp) {
  for (const char* bad :
       {"", "2026-12-05", "2026-12-05T10:00:00", "2026-12-05T10:00Z", "2026-13-05T10:00:00Z",
        "2026-12-05T25:00:00Z", "2026-12-05T10:60:00Z", "2026-12-05T10:00:61Z",
        "2026-12-05T10:00:00Zjunk", "20261205T100000Z", "2026-12-05X10:00:00Z", "1796464800",
        "２026-12-05T10:00:00Z", "2026-12-05T10:00:00+1"}) {
    EXPECT_EQ(Micros(bad), std::nullopt) << bad;
  }
}

}  // namespace
}  // namespace xb::attach
