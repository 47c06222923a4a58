#include "fanout/gap_set.h"

#include <gtest/gtest.h>

namespace xb::fanout {
namespace {

std::vector<std::pair<int64_t, int64_t>> Pairs(const GapSet& gaps) {
  std::vector<std::pair<int64_t, int64_t>> out;
  for (const auto& r : gaps.Ranges()) {
    out.emplace_back(r.low, r.high);
  }
  return out;
}

// verifies: STORE.md 5.3 (ARC-042: ranges, never one entry per id)
TEST(GapSetTest, AddKeepsRangesNotIds) {
  GapSet gaps;
  gaps.Add(5, 1000000);
  EXPECT_EQ(gaps.size(), 1u);
  EXPECT_EQ(gaps.highest(), 1000000);
}

TEST(GapSetTest, AddMergesTouchingAndOverlappingRanges) {
  GapSet gaps;
  gaps.Add(1, 3);
  gaps.Add(10, 12);
  gaps.Add(4, 5);  // touches [1,3]
  EXPECT_EQ(Pairs(gaps), (std::vector<std::pair<int64_t, int64_t>>{{1, 5}, {10, 12}}));
  gaps.Add(6, 9);  // bridges both
  EXPECT_EQ(Pairs(gaps), (std::vector<std::pair<int64_t, int64_t>>{{1, 12}}));
  gaps.Add(INT64_MAX - 1, INT64_MAX);
  EXPECT_EQ(gaps.highest(), INT64_MAX);
  EXPECT_EQ(gaps.size(), 2u);
}

// verifies: STORE.md 5.3 (a probed row leaves the set as a single point)
TEST(GapSetTest, SubtractingAPointSplitsARange) {
  GapSet gaps;
  gaps.Add(10, 20);
  gaps.Subtract(15, 15);
  EXPECT_EQ(Pairs(gaps), (std::vector<std::pair<int64_t, int64_t>>{{10, 14}, {16, 20}}));
  gaps.Subtract(10, 10);
  gaps.Subtract(20, 20);
  EXPECT_EQ(Pairs(gaps), (std::vector<std::pair<int64_t, int64_t>>{{11, 14}, {16, 19}}));
}

// verifies: STORE.md 5.3 (retiring [low, min(high, b)] keeps the part above b)
TEST(GapSetTest, SubtractingUpToTheBoundaryKeepsThePartAbove) {
  GapSet gaps;
  gaps.Add(1, 5);
  gaps.Add(8, 30);
  gaps.Add(40, 50);
  gaps.Subtract(1, 12);
  EXPECT_EQ(Pairs(gaps), (std::vector<std::pair<int64_t, int64_t>>{{13, 30}, {40, 50}}));
  gaps.Subtract(0, 100);
  EXPECT_TRUE(gaps.empty());
  EXPECT_EQ(gaps.highest(), 0);
}

}  // namespace
}  // namespace xb::fanout
