#include "rpc/response_budget.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

namespace xb::rpc {
namespace {

struct Waiting : ResponseBudget::Waiter {
  uint64_t granted = 0;
  void OnGranted(uint64_t bytes) override { granted += bytes; }
};

const void* const kA = reinterpret_cast<const void*>(0x1000);
const void* const kB = reinterpret_cast<const void*>(0x2000);

TEST(ResponseBudget, TakesWhatFitsTheWorkerAndTheConnection) {
  ResponseBudget budget({.worker_bytes = 100, .connection_bytes = 60});
  EXPECT_TRUE(budget.TryTake(kA, 40, {}));
  EXPECT_FALSE(budget.TryTake(kA, 30, {}));  // the connection's 60
  EXPECT_TRUE(budget.TryTake(kB, 60, {}));
  EXPECT_FALSE(budget.TryTake(kB, 1, {}));  // the worker's 100
  EXPECT_EQ(budget.held(), 100u);
  EXPECT_EQ(budget.held_by(kA), 40u);
  budget.Give(kA, 40);
  EXPECT_EQ(budget.held(), 60u);
  EXPECT_EQ(budget.held_by(kA), 0u);
}

TEST(ResponseBudget, OneReservationAloneAlwaysFits) {
  ResponseBudget budget({.worker_bytes = 10, .connection_bytes = 5});
  EXPECT_TRUE(budget.TryTake(kA, 1000, {}));
  EXPECT_FALSE(budget.TryTake(kB, 1, {}));
}

// Request bodies take their bytes as they arrive and never wait: a call that holds everything
// taken so far keeps growing past the bounds; beside another holder it is refused.
TEST(ResponseBudget, TakeNowLetsACallAloneGrowAndRefusesItBesideOthers) {
  ResponseBudget budget({.worker_bytes = 100, .connection_bytes = 60});
  EXPECT_TRUE(budget.TryTakeNow(kA, 50, 0));
  EXPECT_TRUE(budget.TryTakeNow(kA, 200, 50));  // alone on its worker and connection
  EXPECT_EQ(budget.held_by(kA), 250u);
  EXPECT_FALSE(budget.TryTakeNow(kB, 1, 0));  // the worker is over its bound
  budget.Give(kA, 250);
  EXPECT_TRUE(budget.TryTakeNow(kA, 40, 0));
  EXPECT_TRUE(budget.TryTakeNow(kB, 40, 0));
  EXPECT_FALSE(budget.TryTakeNow(kA, 30, 40));  // another call holds part of the worker
  EXPECT_TRUE(budget.TryTakeNow(kA, 20, 40));
}

TEST(ResponseBudget, TakeNowDoesNotOvertakeAWaitingReservation) {
  ResponseBudget budget({.worker_bytes = 100, .connection_bytes = 100});
  ASSERT_TRUE(budget.TryTake(kA, 60, {}));
  auto waiting = std::make_shared<Waiting>();
  EXPECT_FALSE(budget.TryTake(kB, 60, waiting));
  EXPECT_FALSE(budget.TryTakeNow(kB, 10, 0));  // it would fit, but a reservation waits
  budget.Give(kA, 60);
  EXPECT_EQ(waiting->granted, 60u);
  EXPECT_TRUE(budget.TryTakeNow(kA, 10, 0));
}

TEST(ResponseBudget, WaitersAreGrantedInOrderAsBytesComeBack) {
  ResponseBudget budget({.worker_bytes = 100, .connection_bytes = 100});
  ASSERT_TRUE(budget.TryTake(kA, 100, {}));
  auto first = std::make_shared<Waiting>();
  auto second = std::make_shared<Waiting>();
  EXPECT_FALSE(budget.TryTake(kB, 50, first));
  EXPECT_FALSE(budget.TryTake(kB, 60, second));
  EXPECT_FALSE(budget.TryTake(kA, 1, {}));  // no overtaking a queue, even when it would fit
  EXPECT_EQ(budget.waiting(), 2u);
  budget.Give(kA, 60);  // 40 held: the first (50) fits, the second (60) then does not
  EXPECT_EQ(first->granted, 50u);
  EXPECT_EQ(second->granted, 0u);
  budget.Give(kA, 40);  // 50 held: 60 more would pass 100
  EXPECT_EQ(second->granted, 0u);
  budget.Give(kB, 50);
  EXPECT_EQ(second->granted, 60u);
  EXPECT_EQ(budget.held(), 60u);
  EXPECT_EQ(budget.waiting(), 0u);
}

TEST(ResponseBudget, AWithdrawnOrGoneWaiterIsSkipped) {
  ResponseBudget budget({.worker_bytes = 10, .connection_bytes = 10});
  ASSERT_TRUE(budget.TryTake(kA, 10, {}));
  auto withdrawn = std::make_shared<Waiting>();
  auto gone = std::make_shared<Waiting>();
  auto last = std::make_shared<Waiting>();
  EXPECT_FALSE(budget.TryTake(kB, 5, withdrawn));
  EXPECT_FALSE(budget.TryTake(kB, 5, gone));
  EXPECT_FALSE(budget.TryTake(kB, 5, last));
  EXPECT_TRUE(budget.Withdraw(withdrawn.get()));
  gone.reset();
  budget.Give(kA, 10);
  EXPECT_EQ(withdrawn->granted, 0u);
  EXPECT_EQ(last->granted, 5u);
  EXPECT_FALSE(budget.Withdraw(last.get()));  // granted: the bytes are its to give back
}

}  // namespace
}  // namespace xb::rpc
