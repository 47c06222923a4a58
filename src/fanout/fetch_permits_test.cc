#include "fanout/fetch_permits.h"

#include <gtest/gtest.h>

namespace xb::fanout {
namespace {

TEST(FetchPermitsTest, GrantsUpToTheLimitThenQueuesInOrder) {
  FetchPermits permits(2);
  int woken_b = 0;
  int woken_c = 0;
  auto a = permits.Acquire([] {});
  auto a2 = permits.Acquire([] {});
  auto b = permits.Acquire([&] { ++woken_b; });
  auto c = permits.Acquire([&] { ++woken_c; });
  EXPECT_TRUE(a->granted());
  EXPECT_TRUE(a2->granted());
  EXPECT_FALSE(b->granted());
  EXPECT_FALSE(c->granted());
  permits.Release(a);  // hands over to the oldest waiter
  EXPECT_TRUE(b->granted());
  EXPECT_EQ(woken_b, 1);
  EXPECT_FALSE(c->granted());
  EXPECT_EQ(woken_c, 0);
}

TEST(FetchPermitsTest, AWithdrawnWaiterIsSkipped) {
  FetchPermits permits(1);
  int woken_c = 0;
  auto a = permits.Acquire([] {});
  auto b = permits.Acquire([] {});
  auto c = permits.Acquire([&] { ++woken_c; });
  permits.Release(b);  // withdrawn while waiting
  permits.Release(a);
  EXPECT_FALSE(b->granted());
  EXPECT_TRUE(c->granted());
  EXPECT_EQ(woken_c, 1);
  permits.Release(c);
  auto d = permits.Acquire([] {});
  EXPECT_TRUE(d->granted());  // the permit came back
}

}  // namespace
}  // namespace xb::fanout
