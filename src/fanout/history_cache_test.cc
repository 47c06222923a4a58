#include "fanout/history_cache.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

namespace xb::fanout {
namespace {

// A chunk of `topic` holding rows `ids` (ascending) after `after`, each encoded as "r<id>" padded
// to `row_bytes`.
HistoryChunkPtr Chunk(const std::string& topic, int64_t after, const std::vector<int64_t>& ids,
                      size_t row_bytes = 8) {
  auto chunk = std::make_shared<HistoryChunk>();
  chunk->topic = topic;
  chunk->after = after;
  chunk->last = ids.back();
  for (int64_t id : ids) {
    std::string encoded = "r" + std::to_string(id);
    encoded.resize(std::max(row_bytes, encoded.size()), '.');
    chunk->rows.push_back(HistoryRow{id, chunk->bytes.size(), encoded.size()});
    chunk->bytes += encoded;
  }
  return chunk;
}

TEST(HistoryCacheTest, FindsTheChunkHoldingTheRowsRightAfterACursor) {
  HistoryCache cache(1u << 20);
  cache.Insert(Chunk("t", 10, {12, 15, 20}));
  EXPECT_EQ(cache.Find("t", 9), nullptr);  // rows at or below 10 are not known
  for (int64_t after : {10, 12, 14, 19}) {
    HistoryChunkPtr chunk = cache.Find("t", after);
    ASSERT_NE(chunk, nullptr) << after;
    EXPECT_EQ(chunk->after, 10);
    EXPECT_EQ(chunk->Encoded(chunk->rows[1]).substr(0, 3), "r15");
  }
  EXPECT_EQ(cache.Find("t", 20), nullptr);  // nothing is known past the chunk's last row
  EXPECT_EQ(cache.Find("other", 12), nullptr);
}

// verifies: STORE.md 9.2 rule 6 (issue 35) — no cached row the pruning pass may have deleted is
// served: a lookup at or after a chunk's earliest expiry drops the chunk.
TEST(HistoryCacheTest, AChunkWhoseRowsMayBePrunedIsDropped) {
  HistoryCache cache(1u << 20);
  auto expiring = std::const_pointer_cast<HistoryChunk>(Chunk("t", 10, {12, 15}));
  expiring->first_expiry_ns = 1000;
  cache.Insert(expiring);
  cache.Insert(Chunk("t", 15, {18, 20}));  // nothing in it expires
  EXPECT_NE(cache.Find("t", 10, 999), nullptr);
  EXPECT_NE(cache.Find("t", 15, INT64_MAX - 1), nullptr);
  const size_t bytes = cache.bytes();
  EXPECT_EQ(cache.Find("t", 12, 1000), nullptr);
  EXPECT_EQ(cache.chunks(), 1u);
  EXPECT_LT(cache.bytes(), bytes);
  EXPECT_EQ(cache.Find("t", 10), nullptr);  // gone for every later lookup too
  EXPECT_NE(cache.Find("t", 18), nullptr);
}

TEST(HistoryCacheTest, OverlappingChunksOfATopicAreIgnoredAndAdjacentOnesKept) {
  HistoryCache cache(1u << 20);
  cache.Insert(Chunk("t", 10, {12, 20}));
  cache.Insert(Chunk("t", 15, {17, 25}));  // overlaps (10, 20]
  cache.Insert(Chunk("t", 5, {7, 11}));    // overlaps (10, 20] from below
  cache.Insert(Chunk("t", 10, {30}));      // starts where one does
  EXPECT_EQ(cache.chunks(), 1u);
  cache.Insert(Chunk("t", 20, {21, 30}));  // continues (10, 20]
  cache.Insert(Chunk("t", 0, {3, 10}));    // ends where (10, 20] starts
  cache.Insert(Chunk("u", 15, {17}));      // another topic
  EXPECT_EQ(cache.chunks(), 4u);
  EXPECT_EQ(cache.Find("t", 20)->after, 20);
  EXPECT_EQ(cache.Find("t", 4)->after, 0);
  EXPECT_EQ(cache.Find("t", 10)->after, 10);
}

TEST(HistoryCacheTest, MalformedChunksAreRefused) {
  HistoryCache cache(1u << 20);
  auto empty = std::make_shared<HistoryChunk>();
  empty->topic = "t";
  empty->after = 1;
  empty->last = 2;
  cache.Insert(empty);
  auto wrong_last = std::make_shared<HistoryChunk>(*Chunk("t", 1, {2, 3}));
  wrong_last->last = 4;
  cache.Insert(wrong_last);
  cache.Insert(nullptr);
  EXPECT_EQ(cache.chunks(), 0u);
  EXPECT_EQ(cache.bytes(), 0u);
}

TEST(HistoryCacheTest, TheLeastRecentlyUsedChunksGoFirstAndBytesStayBounded) {
  const size_t row_bytes = 1000;
  const size_t one = Chunk("a", 0, {1}, row_bytes)->footprint();
  HistoryCache cache(4 * one + one / 2);  // room for four chunks
  cache.Insert(Chunk("a", 0, {1}, row_bytes));
  cache.Insert(Chunk("b", 0, {1}, row_bytes));
  cache.Insert(Chunk("c", 0, {1}, row_bytes));
  cache.Insert(Chunk("d", 0, {1}, row_bytes));
  ASSERT_NE(cache.Find("a", 0), nullptr);  // a is now the most recently used
  cache.Insert(Chunk("e", 0, {1}, row_bytes));
  EXPECT_EQ(cache.Find("b", 0), nullptr);  // the oldest went
  EXPECT_NE(cache.Find("a", 0), nullptr);
  EXPECT_NE(cache.Find("e", 0), nullptr);
  EXPECT_EQ(cache.chunks(), 4u);
  EXPECT_LE(cache.bytes(), 4 * one + one / 2);
}

TEST(HistoryCacheTest, AChunkLargerThanAQuarterOfTheCapacityIsNotKept) {
  HistoryCache cache(4000);
  cache.Insert(Chunk("t", 0, {1, 2}, 1200));
  EXPECT_EQ(cache.chunks(), 0u);
}

TEST(HistoryCacheTest, ReadersKeepTheirChunkWhileItIsEvicted) {
  HistoryCache cache(Chunk("a", 0, {1}, 100)->footprint() * 5);
  cache.Insert(Chunk("a", 0, {1}, 100));
  HistoryChunkPtr held = cache.Find("a", 0);
  for (int i = 0; i < 20; ++i) {
    cache.Insert(Chunk("x" + std::to_string(i), 0, {1}, 100));
  }
  EXPECT_EQ(cache.Find("a", 0), nullptr);
  ASSERT_NE(held, nullptr);
  EXPECT_EQ(held->Encoded(held->rows[0]).substr(0, 2), "r1");
}

TEST(HistoryCacheTest, ConcurrentInsertsAndFindsStayConsistent) {
  HistoryCache cache(Chunk("t0", 0, {1, 2, 3}, 64)->footprint() * 50);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&cache, t] {
      for (int i = 0; i < 2000; ++i) {
        const std::string topic = "t" + std::to_string((i + t) % 80);
        if (HistoryChunkPtr chunk = cache.Find(topic, 0)) {
          ASSERT_EQ(chunk->topic, topic);
          ASSERT_EQ(chunk->rows.size(), 3u);
        } else {
          cache.Insert(Chunk(topic, 0, {1, 2, 3}, 64));
        }
      }
    });
  }
  for (auto& thread : threads) {
    thread.join();
  }
  EXPECT_LE(cache.bytes(), Chunk("t0", 0, {1, 2, 3}, 64)->footprint() * 50);
  EXPECT_GT(cache.chunks(), 0u);
}

}  // namespace
}  // namespace xb::fanout
