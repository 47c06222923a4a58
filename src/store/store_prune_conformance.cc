// The pruning pass's rules (STORE.md 9.2, issue 35) on every engine: part of the conformance
// suite (store_conformance.h), one fresh store per test.
#include <algorithm>
#include <chrono>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "store/push.h"
#include "store/store_conformance.h"
#include "store/store_test_data.h"

namespace xb::store {
namespace {

using test_data::CommitLogTopic;
using test_data::GroupTopic;
using test_data::IdentityItem;
using test_data::IdentityTopic;
using test_data::Item;
using test_data::KeyPackageTopic;
using test_data::Request;
using test_data::WelcomeTopic;

#define ASSERT_STORE_RESULT(lhs, expr)                        \
  auto XB_PRUNE_CONCAT(prune_result_, __LINE__) = (expr);     \
  ASSERT_TRUE(XB_PRUNE_CONCAT(prune_result_, __LINE__).ok()); \
  lhs = std::move(XB_PRUNE_CONCAT(prune_result_, __LINE__)).value()
#define XB_PRUNE_CONCAT_INNER(a, b) a##b
#define XB_PRUNE_CONCAT(a, b) XB_PRUNE_CONCAT_INNER(a, b)

// Runs whole passes (batches of `batch` until done) and returns how many rows they deleted.
uint64_t RunPass(Store& store, uint32_t batch, bool hold_at_push_cursor = false) {
  auto ready = store.PreparePruning();
  if (!ready.ok() || !ready.value()) {
    ADD_FAILURE() << "the pass could not prepare";
    return 0;
  }
  uint64_t deleted = 0;
  PruneKey after;
  for (int i = 0; i < 100000; ++i) {
    auto r = store.PruneBatch(after, batch, hold_at_push_cursor);
    if (!r.ok()) {
      ADD_FAILURE() << "prune batch failed: " << r.error().message;
      return deleted;
    }
    EXPECT_FALSE(r.value().busy);
    deleted += r.value().deleted;
    if (r.value().done) {
      return deleted;
    }
    after = r.value().next;
  }
  ADD_FAILURE() << "the pass never ended";
  return deleted;
}

// Every stored row by id, read back with Get.
std::map<int64_t, StoredEnvelope> Snapshot(Store& store, const std::vector<EnvelopeMeta>& metas) {
  std::map<int64_t, StoredEnvelope> rows;
  for (const EnvelopeMeta& meta : metas) {
    auto got = store.Get(meta.sequence_id);
    EXPECT_TRUE(got.ok());
    if (got.ok() && got.value().has_value()) {
      rows.emplace(meta.sequence_id, *got.value());
    }
  }
  return rows;
}

// Waits until the store's clock is past `expiry_ns` (OPS-002's condition for deletion).
void WaitPast(Store& store, int64_t expiry_ns) {
  for (;;) {
    auto now = store.ClockNs();
    ASSERT_TRUE(now.ok());
    if (now.value() > expiry_ns) {
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

// One of each class under the smallest retention (1 s): group messages (a topic's older rows, a
// commit among them, and its newest), Welcomes, key packages, an identity update and a commit-log
// entry.
std::vector<EnvelopeMeta> PublishEveryKind(Store& store) {
  PublishItem commit = Item(GroupTopic(1), "commit", RetentionClass::kExempt);
  commit.is_commit_or_proposal = true;
  std::vector<PublishItem> items = {
      Item(GroupTopic(1), "g1"),
      Item(GroupTopic(1), "g2"),
      commit,
      Item(GroupTopic(1), "g3"),
      Item(WelcomeTopic(1), "w1", RetentionClass::kWelcome),
      Item(WelcomeTopic(1), "w2", RetentionClass::kWelcome),
      Item(KeyPackageTopic(1), "k1", RetentionClass::kKeyPackage),
      Item(KeyPackageTopic(1), "k2", RetentionClass::kKeyPackage),
      IdentityItem(IdentityTopic(1), "identity", 0),
      Item(CommitLogTopic(1), "commit log", RetentionClass::kExempt),
      Item(GroupTopic(2), "only row"),
  };
  std::vector<EnvelopeMeta> metas;
  for (PublishItem& item : items) {
    CommitPublishRequest request = Request({item});
    request.retention = {.group_message = 1, .welcome = 1, .key_package = 1};
    auto r = store.CommitPublish(request);
    EXPECT_TRUE(r.ok());
    if (r.ok()) {
      metas.push_back(r.value().metas[0]);
    }
  }
  return metas;
}

// verifies: OPS-001
// verifies: OPS-002
// verifies: STORE.md 9.2
TEST_P(StoreConformanceTest, PruneDeletesOnlyExpiredOlderRowsAndKeepsEveryExemptOne) {
  const std::vector<EnvelopeMeta> metas = PublishEveryKind(*store_);
  ASSERT_EQ(metas.size(), 11u);
  ASSERT_TRUE(store_->AdvanceBoundary().ok());
  const std::map<int64_t, StoredEnvelope> before = Snapshot(*store_, metas);
  ASSERT_EQ(before.size(), metas.size());
  const std::vector<std::string> topics = {GroupTopic(1),    WelcomeTopic(1),   KeyPackageTopic(1),
                                           IdentityTopic(1), CommitLogTopic(1), GroupTopic(2)};
  auto newest_before = store_->Newest(topics, true);
  ASSERT_TRUE(newest_before.ok());

  // Nothing expired yet (the clock is not past any expiry): a pass deletes nothing.
  EXPECT_EQ(RunPass(*store_, 1000), 0u);
  EXPECT_EQ(Snapshot(*store_, metas).size(), metas.size());

  int64_t last_expiry = 0;
  for (const EnvelopeMeta& meta : metas) {
    last_expiry = std::max(last_expiry, meta.expiry_ns);
  }
  WaitPast(*store_, last_expiry);
  EXPECT_EQ(RunPass(*store_, 2), 4u);  // g1, g2, w1, k1; batches of two walk the whole index
  for (int pass = 0; pass < 5; ++pass) {
    EXPECT_EQ(RunPass(*store_, 1), 0u);  // later passes find nothing more
  }
  const std::map<int64_t, StoredEnvelope> after = Snapshot(*store_, metas);
  const std::vector<size_t> pruned = {0, 1, 4, 6};
  for (size_t i = 0; i < metas.size(); ++i) {
    const bool gone = std::find(pruned.begin(), pruned.end(), i) == pruned.end();
    ASSERT_EQ(after.contains(metas[i].sequence_id), gone) << "row " << i;
    if (gone) {  // survivors byte for byte
      EXPECT_EQ(after.at(metas[i].sequence_id).payload, before.at(metas[i].sequence_id).payload);
      EXPECT_EQ(after.at(metas[i].sequence_id).meta.expiry_ns,
                before.at(metas[i].sequence_id).meta.expiry_ns);
    }
  }
  // QueryNewest's answers are unchanged; a cursor at 0 reads exactly the survivors, in order.
  auto newest_after = store_->Newest(topics, true);
  ASSERT_TRUE(newest_after.ok());
  ASSERT_EQ(newest_after.value().size(), newest_before.value().size());
  for (size_t i = 0; i < newest_after.value().size(); ++i) {
    EXPECT_EQ(newest_after.value()[i].meta.sequence_id, newest_before.value()[i].meta.sequence_id);
    EXPECT_EQ(newest_after.value()[i].payload, newest_before.value()[i].payload);
  }
  auto page = store_->Query({TopicCursor{GroupTopic(1), 0}}, 100);
  ASSERT_TRUE(page.ok());
  ASSERT_EQ(page.value().envelopes.size(), 2u);
  EXPECT_EQ(page.value().envelopes[0].meta.sequence_id, metas[2].sequence_id);  // the commit
  EXPECT_EQ(page.value().envelopes[1].meta.sequence_id, metas[3].sequence_id);  // the newest
  // The horizon reads the read database (a replica may trail a moment).
  int64_t horizon = 0;
  for (int i = 0; i < 100 && horizon != metas[6].sequence_id; ++i) {
    auto pruned_through = store_->PrunedThrough();
    ASSERT_TRUE(pruned_through.ok());
    horizon = pruned_through.value();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(horizon, metas[6].sequence_id);
}

// verifies: STORE.md 9.2
TEST_P(StoreConformanceTest, PruneStaysAtOrBelowTheClosedBoundary) {
  CommitPublishRequest request = Request({Item(GroupTopic(3), "a"), Item(GroupTopic(3), "b")});
  request.retention = {.group_message = 1, .welcome = 1, .key_package = 1};
  auto first = store_->CommitPublish(request);
  ASSERT_TRUE(first.ok());
  ASSERT_TRUE(store_->AdvanceBoundary().ok());
  // Not advanced again: PostgreSQL's stored boundary stays below c and d (SQLite's is always the
  // last commit).
  CommitPublishRequest later = Request({Item(GroupTopic(3), "c"), Item(GroupTopic(3), "d")});
  later.retention = request.retention;
  auto second = store_->CommitPublish(later);
  ASSERT_TRUE(second.ok());
  WaitPast(*store_, second.value().metas[1].expiry_ns);
  RunPass(*store_, 10);
  // The stored boundary, read without advancing it: a tail snapshot shows it.
  ASSERT_STORE_RESULT(std::unique_ptr<TailReader> reader, store_->OpenTailReader());
  ASSERT_STORE_RESULT(const int64_t boundary, reader->Begin());
  ASSERT_TRUE(reader->End().ok());
  EXPECT_GE(boundary, first.value().metas[1].sequence_id);
  for (const auto* metas : {&first.value().metas, &second.value().metas}) {
    for (const EnvelopeMeta& meta : *metas) {
      auto got = store_->Get(meta.sequence_id);
      ASSERT_TRUE(got.ok());
      const bool newest = meta.sequence_id == second.value().metas[1].sequence_id;
      const bool prunable = !newest && meta.sequence_id <= boundary;
      EXPECT_EQ(got.value().has_value(), !prunable) << meta.sequence_id;
    }
  }
}

// verifies: STORE.md 9.2 rule 4 (with push configured, nothing above the push cursor goes)
TEST_P(StoreConformanceTest, PruneHoldsAtThePushCursorOnlyWhenAsked) {
  ASSERT_NE(store_->push(), nullptr);  // both engines keep the push tables
  std::vector<PublishItem> items;
  for (int i = 0; i < 5; ++i) {
    items.push_back(Item(GroupTopic(4), "p" + std::to_string(i)));
  }
  CommitPublishRequest request = Request(items);
  request.retention = {.group_message = 1, .welcome = 1, .key_package = 1};
  auto published = store_->CommitPublish(request);
  ASSERT_TRUE(published.ok());
  const std::vector<EnvelopeMeta>& metas = published.value().metas;
  ASSERT_TRUE(store_->AdvanceBoundary().ok());
  // The dispatcher's low watermark sits after the second row.
  ASSERT_STORE_RESULT(std::unique_ptr<PushLock> lock, store_->push()->OpenPushLock());
  ASSERT_STORE_RESULT(const bool held, lock->TryAcquire());
  ASSERT_TRUE(held);
  ASSERT_STORE_RESULT(const bool moved, lock->AdvanceCursor(0, metas[1].sequence_id));
  ASSERT_TRUE(moved);
  WaitPast(*store_, metas.back().expiry_ns);

  EXPECT_EQ(RunPass(*store_, 2, /*hold_at_push_cursor=*/true), 2u);
  std::map<int64_t, StoredEnvelope> left = Snapshot(*store_, metas);
  for (size_t i = 0; i < metas.size(); ++i) {
    EXPECT_EQ(left.contains(metas[i].sequence_id), i >= 2) << "row " << i;
  }
  // Without push configured no dispatcher owes anything: all but the newest go.
  EXPECT_EQ(RunPass(*store_, 2, /*hold_at_push_cursor=*/false), 2u);
  left = Snapshot(*store_, metas);
  ASSERT_EQ(left.size(), 1u);
  EXPECT_TRUE(left.contains(metas.back().sequence_id));
}

}  // namespace
}  // namespace xb::store
