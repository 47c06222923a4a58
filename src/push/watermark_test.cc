// The low watermark of spec/PUSH.md 8.4.
#include "push/watermark.h"

#include <gtest/gtest.h>

namespace xb::push {
namespace {

// verifies: PUSH-257
TEST(WatermarkTest, NoWindowMeansTheReadPosition) {
  Watermark w;
  EXPECT_EQ(w.Low(0), 0);
  EXPECT_EQ(w.Low(42), 42);
}

// verifies: PUSH-257
TEST(WatermarkTest, AWindowHoldsUntilLoadedAndEveryFirstAttemptDone) {
  Watermark w;
  const auto id = w.Open(10);
  w.AddPending(id, 2);
  EXPECT_EQ(w.Low(10), 10);
  w.FirstAttemptDone(id);
  w.FirstAttemptDone(id);
  EXPECT_EQ(w.Low(10), 10) << "pages still to load";
  w.AllPagesLoaded(id);
  EXPECT_EQ(w.Low(25), 25);
  EXPECT_EQ(w.open_windows(), 0u);
}

// verifies: PUSH-257
TEST(WatermarkTest, AWindowWithoutDeliveriesIsCompleteOnceLoaded) {
  Watermark w;
  const auto id = w.Open(3);
  EXPECT_EQ(w.Low(3), 3);
  w.AllPagesLoaded(id);
  EXPECT_EQ(w.Low(9), 9);
}

// verifies: PUSH-257
TEST(WatermarkTest, TheOldestIncompleteWindowHoldsLaterCompleteOnes) {
  Watermark w;
  const auto first = w.Open(0);
  w.AddPending(first, 1);
  w.AllPagesLoaded(first);
  const auto second = w.Open(100);
  w.AddPending(second, 1);
  w.AllPagesLoaded(second);
  const auto third = w.Open(200);
  w.AllPagesLoaded(third);
  // The second completes first: the first still holds the watermark at its start.
  w.FirstAttemptDone(second);
  EXPECT_EQ(w.Low(300), 0);
  w.FirstAttemptDone(first);
  EXPECT_EQ(w.Low(300), 300);
  EXPECT_EQ(w.open_windows(), 0u);
}

// verifies: PUSH-257
TEST(WatermarkTest, AnIncompleteLaterWindowHoldsAtItsStart) {
  Watermark w;
  const auto first = w.Open(0);
  w.AllPagesLoaded(first);
  const auto second = w.Open(50);
  w.AddPending(second, 3);
  w.AllPagesLoaded(second);
  w.FirstAttemptDone(second);
  EXPECT_EQ(w.Low(80), 50);
  // Ids stay valid after the front is forgotten.
  w.FirstAttemptDone(second);
  w.FirstAttemptDone(second);
  EXPECT_EQ(w.Low(80), 80);
  const auto third = w.Open(80);
  EXPECT_EQ(third, second + 1);
  w.AddPending(third, 1);
  EXPECT_EQ(w.Low(80), 80);
}

}  // namespace
}  // namespace xb::push
