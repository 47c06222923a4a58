#include "fanout/wave_merge.h"

#include <gtest/gtest.h>

#include <limits>

namespace xb::fanout {
namespace {

constexpr int64_t kNoLimit = std::numeric_limits<int64_t>::max();

// verifies: docs/v3-api.md G10 (a pass reads the topics not caught up, unknown next rows first)
TEST(WaveMergeTest, PassReadsUnknownTopicsFirstThenSmallestKnownNextRow) {
  std::vector<WaveTopicState> topics = {
      {.floor = 0, .needed = 90, .peek = 50},  // next row known: 50
      {.floor = 5, .needed = 5, .peek = 0},    // caught up
      {.floor = 0, .needed = 70, .peek = 0},   // next row unknown
      {.floor = 0, .needed = 80, .peek = 20},  // next row known: 20
      {.floor = 30, .needed = 99, .peek = 7},  // a stale peek (below the floor) counts as unknown
  };
  EXPECT_EQ(ChoosePassTopics(topics, 10), (std::vector<size_t>{2, 4, 3, 0}));
  EXPECT_EQ(ChoosePassTopics(topics, 2), (std::vector<size_t>{2, 4}));
  EXPECT_TRUE(ChoosePassTopics({{.floor = 9, .needed = 9}}, 10).empty());
}

// verifies: docs/v3-api.md G10 (rows go out below the least of what each topic is known through)
TEST(WaveMergeTest, FrontierIsTheLeastKnownRowOfTheTopics) {
  std::vector<WaveTopicState> topics = {
      {.floor = 0, .needed = 100},  // read 1..40 of (0, 100]
      {.floor = 0, .needed = 30},   // read to its end
      {.floor = 0, .needed = 60},   // read 1..55
  };
  std::vector<TopicRead> reads = {{true, 100, 40}, {true, 30, 30}, {true, 60, 55}};
  EXPECT_EQ(WaveFrontier(topics, reads), 40);
  // Every range read to its end: nothing limits the pass, unless a topic gained a row since.
  reads = {{true, 100, 100}, {true, 30, 30}, {true, 60, 60}};
  EXPECT_EQ(WaveFrontier(topics, reads), kNoLimit);
  topics[1].needed = 45;
  EXPECT_EQ(WaveFrontier(topics, reads), 30);
}

// verifies: docs/v3-api.md G10 (a topic the pass did not read limits it at what is known of it)
TEST(WaveMergeTest, UnreadTopicsLimitAtTheirFloorOrBeforeTheirKnownNextRow) {
  std::vector<WaveTopicState> topics = {
      {.floor = 0, .needed = 100},
      {.floor = 10, .needed = 50, .peek = 0},   // unread, next row unknown: its floor
      {.floor = 10, .needed = 50, .peek = 45},  // unread, next row 45: nothing in (10, 44]
  };
  std::vector<TopicRead> reads = {{true, 100, 100}, {}, {}};
  EXPECT_EQ(WaveFrontier(topics, reads), 10);
  topics[1].peek = 60;
  EXPECT_EQ(WaveFrontier(topics, reads), 44);
  // A caught-up topic does not limit; one that gained a row during the read does.
  topics[1] = {.floor = 50, .needed = 50};
  topics[2] = {.floor = 50, .needed = 50};
  EXPECT_EQ(WaveFrontier(topics, reads), kNoLimit);
  topics[2].needed = 120;
  EXPECT_EQ(WaveFrontier(topics, reads), 50);
  EXPECT_EQ(WaveFrontier({{.floor = 3, .needed = 3}}, {TopicRead{}}), kNoLimit);
}

// verifies: docs/v3-api.md G10 (a range the byte budget left without rows is known only to its
// floor; once its next row is known, the pass that reads the smallest next row sends it)
TEST(WaveMergeTest, BudgetCutRangesStillLetTheSmallestRowOut) {
  // Pass 1: the budget admitted only topic 0's first row (id 30); topic 1 read nothing.
  std::vector<WaveTopicState> topics = {{.floor = 0, .needed = 90}, {.floor = 0, .needed = 90}};
  std::vector<TopicRead> reads = {{true, 90, 30}, {true, 90, 0}};
  EXPECT_EQ(WaveFrontier(topics, reads), 0);  // nothing can go out yet
  topics[0].peek = 30;
  // Pass 2 reads topic 1 first (its next row is unknown) and sees row 10 only.
  EXPECT_EQ(ChoosePassTopics(topics, 10), (std::vector<size_t>{1, 0}));
  reads = {{true, 90, 0}, {true, 90, 10}};
  EXPECT_EQ(WaveFrontier(topics, reads), 10);  // row 10 goes out: topic 0 has nothing below 30
}

}  // namespace
}  // namespace xb::fanout
