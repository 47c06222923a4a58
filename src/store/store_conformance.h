// The engine-neutral conformance suite of the Store interface (ARCHITECTURE.md 5: the same tests
// run on both engines). An engine instantiates it with a factory that returns a fresh, empty,
// migrated store for each test:
//
//   INSTANTIATE_TEST_SUITE_P(Sqlite, StoreConformanceTest,
//                            ::testing::Values(StoreFactory([] { return MakeTempStore(); })));
//
// The tests live in store_conformance.cc, built as an object library (xb_store_conformance) so
// that their registrations are always linked into the engine's test binary.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <ostream>

#include "store/store.h"

namespace xb::store {

// Returns a fresh, empty store; the store owns (and cleans up) whatever it needs.
using StoreFactory = std::function<std::unique_ptr<Store>()>;

// Found by argument-dependent lookup (through unique_ptr<Store>): names the parameter in failures.
void PrintTo(const StoreFactory& factory, std::ostream* os);

class StoreConformanceTest : public ::testing::TestWithParam<StoreFactory> {
 protected:
  void SetUp() override;
  void TearDown() override;

  std::unique_ptr<Store> store_;
};

}  // namespace xb::store
