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
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

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

// A store that owns what its engine needs for a test (a temporary directory, a scratch
// database) and removes it after the store closes; every call forwards to the engine.
template <typename Resource>
class OwningStore final : public Store {
 public:
  OwningStore(std::unique_ptr<Resource> resource, std::unique_ptr<Store> store)
      : resource_(std::move(resource)), store_(std::move(store)) {}
  ~OwningStore() override {
    store_.reset();  // the engine closes first
    resource_.reset();
  }

  StoreResult<int64_t> ClockNs() override { return store_->ClockNs(); }
  PushStore* push() override { return store_->push(); }
  StoreResult<std::vector<std::optional<EnvelopeMeta>>> FindDuplicates(
      const std::vector<std::pair<std::string, Hash>>& keys) override {
    return store_->FindDuplicates(keys);
  }
  StoreResult<std::vector<StoredEnvelope>> History(const std::string& topic) override {
    return store_->History(topic);
  }
  StoreResult<CommitPublishResult> CommitPublish(const CommitPublishRequest& request) override {
    return store_->CommitPublish(request);
  }
  StoreResult<QueryPage> Query(const std::vector<TopicCursor>& topics, uint32_t limit,
                               uint64_t max_payload_bytes) override {
    return store_->Query(topics, limit, max_payload_bytes);
  }
  StoreResult<QueryPage> QueryBefore(const std::string& topic, int64_t before, uint32_t limit,
                                     uint64_t max_payload_bytes) override {
    return store_->QueryBefore(topic, before, limit, max_payload_bytes);
  }
  StoreResult<std::vector<StoredEnvelope>> Newest(const std::vector<std::string>& topics,
                                                  bool with_payload) override {
    return store_->Newest(topics, with_payload);
  }
  StoreResult<std::vector<StoredEnvelope>> NewestOnPrimary(const std::vector<std::string>& topics,
                                                           bool with_payload) override {
    return store_->NewestOnPrimary(topics, with_payload);
  }
  StoreResult<std::optional<StoredEnvelope>> Get(int64_t sequence_id) override {
    return store_->Get(sequence_id);
  }
  StoreResult<BoundaryAdvance> AdvanceBoundary() override { return store_->AdvanceBoundary(); }
  StoreResult<std::unique_ptr<TailReader>> OpenTailReader() override {
    return store_->OpenTailReader();
  }
  StoreResult<std::vector<int64_t>> Heads(const std::vector<std::string>& topics) override {
    return store_->Heads(topics);
  }
  StoreResult<std::vector<std::optional<std::string>>> InboxIds(
      const std::vector<IdentifierKey>& identifiers) override {
    return store_->InboxIds(identifiers);
  }
  StoreResult<std::vector<std::vector<StoredEnvelope>>> CatchUp(
      const std::vector<CatchUpRange>& ranges, uint32_t per_range, uint64_t byte_budget) override {
    return store_->CatchUp(ranges, per_range, byte_budget);
  }
  void SetCommitListener(std::function<void(int64_t last_id)> listener,
                         std::function<bool()> urgent = nullptr) override {
    store_->SetCommitListener(std::move(listener), std::move(urgent));
  }
  StoreResult<bool> PreparePruning() override { return store_->PreparePruning(); }
  void CancelPreparePruning() override { store_->CancelPreparePruning(); }
  StoreResult<PruneBatchResult> PruneBatch(const PruneKey& after, uint32_t limit,
                                           bool hold_at_push_cursor) override {
    return store_->PruneBatch(after, limit, hold_at_push_cursor);
  }
  StoreResult<int64_t> PrunedThrough() override { return store_->PrunedThrough(); }

 private:
  std::unique_ptr<Resource> resource_;
  std::unique_ptr<Store> store_;
};

}  // namespace xb::store
