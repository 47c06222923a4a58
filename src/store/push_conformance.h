// The engine-neutral conformance suite of the push store (store/push.h, PUSH.md 3, 4, 8, 11): the
// same tests run on both engines. An engine instantiates it with the factory it gives the store
// suite (store_conformance.h):
//
//   INSTANTIATE_TEST_SUITE_P(Sqlite, PushConformanceTest,
//                            ::testing::Values(StoreFactory(&MakeTempSqliteStore)));
//
// The tests live in push_conformance.cc, built as an object library (xb_push_conformance) so that
// their registrations are always linked into the engine's test binary.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "store/push.h"
#include "store/store.h"
#include "store/store_conformance.h"

namespace xb::store {

class PushConformanceTest : public ::testing::TestWithParam<StoreFactory> {
 protected:
  void SetUp() override;
  void TearDown() override;

  // Stores the items in one publish, then moves the closed boundary over them; their ids.
  std::vector<int64_t> Publish(std::vector<PublishItem> items);
  int64_t PublishOne(PublishItem item);
  void AdvanceBoundary();
  // Register / UpdateSubscriptions that must answer kOk (a test failure otherwise).
  RecipientState Register(const PushRecipient& recipient);
  StoreResult<PushAnswer<SubscriptionChange>> Update(uint8_t id, uint8_t secret,
                                                     std::vector<SubscriptionAdd> adds,
                                                     std::vector<std::string> removes = {},
                                                     uint32_t max_topics = 100);
  SubscriptionChange MustUpdate(uint8_t id, uint8_t secret, std::vector<SubscriptionAdd> adds,
                                std::vector<std::string> removes = {}, uint32_t max_topics = 100);
  // Every delivery above `after` up to the stored boundary, as the dispatcher reads them: windows
  // of `window_size` envelopes, pages of `page` deliveries.
  std::vector<PushDelivery> AllDeliveries(int64_t after = 0, uint32_t window_size = 1024,
                                          uint32_t page = 1000);

  std::unique_ptr<Store> store_;
  PushStore* push_ = nullptr;  // store_->push()
};

}  // namespace xb::store
