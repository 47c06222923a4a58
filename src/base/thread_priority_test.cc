#include "base/thread_priority.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

namespace xb {
namespace {

TEST(ThreadPriority, LowersTheCallingThreadOnceAndNoOtherThread) {
  const int before = ThisThreadNice();
  int first = 0;
  int second = 0;
  std::thread pool_thread([&] {
    LowerPoolThreadPriorityOnce();
    first = ThisThreadNice();
    LowerPoolThreadPriorityOnce();
    second = ThisThreadNice();
  });
  pool_thread.join();
  const int expected = PoolThreadNice(before);
  EXPECT_EQ(first, expected);
  EXPECT_EQ(second, expected);
  EXPECT_EQ(ThisThreadNice(), before);
}

void SpinFor(std::chrono::steady_clock::duration d) {
  const auto until = std::chrono::steady_clock::now() + d;
  while (std::chrono::steady_clock::now() < until) {
  }
}

// verifies: issue 28 (a good client's p99 beside 24 MB Queries) — only pool threads give turns
TEST(ThreadPriority, OnlyAPoolThreadOffersItsTurn) {
  SpinFor(2 * kPoolThreadTurn);
  EXPECT_FALSE(OfferPoolThreadTurn());  // this thread never lowered itself
  bool first = false;
  bool after_a_turn = false;
  std::thread pool_thread([&] {
    LowerPoolThreadPriorityOnce();
    first = OfferPoolThreadTurn();  // it has run since it began
    SpinFor(kPoolThreadTurn);
    after_a_turn = OfferPoolThreadTurn();
  });
  pool_thread.join();
  EXPECT_TRUE(first);
  EXPECT_TRUE(after_a_turn);
}

// However often it is asked, a pool thread yields at most once per kPoolThreadTurn.
TEST(ThreadPriority, APoolThreadYieldsAtMostOncePerTurn) {
  int yields = 0;
  std::chrono::steady_clock::duration ran{};
  std::thread pool_thread([&] {
    LowerPoolThreadPriorityOnce();
    OfferPoolThreadTurn();
    const auto began = std::chrono::steady_clock::now();
    while (std::chrono::steady_clock::now() - began < 20 * kPoolThreadTurn) {
      yields += OfferPoolThreadTurn() ? 1 : 0;
    }
    ran = std::chrono::steady_clock::now() - began;
  });
  pool_thread.join();
  EXPECT_GE(yields, 1);
  EXPECT_LE(yields, ran / kPoolThreadTurn + 1);
}

// The pieces add up to the bytes, on a pool thread and elsewhere, at the piece boundaries.
TEST(ThreadPriority, CopiesInTurnsAreExactCopies) {
  auto check = [] {
    for (size_t size : {size_t{0}, size_t{1}, size_t{32767}, size_t{32768}, size_t{32769},
                        size_t{(1 << 20) + 7}}) {
      std::string bytes(size, '\0');
      for (size_t i = 0; i < size; ++i) {
        bytes[i] = static_cast<char>(i * 131 % 251);
      }
      EXPECT_EQ(CopyInTurns(bytes), bytes) << size;
      std::string out = "head";
      AppendInTurns(out, bytes);
      EXPECT_EQ(out, "head" + bytes) << size;
    }
  };
  check();
  std::thread pool_thread([&] {
    LowerPoolThreadPriorityOnce();
    check();
  });
  pool_thread.join();
}

}  // namespace
}  // namespace xb
