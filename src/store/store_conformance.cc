#include "store/store_conformance.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <variant>
#include <vector>

#include "store/store_test_data.h"

namespace xb::store {

void StoreConformanceTest::SetUp() {
  store_ = GetParam()();
  ASSERT_NE(store_, nullptr);
}

void StoreConformanceTest::TearDown() { store_.reset(); }

void PrintTo(const StoreFactory& /*factory*/, std::ostream* os) { *os << "a store factory"; }

namespace {

// ---- Test data. Topics follow TOPIC-001: a kind byte, then the identifier. ----

using test_data::CommitLogTopic;
using test_data::GroupTopic;
using test_data::HashOf;
using test_data::IdentityItem;
using test_data::IdentityTopic;
using test_data::Item;
using test_data::KeyPackageTopic;
using test_data::Request;
using test_data::Topic;
using test_data::WelcomeTopic;

// ---- Result helpers. ----

template <typename T>
bool IsOk(const StoreResult<T>& result) {
  return result.ok();
}

template <typename T>
std::string Describe(const StoreResult<T>& result) {
  if (!result.ok()) {
    return "store error kind " + std::to_string(static_cast<int>(result.error().kind)) + ": " +
           result.error().message;
  }
  return "ok";
}

template <typename T>
StoreError ErrorOf(const StoreResult<T>& result) {
  if (!result.ok()) {
    return result.error();
  }
  StoreError none;
  none.message = "no error";
  return none;
}

#define XB_STORE_CONCAT_INNER(a, b) a##b
#define XB_STORE_CONCAT(a, b) XB_STORE_CONCAT_INNER(a, b)
#define ASSERT_STORE_OK(lhs, expr)                            \
  auto XB_STORE_CONCAT(store_result_, __LINE__) = (expr);     \
  ASSERT_TRUE(IsOk(XB_STORE_CONCAT(store_result_, __LINE__))) \
      << Describe(XB_STORE_CONCAT(store_result_, __LINE__));  \
  lhs = std::move(XB_STORE_CONCAT(store_result_, __LINE__)).value()

void ExpectMetaEq(const EnvelopeMeta& a, const EnvelopeMeta& b) {
  EXPECT_EQ(a.sequence_id, b.sequence_id);
  EXPECT_EQ(a.server_ns, b.server_ns);
  EXPECT_EQ(a.message_hash, b.message_hash);
  EXPECT_EQ(a.topic, b.topic);
  EXPECT_EQ(a.expiry_ns, b.expiry_ns);
  EXPECT_EQ(a.is_commit_or_proposal, b.is_commit_or_proposal);
}

std::vector<int64_t> Ids(const std::vector<StoredEnvelope>& envelopes) {
  std::vector<int64_t> ids;
  for (const StoredEnvelope& e : envelopes) {
    ids.push_back(e.meta.sequence_id);
  }
  return ids;
}

// ---- Ordering and ids. ----

TEST_P(StoreConformanceTest, AssignsAscendingIdsInItemOrder) {
  // verifies: API-286
  // verifies: API-287
  // verifies: API-212
  ASSERT_STORE_OK(CommitPublishResult result,
                  store_->CommitPublish(Request({
                      Item(GroupTopic(1), "m1"),
                      Item(WelcomeTopic(1), "w1", RetentionClass::kWelcome),
                      Item(CommitLogTopic(1), "c1", RetentionClass::kExempt),
                  })));
  ASSERT_EQ(result.metas.size(), 3u);
  ASSERT_EQ(result.duplicate, std::vector<bool>({false, false, false}));
  EXPECT_GE(result.metas[0].sequence_id, 1);
  EXPECT_LT(result.metas[0].sequence_id, result.metas[1].sequence_id);
  EXPECT_LT(result.metas[1].sequence_id, result.metas[2].sequence_id);
  // server_ns: read once, identical for every envelope of the publish.
  EXPECT_GT(result.metas[0].server_ns, 0);
  EXPECT_EQ(result.metas[0].server_ns, result.metas[1].server_ns);
  EXPECT_EQ(result.metas[1].server_ns, result.metas[2].server_ns);
  EXPECT_EQ(result.metas[0].topic, GroupTopic(1));
  EXPECT_EQ(result.metas[1].topic, WelcomeTopic(1));
  EXPECT_EQ(result.metas[2].message_hash, HashOf("c1"));
  EXPECT_FALSE(result.metas[0].is_commit_or_proposal);
}

TEST_P(StoreConformanceTest, LaterPublishGetsGreaterIdsOnAnyTopic) {
  // verifies: API-289
  // verifies: API-287
  ASSERT_STORE_OK(
      CommitPublishResult first,
      store_->CommitPublish(Request({Item(GroupTopic(1), "a"), Item(GroupTopic(2), "b")})));
  ASSERT_STORE_OK(CommitPublishResult second,
                  store_->CommitPublish(Request({Item(GroupTopic(3), "c")})));
  ASSERT_STORE_OK(CommitPublishResult third,
                  store_->CommitPublish(Request({Item(GroupTopic(1), "d")})));
  EXPECT_GT(second.metas[0].sequence_id, first.metas[1].sequence_id);
  EXPECT_GT(third.metas[0].sequence_id, second.metas[0].sequence_id);
}

TEST_P(StoreConformanceTest, GetReturnsTheStoredEnvelopeOrNothing) {
  // verifies: API-288
  ASSERT_STORE_OK(CommitPublishResult result,
                  store_->CommitPublish(Request({Item(GroupTopic(1), "payload-1")})));
  const EnvelopeMeta& meta = result.metas[0];

  ASSERT_STORE_OK(std::optional<StoredEnvelope> hit, store_->Get(meta.sequence_id));
  ASSERT_TRUE(hit.has_value());
  ExpectMetaEq(hit->meta, meta);
  EXPECT_EQ(hit->payload, "payload-1");

  ASSERT_STORE_OK(std::optional<StoredEnvelope> miss, store_->Get(meta.sequence_id + 1000));
  EXPECT_FALSE(miss.has_value());
  ASSERT_STORE_OK(std::optional<StoredEnvelope> zero, store_->Get(0));
  EXPECT_FALSE(zero.has_value());
  ASSERT_STORE_OK(std::optional<StoredEnvelope> max, store_->Get(kMaxSequenceId));
  EXPECT_FALSE(max.has_value());
}

// ---- Atomicity and admission. ----

TEST_P(StoreConformanceTest, OneFailingItemStoresNothingAndNamesTheLowestIndex) {
  // verifies: API-220
  // verifies: API-223
  std::vector<PublishItem> items = {Item(GroupTopic(1), "ok-0"), Item(GroupTopic(2), "bad-1"),
                                    Item(GroupTopic(1), "ok-2"), Item(GroupTopic(3), "bad-3")};
  items[1].pending_failure = InvalidArgument("first failure");
  items[3].pending_failure = InvalidArgument("second failure");
  auto result = store_->CommitPublish(Request(items));
  ASSERT_FALSE(IsOk(result));
  const StoreError error = ErrorOf(result);
  EXPECT_EQ(error.kind, ErrorKind::kAdmission);
  EXPECT_EQ(error.item, 1u);
  EXPECT_EQ(error.admission.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(error.admission.message(), "first failure");

  ASSERT_STORE_OK(auto found, store_->FindDuplicates({{GroupTopic(1), HashOf("ok-0")},
                                                      {GroupTopic(1), HashOf("ok-2")},
                                                      {GroupTopic(2), HashOf("bad-1")}}));
  for (const auto& meta : found) {
    EXPECT_FALSE(meta.has_value());
  }
  ASSERT_STORE_OK(QueryPage page, store_->Query({{GroupTopic(1), 0}, {GroupTopic(2), 0}}, 100));
  EXPECT_TRUE(page.envelopes.empty());
  ASSERT_STORE_OK(auto newest, store_->Newest({GroupTopic(1)}, false));
  EXPECT_TRUE(newest.empty());
}

// ---- Idempotency. ----

TEST_P(StoreConformanceTest, DuplicateAcrossRequestsReturnsTheStoredMeta) {
  // verifies: API-222
  // verifies: API-224
  ASSERT_STORE_OK(CommitPublishResult first,
                  store_->CommitPublish(Request({Item(GroupTopic(1), "same")})));
  ASSERT_STORE_OK(CommitPublishResult retry,
                  store_->CommitPublish(Request({Item(GroupTopic(1), "same")})));
  ASSERT_EQ(retry.duplicate, std::vector<bool>({true}));
  ExpectMetaEq(retry.metas[0], first.metas[0]);

  ASSERT_STORE_OK(QueryPage page, store_->Query({{GroupTopic(1), 0}}, 100));
  EXPECT_EQ(Ids(page.envelopes), std::vector<int64_t>({first.metas[0].sequence_id}));
}

TEST_P(StoreConformanceTest, RequestMixingDuplicatesAndNewItems) {
  // verifies: API-221
  // verifies: API-222
  ASSERT_STORE_OK(
      CommitPublishResult first,
      store_->CommitPublish(Request({Item(GroupTopic(1), "x"), Item(GroupTopic(2), "y")})));
  ASSERT_STORE_OK(
      CommitPublishResult mixed,
      store_->CommitPublish(Request(
          {Item(GroupTopic(2), "y"), Item(GroupTopic(1), "new"), Item(GroupTopic(1), "x")})));
  ASSERT_EQ(mixed.duplicate, std::vector<bool>({true, false, true}));
  ExpectMetaEq(mixed.metas[0], first.metas[1]);
  ExpectMetaEq(mixed.metas[2], first.metas[0]);
  EXPECT_GT(mixed.metas[1].sequence_id, first.metas[1].sequence_id);
  EXPECT_NE(mixed.metas[1].server_ns, 0);
}

TEST_P(StoreConformanceTest, PendingFailureOnAStoredDuplicateSucceeds) {
  // verifies: API-222
  ASSERT_STORE_OK(CommitPublishResult first,
                  store_->CommitPublish(
                      Request({Item(KeyPackageTopic(1), "kp", RetentionClass::kKeyPackage)})));
  // A retry whose validation now fails (say the key package's lifetime ended) is still a
  // duplicate: no admission check beyond parsing applies to it.
  PublishItem retry = Item(KeyPackageTopic(1), "kp", RetentionClass::kKeyPackage);
  retry.pending_failure = InvalidArgument("key package expired");
  ASSERT_STORE_OK(CommitPublishResult second, store_->CommitPublish(Request({retry})));
  ASSERT_EQ(second.duplicate, std::vector<bool>({true}));
  ExpectMetaEq(second.metas[0], first.metas[0]);
}

// ---- Identity updates. ----

TEST_P(StoreConformanceTest, IdentityHeadThatMovedIsStaleHistory) {
  // verifies: API-232
  const std::string inbox = IdentityTopic(1);
  ASSERT_STORE_OK(CommitPublishResult first,
                  store_->CommitPublish(Request({IdentityItem(inbox, "u1", /*head=*/0)})));

  // Validated against the empty history, but u1 committed meanwhile.
  auto stale = store_->CommitPublish(
      Request({Item(GroupTopic(1), "g"), IdentityItem(inbox, "u2", /*head=*/0)}));
  ASSERT_FALSE(IsOk(stale));
  EXPECT_EQ(ErrorOf(stale).kind, ErrorKind::kStaleHistory);
  ASSERT_STORE_OK(auto found,
                  store_->FindDuplicates({{GroupTopic(1), HashOf("g")}, {inbox, HashOf("u2")}}));
  EXPECT_FALSE(found[0].has_value());
  EXPECT_FALSE(found[1].has_value());

  ASSERT_STORE_OK(
      CommitPublishResult second,
      store_->CommitPublish(Request({IdentityItem(inbox, "u2", first.metas[0].sequence_id)})));
  EXPECT_GT(second.metas[0].sequence_id, first.metas[0].sequence_id);
  EXPECT_EQ(second.metas[0].expiry_ns, 0);

  ASSERT_STORE_OK(std::vector<StoredEnvelope> history, store_->History(inbox));
  EXPECT_EQ(Ids(history),
            std::vector<int64_t>({first.metas[0].sequence_id, second.metas[0].sequence_id}));
  EXPECT_EQ(history[1].payload, "u2");
}

TEST_P(StoreConformanceTest, DuplicateIdentityUpdateSkipsTheHeadCheck) {
  // verifies: API-222
  // verifies: API-232
  const std::string inbox = IdentityTopic(2);
  ASSERT_STORE_OK(CommitPublishResult first,
                  store_->CommitPublish(Request({IdentityItem(inbox, "u1", 0)})));
  ASSERT_STORE_OK(CommitPublishResult retry,
                  store_->CommitPublish(Request({IdentityItem(inbox, "u1", 0)})));
  ASSERT_EQ(retry.duplicate, std::vector<bool>({true}));
  ExpectMetaEq(retry.metas[0], first.metas[0]);
}

TEST_P(StoreConformanceTest, IdentityCapRejectsOnlyNewUpdates) {
  // verifies: API-234
  const std::string inbox = IdentityTopic(3);
  CommitPublishRequest one = Request({IdentityItem(inbox, "u1", 0)});
  one.max_identity_entries = 2;
  ASSERT_STORE_OK(CommitPublishResult r1, store_->CommitPublish(one));
  CommitPublishRequest two = Request({IdentityItem(inbox, "u2", r1.metas[0].sequence_id)});
  two.max_identity_entries = 2;
  ASSERT_STORE_OK(CommitPublishResult r2, store_->CommitPublish(two));

  CommitPublishRequest three = Request({IdentityItem(inbox, "u2", r1.metas[0].sequence_id),
                                        IdentityItem(inbox, "u3", r2.metas[0].sequence_id)});
  three.max_identity_entries = 2;
  auto refused = store_->CommitPublish(three);
  ASSERT_FALSE(IsOk(refused));
  const StoreError error = ErrorOf(refused);
  EXPECT_EQ(error.kind, ErrorKind::kAdmission);
  EXPECT_EQ(error.item, 1u);
  EXPECT_EQ(error.admission.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(error.admission.message(), "identity update rejected: too many entries");

  // A duplicate at the cap still succeeds.
  CommitPublishRequest retry = Request({IdentityItem(inbox, "u2", r1.metas[0].sequence_id)});
  retry.max_identity_entries = 2;
  ASSERT_STORE_OK(CommitPublishResult again, store_->CommitPublish(retry));
  EXPECT_EQ(again.duplicate, std::vector<bool>({true}));
  ASSERT_STORE_OK(std::vector<StoredEnvelope> history, store_->History(inbox));
  EXPECT_EQ(history.size(), 2u);
}

TEST_P(StoreConformanceTest, InboxIdsFollowTheLatestLiveAssociation) {
  // verifies: API-270 (STORE.md 2.2 projection, STORE.md 7 GetInboxIds)
  const std::string a = IdentityTopic(20);
  const std::string b = IdentityTopic(21);
  auto with = [](PublishItem item, std::vector<IdentifierChange> changes) {
    item.identity_changes = std::move(changes);
    return item;
  };
  const IdentifierKey eth{"0xabc", 1};
  const IdentifierKey passkey{"04aa", 2};
  ASSERT_STORE_OK(auto none, store_->InboxIds({eth, passkey}));
  EXPECT_EQ(none, (std::vector<std::optional<std::string>>{std::nullopt, std::nullopt}));

  ASSERT_STORE_OK(CommitPublishResult r1,
                  store_->CommitPublish(Request(
                      {with(IdentityItem(a, "a1", 0), {{"0xabc", 1, true}, {"04aa", 2, true}})})));
  ASSERT_STORE_OK(
      CommitPublishResult r2,
      store_->CommitPublish(Request({with(IdentityItem(b, "b1", 0), {{"0xabc", 1, true}})})));
  // The newest live association wins; kinds are separate keys; repeats are answered each time.
  ASSERT_STORE_OK(auto newest, store_->InboxIds({eth, passkey, eth, {"0xabc", 2}, {"0xdef", 1}}));
  EXPECT_EQ(newest, (std::vector<std::optional<std::string>>{b.substr(1), a.substr(1), b.substr(1),
                                                             std::nullopt, std::nullopt}));
  // Revoking the newest association exposes the older live one.
  ASSERT_STORE_OK(CommitPublishResult r3,
                  store_->CommitPublish(Request({with(
                      IdentityItem(b, "b2", r2.metas[0].sequence_id), {{"0xabc", 1, false}})})));
  ASSERT_STORE_OK(auto older, store_->InboxIds({eth}));
  EXPECT_EQ(older, (std::vector<std::optional<std::string>>{a.substr(1)}));
  // And revoking that one leaves none.
  ASSERT_STORE_OK(CommitPublishResult r4,
                  store_->CommitPublish(Request({with(
                      IdentityItem(a, "a2", r1.metas[0].sequence_id), {{"0xabc", 1, false}})})));
  ASSERT_STORE_OK(auto gone, store_->InboxIds({eth, passkey}));
  EXPECT_EQ(gone, (std::vector<std::optional<std::string>>{std::nullopt, a.substr(1)}));
  EXPECT_GT(r4.metas[0].sequence_id, r3.metas[0].sequence_id);
  ASSERT_STORE_OK(auto empty, store_->InboxIds({}));
  EXPECT_TRUE(empty.empty());
}

// ---- Expiry. ----

TEST_P(StoreConformanceTest, ExpiryFollowsTheRetentionClassAndExemptIsZero) {
  // verifies: API-212
  // verifies: OPS-001
  PublishItem commit = Item(GroupTopic(1), "commit", RetentionClass::kExempt);
  commit.is_commit_or_proposal = true;
  CommitPublishRequest request = Request({
      Item(GroupTopic(1), "message", RetentionClass::kGroupMessage),
      commit,
      Item(WelcomeTopic(1), "welcome", RetentionClass::kWelcome),
      Item(KeyPackageTopic(1), "key package", RetentionClass::kKeyPackage),
      IdentityItem(IdentityTopic(1), "identity", 0),
      Item(CommitLogTopic(1), "commit log", RetentionClass::kExempt),
  });
  request.retention = {.group_message = 100, .welcome = 200, .key_package = 300};
  ASSERT_STORE_OK(CommitPublishResult result, store_->CommitPublish(request));
  const int64_t server_ns = result.metas[0].server_ns;
  EXPECT_EQ(result.metas[0].expiry_ns, server_ns + 100 * int64_t{1000000000});
  EXPECT_EQ(result.metas[1].expiry_ns, 0);
  EXPECT_TRUE(result.metas[1].is_commit_or_proposal);
  EXPECT_EQ(result.metas[2].expiry_ns, server_ns + 200 * int64_t{1000000000});
  EXPECT_EQ(result.metas[3].expiry_ns, server_ns + 300 * int64_t{1000000000});
  EXPECT_EQ(result.metas[4].expiry_ns, 0);
  EXPECT_EQ(result.metas[5].expiry_ns, 0);

  // Reads report the same values (exempt rows as 0).
  for (const EnvelopeMeta& meta : result.metas) {
    ASSERT_STORE_OK(std::optional<StoredEnvelope> got, store_->Get(meta.sequence_id));
    ASSERT_TRUE(got.has_value());
    ExpectMetaEq(got->meta, meta);
  }
}

TEST_P(StoreConformanceTest, ExpiryOverflowFailsAndStoresNothing) {
  // verifies: OPS-020
  // seconds x 10^9 still fits int64, but adding today's clock does not.
  CommitPublishRequest request = Request(
      {Item(WelcomeTopic(1), "fits", RetentionClass::kWelcome), Item(GroupTopic(1), "overflows")});
  request.retention.group_message =
      static_cast<uint64_t>(std::numeric_limits<int64_t>::max() / 1000000000);
  auto result = store_->CommitPublish(request);
  ASSERT_FALSE(IsOk(result));
  EXPECT_EQ(ErrorOf(result).kind, ErrorKind::kOverflow);

  // seconds x 10^9 itself does not fit.
  request.retention.group_message = std::numeric_limits<uint64_t>::max();
  result = store_->CommitPublish(request);
  ASSERT_FALSE(IsOk(result));
  EXPECT_EQ(ErrorOf(result).kind, ErrorKind::kOverflow);

  ASSERT_STORE_OK(auto found, store_->FindDuplicates({{WelcomeTopic(1), HashOf("fits")},
                                                      {GroupTopic(1), HashOf("overflows")}}));
  EXPECT_FALSE(found[0].has_value());
  EXPECT_FALSE(found[1].has_value());
}

TEST_P(StoreConformanceTest, LargestRetentionThatFitsIsStoredExactly) {
  // verifies: OPS-020
  // verifies: API-212
  ASSERT_STORE_OK(int64_t now, store_->ClockNs());
  const uint64_t seconds =
      static_cast<uint64_t>((std::numeric_limits<int64_t>::max() - now) / 1000000000 - 3600);
  CommitPublishRequest request = Request({Item(GroupTopic(1), "long-lived")});
  request.retention.group_message = seconds;
  ASSERT_STORE_OK(CommitPublishResult result, store_->CommitPublish(request));
  EXPECT_EQ(result.metas[0].expiry_ns,
            result.metas[0].server_ns + static_cast<int64_t>(seconds) * 1000000000);
}

TEST_P(StoreConformanceTest, ExemptItemsIgnoreEvenOverflowingRetention) {
  // verifies: OPS-001
  // verifies: OPS-020
  PublishItem commit = Item(GroupTopic(1), "commit", RetentionClass::kExempt);
  commit.is_commit_or_proposal = true;
  CommitPublishRequest request =
      Request({commit, Item(CommitLogTopic(1), "log", RetentionClass::kExempt)});
  request.retention = {.group_message = std::numeric_limits<uint64_t>::max(),
                       .welcome = std::numeric_limits<uint64_t>::max(),
                       .key_package = std::numeric_limits<uint64_t>::max()};
  ASSERT_STORE_OK(CommitPublishResult result, store_->CommitPublish(request));
  EXPECT_EQ(result.metas[0].expiry_ns, 0);
  EXPECT_EQ(result.metas[1].expiry_ns, 0);
}

// ---- Query (API-240). ----

// Checks API-240 on one page against the full per-topic id lists.
void ExpectValidPage(const QueryPage& page, const std::vector<TopicCursor>& cursors,
                     const std::map<std::string, std::vector<int64_t>>& stored, uint32_t limit) {
  std::vector<int64_t> eligible;
  std::map<std::string, std::vector<int64_t>> eligible_by_topic;
  for (const TopicCursor& cursor : cursors) {
    auto it = stored.find(cursor.topic);
    if (it == stored.end()) {
      continue;
    }
    for (int64_t id : it->second) {
      if (id > cursor.after) {
        eligible.push_back(id);
        eligible_by_topic[cursor.topic].push_back(id);
      }
    }
  }
  std::sort(eligible.begin(), eligible.end());
  const size_t expected_size = std::min<size_t>(eligible.size(), limit);
  ASSERT_EQ(page.envelopes.size(), expected_size);
  EXPECT_EQ(page.has_more, eligible.size() > limit);
  std::map<std::string, std::vector<int64_t>> page_by_topic;
  for (size_t i = 0; i < page.envelopes.size(); ++i) {
    if (i > 0) {
      EXPECT_LT(page.envelopes[i - 1].meta.sequence_id, page.envelopes[i].meta.sequence_id);
    }
    page_by_topic[page.envelopes[i].meta.topic].push_back(page.envelopes[i].meta.sequence_id);
  }
  for (const auto& [topic, ids] : page_by_topic) {
    const std::vector<int64_t>& all = eligible_by_topic[topic];
    ASSERT_LE(ids.size(), all.size());
    EXPECT_TRUE(std::equal(ids.begin(), ids.end(), all.begin())) << "not a prefix of its topic";
  }
  // STORE.md 7: both engines keep the lowest `limit` candidates overall.
  EXPECT_EQ(Ids(page.envelopes),
            std::vector<int64_t>(eligible.begin(), eligible.begin() + expected_size));
}

TEST_P(StoreConformanceTest, QueryPagesLikeTheWorkedExample) {
  // verifies: API-240
  // verifies: API-202
  // API.md 4.2: topic A holds ids a1 < b1 < b2 < a2 < a3 with B's ids in between.
  const std::string a = GroupTopic(1);
  const std::string b = CommitLogTopic(1);
  std::vector<std::pair<std::string, std::string>> order = {
      {a, "A101"}, {b, "B102"}, {b, "B103"}, {a, "A104"}, {a, "A110"}};
  std::map<std::string, int64_t> id_of;
  for (const auto& [topic, payload] : order) {
    ASSERT_STORE_OK(
        CommitPublishResult r,
        store_->CommitPublish(Request({Item(topic, payload, RetentionClass::kExempt)})));
    id_of[payload] = r.metas[0].sequence_id;
  }

  ASSERT_STORE_OK(QueryPage page1, store_->Query({{a, 0}, {b, 0}}, 3));
  EXPECT_TRUE(page1.has_more);
  EXPECT_EQ(Ids(page1.envelopes),
            std::vector<int64_t>({id_of["A101"], id_of["B102"], id_of["B103"]}));
  EXPECT_EQ(page1.envelopes[0].payload, "A101");
  EXPECT_EQ(page1.envelopes[0].meta.topic, a);
  EXPECT_EQ(page1.envelopes[2].meta.topic, b);

  // The client moves each topic's cursor to the highest id returned for it.
  ASSERT_STORE_OK(QueryPage page2, store_->Query({{a, id_of["A101"]}, {b, id_of["B103"]}}, 3));
  EXPECT_FALSE(page2.has_more);
  EXPECT_EQ(Ids(page2.envelopes), std::vector<int64_t>({id_of["A104"], id_of["A110"]}));
  EXPECT_EQ(page2.envelopes[1].payload, "A110");
}

TEST_P(StoreConformanceTest, QueryPagesArePerTopicPrefixesForEveryLimit) {
  // verifies: API-240
  const std::vector<std::string> topics = {GroupTopic(1), GroupTopic(2), GroupTopic(3),
                                           GroupTopic(4)};
  const std::vector<int> pattern = {0, 1, 1, 2, 0, 3, 3, 3, 1, 0, 2, 0, 1};
  std::map<std::string, std::vector<int64_t>> stored;
  for (size_t i = 0; i < pattern.size(); ++i) {
    const std::string& topic = topics[pattern[i]];
    ASSERT_STORE_OK(CommitPublishResult r,
                    store_->CommitPublish(Request({Item(topic, "p" + std::to_string(i))})));
    stored[topic].push_back(r.metas[0].sequence_id);
  }
  for (uint32_t limit = 1; limit <= pattern.size() + 1; ++limit) {
    SCOPED_TRACE("limit " + std::to_string(limit));
    std::vector<TopicCursor> cursors;
    for (const std::string& topic : topics) {
      cursors.push_back({topic, 0});
    }
    ASSERT_STORE_OK(QueryPage page, store_->Query(cursors, limit));
    ExpectValidPage(page, cursors, stored, limit);

    // Cursors in the middle of topics, and one above its topic's newest id.
    cursors[0].after = stored[topics[0]][1];
    cursors[1].after = stored[topics[1]][0];
    cursors[3].after = stored[topics[3]].back() + 1000;
    ASSERT_STORE_OK(QueryPage later, store_->Query(cursors, limit));
    ExpectValidPage(later, cursors, stored, limit);
  }
}

TEST_P(StoreConformanceTest, QueryPagingReturnsEveryRowOnce) {
  // verifies: API-240
  const std::vector<std::string> topics = {GroupTopic(1), GroupTopic(2), GroupTopic(3)};
  std::set<int64_t> stored_ids;
  for (int i = 0; i < 20; ++i) {
    ASSERT_STORE_OK(
        CommitPublishResult r,
        store_->CommitPublish(Request({Item(topics[i % 3], "p" + std::to_string(i)),
                                       Item(topics[(i + 1) % 3], "q" + std::to_string(i))})));
    stored_ids.insert(r.metas[0].sequence_id);
    stored_ids.insert(r.metas[1].sequence_id);
  }
  std::vector<TopicCursor> cursors;
  for (const std::string& topic : topics) {
    cursors.push_back({topic, 0});
  }
  std::vector<int64_t> seen;
  for (int pages = 0; pages < 100; ++pages) {
    ASSERT_STORE_OK(QueryPage page, store_->Query(cursors, 7));
    ASSERT_FALSE(page.envelopes.empty());  // non-empty while anything is eligible
    for (const StoredEnvelope& e : page.envelopes) {
      seen.push_back(e.meta.sequence_id);
      for (TopicCursor& cursor : cursors) {
        if (cursor.topic == e.meta.topic) {
          cursor.after = std::max(cursor.after, e.meta.sequence_id);
        }
      }
    }
    if (!page.has_more) {
      break;
    }
  }
  std::vector<int64_t> sorted = seen;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(std::adjacent_find(sorted.begin(), sorted.end()), sorted.end()) << "a row came twice";
  EXPECT_EQ(std::set<int64_t>(seen.begin(), seen.end()), stored_ids);
}

TEST_P(StoreConformanceTest, QueryWithNothingEligibleIsEmpty) {
  // verifies: API-240
  ASSERT_STORE_OK(QueryPage empty, store_->Query({{GroupTopic(1), 0}}, 10));
  EXPECT_TRUE(empty.envelopes.empty());
  EXPECT_FALSE(empty.has_more);

  ASSERT_STORE_OK(CommitPublishResult r,
                  store_->CommitPublish(Request({Item(GroupTopic(1), "only")})));
  ASSERT_STORE_OK(QueryPage above, store_->Query({{GroupTopic(1), r.metas[0].sequence_id}}, 10));
  EXPECT_TRUE(above.envelopes.empty());
  EXPECT_FALSE(above.has_more);

  ASSERT_STORE_OK(QueryPage exact, store_->Query({{GroupTopic(1), 0}}, 1));
  EXPECT_EQ(exact.envelopes.size(), 1u);
  EXPECT_FALSE(exact.has_more);  // eligible == limit is not "more"
}

// Regression (issue 28): a Query page was read whole however large its payloads, to be refused
// OUT_OF_RANGE afterwards (1,000 envelopes of 1 MiB: 1 GiB read per request). Payloads are read
// in id order until their total passes the bound; the page is then over_budget.
TEST_P(StoreConformanceTest, QueryStopsReadingOncePayloadsPassTheBound) {
  std::vector<PublishItem> items;
  for (int i = 0; i < 5; ++i) {
    items.push_back(Item(GroupTopic(1), std::string(1000, static_cast<char>('a' + i))));
  }
  ASSERT_STORE_OK(CommitPublishResult r, store_->CommitPublish(Request(std::move(items))));
  ASSERT_STORE_OK(QueryPage capped, store_->Query({{GroupTopic(1), 0}}, 10, 2500));
  EXPECT_TRUE(capped.over_budget);
  ASSERT_EQ(capped.envelopes.size(), 3u);  // the third passes 2500; nothing after it is read
  EXPECT_EQ(capped.envelopes[2].meta.sequence_id, r.metas[2].sequence_id);
  ASSERT_STORE_OK(QueryPage exact, store_->Query({{GroupTopic(1), 0}}, 10, 5000));
  EXPECT_FALSE(exact.over_budget);
  EXPECT_EQ(exact.envelopes.size(), 5u);
  ASSERT_STORE_OK(QueryPage limited, store_->Query({{GroupTopic(1), 0}}, 2, 1500));
  EXPECT_TRUE(limited.over_budget);  // two rows, 2000 bytes: the page passes 1500
  EXPECT_EQ(limited.envelopes.size(), 2u);
  EXPECT_TRUE(limited.has_more);
}

// ---- QueryBefore (issue 33 G1: one topic below a cursor, newest first). ----

// The ids of `ids` below `before` (0: all), highest first.
std::vector<int64_t> Below(const std::vector<int64_t>& ids, int64_t before) {
  std::vector<int64_t> out;
  for (int64_t id : ids) {
    if (before == 0 || id < before) {
      out.push_back(id);
    }
  }
  std::sort(out.rbegin(), out.rend());
  return out;
}

TEST_P(StoreConformanceTest, QueryBeforeReadsOneTopicNewestFirstBelowTheCursor) {
  // verifies: issue 33 G1
  // Topic a's rows interleaved with other topics' (another kind with the same identifier too).
  const std::string a = GroupTopic(1);
  const std::vector<std::pair<std::string, RetentionClass>> others = {
      {GroupTopic(2), RetentionClass::kGroupMessage},
      {WelcomeTopic(1), RetentionClass::kWelcome},
      {CommitLogTopic(1), RetentionClass::kExempt}};
  std::vector<int64_t> a_ids;
  std::vector<int64_t> other_ids;
  for (int i = 0; i < 6; ++i) {
    const auto& [other, retention] = others[i % 3];
    ASSERT_STORE_OK(CommitPublishResult r,
                    store_->CommitPublish(Request({Item(other, "o" + std::to_string(i), retention),
                                                   Item(a, "a" + std::to_string(i))})));
    other_ids.push_back(r.metas[0].sequence_id);
    a_ids.push_back(r.metas[1].sequence_id);
  }
  // before = 0: from the newest; the whole topic fits, so nothing is older.
  ASSERT_STORE_OK(QueryPage all, store_->QueryBefore(a, 0, 10, UINT64_MAX));
  EXPECT_EQ(Ids(all.envelopes), Below(a_ids, 0));
  EXPECT_FALSE(all.has_more);
  EXPECT_FALSE(all.over_budget);
  for (const StoredEnvelope& e : all.envelopes) {
    EXPECT_EQ(e.meta.topic, a);  // other topics never appear
  }
  EXPECT_EQ(all.envelopes.front().payload, "a5");
  EXPECT_EQ(all.envelopes.back().payload, "a0");
  ASSERT_STORE_OK(QueryPage top, store_->QueryBefore(a, kMaxSequenceId, 10, UINT64_MAX));
  EXPECT_EQ(Ids(top.envelopes), Below(a_ids, 0));

  // `before` is exclusive: an id of the topic, and an id of another topic between two of a's.
  ASSERT_STORE_OK(QueryPage below3, store_->QueryBefore(a, a_ids[3], 10, UINT64_MAX));
  EXPECT_EQ(Ids(below3.envelopes), std::vector<int64_t>({a_ids[2], a_ids[1], a_ids[0]}));
  EXPECT_FALSE(below3.has_more);
  ASSERT_STORE_OK(QueryPage between, store_->QueryBefore(a, other_ids[4], 10, UINT64_MAX));
  EXPECT_EQ(Ids(between.envelopes), Below(a_ids, other_ids[4]));
  EXPECT_EQ(between.envelopes.front().meta.sequence_id, a_ids[3]);

  // The limit, and has_more at the edges: an older row below the page, or not.
  ASSERT_STORE_OK(QueryPage newest, store_->QueryBefore(a, 0, 1, UINT64_MAX));
  EXPECT_EQ(Ids(newest.envelopes), std::vector<int64_t>({a_ids[5]}));
  EXPECT_TRUE(newest.has_more);
  ASSERT_STORE_OK(QueryPage two, store_->QueryBefore(a, a_ids[2], 2, UINT64_MAX));
  EXPECT_EQ(Ids(two.envelopes), std::vector<int64_t>({a_ids[1], a_ids[0]}));
  EXPECT_FALSE(two.has_more);  // exactly the rows left: not "more"
  ASSERT_STORE_OK(QueryPage one, store_->QueryBefore(a, a_ids[2], 1, UINT64_MAX));
  EXPECT_EQ(Ids(one.envelopes), std::vector<int64_t>({a_ids[1]}));
  EXPECT_TRUE(one.has_more);  // a_ids[0] is below it
  ASSERT_STORE_OK(QueryPage six, store_->QueryBefore(a, 0, 6, UINT64_MAX));
  EXPECT_EQ(six.envelopes.size(), 6u);
  EXPECT_FALSE(six.has_more);

  // Nothing below the cursor, an unknown topic, a negative cursor: empty pages.
  ASSERT_STORE_OK(QueryPage bottom, store_->QueryBefore(a, a_ids[0], 10, UINT64_MAX));
  EXPECT_TRUE(bottom.envelopes.empty());
  EXPECT_FALSE(bottom.has_more);
  ASSERT_STORE_OK(QueryPage unknown, store_->QueryBefore(GroupTopic(9), 0, 10, UINT64_MAX));
  EXPECT_TRUE(unknown.envelopes.empty());
  EXPECT_FALSE(unknown.has_more);
  ASSERT_STORE_OK(QueryPage negative, store_->QueryBefore(a, -1, 10, UINT64_MAX));
  EXPECT_TRUE(negative.envelopes.empty());
  EXPECT_FALSE(negative.has_more);
}

TEST_P(StoreConformanceTest, QueryBeforePagingDownReturnsEveryRowOnce) {
  // verifies: issue 33 G1
  const std::string a = GroupTopic(1);
  std::vector<int64_t> stored;
  for (int i = 0; i < 20; ++i) {
    ASSERT_STORE_OK(CommitPublishResult r,
                    store_->CommitPublish(Request(
                        {Item(GroupTopic(static_cast<uint8_t>(2 + i % 2)), "o" + std::to_string(i)),
                         Item(a, "a" + std::to_string(i))})));
    stored.push_back(r.metas[1].sequence_id);
  }
  // The client's loop: before = the last id of the previous page, while has_more.
  std::vector<int64_t> seen;
  int64_t before = 0;
  int pages = 0;
  for (; pages < 100; ++pages) {
    ASSERT_STORE_OK(QueryPage page, store_->QueryBefore(a, before, 3, UINT64_MAX));
    ASSERT_FALSE(page.envelopes.empty());  // non-empty while anything is below the cursor
    for (size_t i = 0; i < page.envelopes.size(); ++i) {
      EXPECT_LT(page.envelopes[i].meta.sequence_id, before == 0 ? kMaxSequenceId : before);
      seen.push_back(page.envelopes[i].meta.sequence_id);
    }
    before = page.envelopes.back().meta.sequence_id;
    if (!page.has_more) {
      EXPECT_EQ(page.envelopes.size(), 2u);  // 20 rows = six full pages and two
      break;
    }
    EXPECT_EQ(page.envelopes.size(), 3u);  // a page is full while older rows exist
  }
  EXPECT_EQ(pages, 6);
  EXPECT_EQ(seen, Below(stored, 0));  // every row once, newest first across pages
  ASSERT_STORE_OK(QueryPage after_last, store_->QueryBefore(a, before, 3, UINT64_MAX));
  EXPECT_TRUE(after_last.envelopes.empty());
  EXPECT_FALSE(after_last.has_more);
}

// Mirrors QueryStopsReadingOncePayloadsPassTheBound (issue 28): payloads are read in page order,
// newest first here, until their total passes the bound.
TEST_P(StoreConformanceTest, QueryBeforeStopsReadingOncePayloadsPassTheBound) {
  // verifies: issue 33 G1
  std::vector<PublishItem> items;
  for (int i = 0; i < 5; ++i) {
    items.push_back(Item(GroupTopic(1), std::string(1000, static_cast<char>('a' + i))));
  }
  ASSERT_STORE_OK(CommitPublishResult r, store_->CommitPublish(Request(std::move(items))));
  ASSERT_STORE_OK(QueryPage capped, store_->QueryBefore(GroupTopic(1), 0, 10, 2500));
  EXPECT_TRUE(capped.over_budget);
  ASSERT_EQ(capped.envelopes.size(), 3u);  // the third passes 2500; nothing after it is read
  EXPECT_EQ(capped.envelopes[0].meta.sequence_id, r.metas[4].sequence_id);
  EXPECT_EQ(capped.envelopes[2].meta.sequence_id, r.metas[2].sequence_id);
  EXPECT_EQ(capped.envelopes[2].payload, std::string(1000, 'c'));
  ASSERT_STORE_OK(QueryPage exact, store_->QueryBefore(GroupTopic(1), 0, 10, 5000));
  EXPECT_FALSE(exact.over_budget);
  EXPECT_EQ(exact.envelopes.size(), 5u);
  ASSERT_STORE_OK(QueryPage limited, store_->QueryBefore(GroupTopic(1), 0, 2, 1500));
  EXPECT_TRUE(limited.over_budget);  // two rows, 2000 bytes: the page passes 1500
  EXPECT_EQ(limited.envelopes.size(), 2u);
  EXPECT_TRUE(limited.has_more);
  // Below a cursor: 1000 bytes do not pass 1000, so the second row is read and passes it.
  const int64_t cursor = r.metas[3].sequence_id;
  ASSERT_STORE_OK(QueryPage below, store_->QueryBefore(GroupTopic(1), cursor, 10, 1000));
  EXPECT_TRUE(below.over_budget);
  EXPECT_EQ(Ids(below.envelopes),
            std::vector<int64_t>({r.metas[2].sequence_id, r.metas[1].sequence_id}));
  ASSERT_STORE_OK(QueryPage whole, store_->QueryBefore(GroupTopic(1), cursor, 10, 3000));
  EXPECT_FALSE(whole.over_budget);
  EXPECT_EQ(whole.envelopes.size(), 3u);
}

TEST_P(StoreConformanceTest, QueryBeforeLimitZeroIsACallerBug) {
  // verifies: issue 33 G1
  ASSERT_STORE_OK(CommitPublishResult r,
                  store_->CommitPublish(Request({Item(GroupTopic(1), "only")})));
  auto page = store_->QueryBefore(GroupTopic(1), 0, 0, UINT64_MAX);
  ASSERT_FALSE(IsOk(page));
  EXPECT_EQ(ErrorOf(page).kind, ErrorKind::kInvariant);
  EXPECT_EQ(r.metas.size(), 1u);
}

// ---- Newest (API-244). ----

TEST_P(StoreConformanceTest, NewestGivesEachTopicsHighestRowInRequestOrder) {
  // verifies: API-244
  const std::string a = GroupTopic(1);
  const std::string b = KeyPackageTopic(2);
  ASSERT_STORE_OK(CommitPublishResult r1, store_->CommitPublish(Request({Item(a, "a1")})));
  ASSERT_STORE_OK(CommitPublishResult r2,
                  store_->CommitPublish(Request({Item(b, "b1", RetentionClass::kKeyPackage)})));
  ASSERT_STORE_OK(CommitPublishResult r3, store_->CommitPublish(Request({Item(a, "a2")})));

  ASSERT_STORE_OK(std::vector<StoredEnvelope> metadata,
                  store_->Newest({b, GroupTopic(9), a, b}, /*with_payload=*/false));
  ASSERT_EQ(metadata.size(), 2u);  // the absent topic is skipped, the repeat merged
  ExpectMetaEq(metadata[0].meta, r2.metas[0]);
  ExpectMetaEq(metadata[1].meta, r3.metas[0]);
  EXPECT_TRUE(metadata[0].payload.empty());
  EXPECT_TRUE(metadata[1].payload.empty());

  ASSERT_STORE_OK(std::vector<StoredEnvelope> full, store_->Newest({a, b}, /*with_payload=*/true));
  ASSERT_EQ(full.size(), 2u);
  EXPECT_EQ(full[0].meta.sequence_id, r3.metas[0].sequence_id);
  EXPECT_EQ(full[0].payload, "a2");
  EXPECT_EQ(full[1].payload, "b1");
  EXPECT_NE(r1.metas[0].sequence_id, r3.metas[0].sequence_id);

  ASSERT_STORE_OK(std::vector<StoredEnvelope> none, store_->Newest({GroupTopic(8)}, true));
  EXPECT_TRUE(none.empty());
}

TEST_P(StoreConformanceTest, NewestOnPrimaryEqualsNewestAfterAPublish) {
  // verifies: issue 33 G6 / Q3 (docs/v3-api.md: FetchKeyPackages reads Newest on the primary)
  const std::string a = KeyPackageTopic(1);
  const std::string b = KeyPackageTopic(2);
  ASSERT_STORE_OK(std::vector<StoredEnvelope> none, store_->NewestOnPrimary({a, b}, true));
  EXPECT_TRUE(none.empty());
  ASSERT_STORE_OK(CommitPublishResult r1,
                  store_->CommitPublish(Request({Item(a, "a1", RetentionClass::kKeyPackage),
                                                 Item(b, "b1", RetentionClass::kKeyPackage)})));
  ASSERT_STORE_OK(CommitPublishResult r2,
                  store_->CommitPublish(Request({Item(a, "a2", RetentionClass::kKeyPackage)})));
  // The upload just made is found at once, with its payload, and newest wins.
  ASSERT_STORE_OK(std::vector<StoredEnvelope> primary,
                  store_->NewestOnPrimary({b, GroupTopic(9), a, b}, /*with_payload=*/true));
  ASSERT_EQ(primary.size(), 2u);
  ExpectMetaEq(primary[0].meta, r1.metas[1]);
  ExpectMetaEq(primary[1].meta, r2.metas[0]);
  EXPECT_EQ(primary[0].payload, "b1");
  EXPECT_EQ(primary[1].payload, "a2");
  // On a store whose read database is the primary, Newest gives the same answer.
  for (bool with_payload : {false, true}) {
    ASSERT_STORE_OK(std::vector<StoredEnvelope> on_primary,
                    store_->NewestOnPrimary({a, b, GroupTopic(9)}, with_payload));
    ASSERT_STORE_OK(std::vector<StoredEnvelope> newest,
                    store_->Newest({a, b, GroupTopic(9)}, with_payload));
    ASSERT_EQ(on_primary.size(), newest.size());
    for (size_t i = 0; i < newest.size(); ++i) {
      ExpectMetaEq(on_primary[i].meta, newest[i].meta);
      EXPECT_EQ(on_primary[i].payload, newest[i].payload);
      EXPECT_EQ(on_primary[i].payload.empty(), !with_payload);
    }
  }
}

// ---- History and duplicate lookup. ----

TEST_P(StoreConformanceTest, HistoryReturnsEveryRowOfTheTopicAscending) {
  // verifies: API-232
  const std::string inbox = IdentityTopic(4);
  ASSERT_STORE_OK(std::vector<StoredEnvelope> empty, store_->History(inbox));
  EXPECT_TRUE(empty.empty());
  int64_t head = 0;
  std::vector<int64_t> ids;
  for (int i = 0; i < 5; ++i) {
    ASSERT_STORE_OK(
        CommitPublishResult r,
        store_->CommitPublish(Request({IdentityItem(inbox, "u" + std::to_string(i), head),
                                       Item(GroupTopic(1), "g" + std::to_string(i))})));
    head = r.metas[0].sequence_id;
    ids.push_back(head);
  }
  ASSERT_STORE_OK(std::vector<StoredEnvelope> history, store_->History(inbox));
  EXPECT_EQ(Ids(history), ids);
  EXPECT_EQ(history[3].payload, "u3");
}

TEST_P(StoreConformanceTest, FindDuplicatesAnswersEachKeyInOrder) {
  // verifies: API-222
  ASSERT_STORE_OK(
      CommitPublishResult r,
      store_->CommitPublish(Request({Item(GroupTopic(1), "x"), Item(GroupTopic(2), "y")})));
  ASSERT_STORE_OK(auto found, store_->FindDuplicates({{GroupTopic(2), HashOf("y")},
                                                      {GroupTopic(2), HashOf("x")},
                                                      {GroupTopic(1), HashOf("x")}}));
  ASSERT_EQ(found.size(), 3u);
  ASSERT_TRUE(found[0].has_value());
  ExpectMetaEq(*found[0], r.metas[1]);
  EXPECT_FALSE(found[1].has_value());  // the hash exists, but on another topic
  ASSERT_TRUE(found[2].has_value());
  ExpectMetaEq(*found[2], r.metas[0]);
}

TEST_P(StoreConformanceTest, ClockIsNanosecondsSinceTheEpoch) {
  // verifies: OPS-020
  ASSERT_STORE_OK(int64_t now, store_->ClockNs());
  const int64_t local = std::chrono::duration_cast<std::chrono::nanoseconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count();
  // Same clock domain: within a minute of this process's clock.
  EXPECT_LT(std::abs(now - local), int64_t{60} * 1000000000);
}

// ---- Concurrency. ----

// What ConcurrentPublishersGetUniqueIdsAndReadersSeePrefixes's threads saw.
struct ConcurrentRun {
  struct Published {
    std::vector<std::vector<EnvelopeMeta>> publishes;  // per publish, per item
    std::vector<std::string> errors;
  };
  std::vector<Published> published;  // per writer thread
  std::vector<QueryPage> snapshots;  // the reader's pages, in order
  std::vector<std::string> reader_errors;
};

// `threads` writers each publish `publishes` requests of two items on two of `topics` (three),
// while one reader queries `all` in a loop until the writers are done.
ConcurrentRun PublishWhileReading(Store& store, const std::vector<std::string>& topics,
                                  const std::vector<TopicCursor>& all, int threads, int publishes) {
  ConcurrentRun run;
  run.published.resize(static_cast<size_t>(threads));
  std::atomic<int> running{threads};
  std::thread reader([&] {
    while (running.load() > 0) {
      auto page = store.Query(all, 1000);
      if (!IsOk(page)) {
        run.reader_errors.push_back(Describe(page));
        return;
      }
      run.snapshots.push_back(std::move(page).value());
    }
  });
  std::vector<std::thread> writers;
  for (int t = 0; t < threads; ++t) {
    writers.emplace_back([&, t] {
      for (int i = 0; i < publishes; ++i) {
        const std::string tag = std::to_string(t) + "-" + std::to_string(i);
        auto result = store.CommitPublish(Request(
            {Item(topics[(t + i) % 3], "a" + tag), Item(topics[(t + i + 1) % 3], "b" + tag)}));
        if (!IsOk(result)) {
          run.published[t].errors.push_back(Describe(result));
          continue;
        }
        run.published[t].publishes.push_back(result.value().metas);
      }
      running.fetch_sub(1);
    });
  }
  for (std::thread& w : writers) {
    w.join();
  }
  reader.join();
  return run;
}

// Each writer's ids rise in item order, across its publishes and per topic; every id is
// distinct. Adds them to `ids`.
void ExpectUniqueRisingIds(const std::vector<ConcurrentRun::Published>& published,
                           std::set<int64_t>* ids, size_t* total) {
  for (const ConcurrentRun::Published& p : published) {
    ASSERT_TRUE(p.errors.empty()) << p.errors.front();
    std::map<std::string, int64_t> last_on_topic;
    int64_t last_any = 0;
    for (const std::vector<EnvelopeMeta>& metas : p.publishes) {
      ASSERT_EQ(metas.size(), 2u);
      EXPECT_LT(metas[0].sequence_id, metas[1].sequence_id);  // item order
      EXPECT_GT(metas[0].sequence_id, last_any);  // a later publish goes higher (API-289)
      last_any = metas[1].sequence_id;
      for (const EnvelopeMeta& meta : metas) {
        EXPECT_GT(meta.sequence_id, last_on_topic[meta.topic]);
        last_on_topic[meta.topic] = meta.sequence_id;
        ids->insert(meta.sequence_id);
        ++*total;
      }
    }
  }
}

// Every snapshot showed each topic as a prefix of its final rows (`by_topic`).
void ExpectPrefixesOf(const std::vector<QueryPage>& snapshots,
                      std::map<std::string, std::vector<int64_t>>& by_topic) {
  for (const QueryPage& snapshot : snapshots) {
    std::map<std::string, std::vector<int64_t>> seen;
    for (const StoredEnvelope& e : snapshot.envelopes) {
      seen[e.meta.topic].push_back(e.meta.sequence_id);
    }
    for (const auto& [topic, seen_ids] : seen) {
      const std::vector<int64_t>& final_ids = by_topic[topic];
      ASSERT_LE(seen_ids.size(), final_ids.size());
      EXPECT_TRUE(std::equal(seen_ids.begin(), seen_ids.end(), final_ids.begin()))
          << "a snapshot skipped a lower id on a topic";
    }
  }
}

TEST_P(StoreConformanceTest, ConcurrentPublishersGetUniqueIdsAndReadersSeePrefixes) {
  // verifies: API-287
  // verifies: API-289
  // verifies: API-201
  // verifies: API-240
  constexpr int kThreads = 4;
  constexpr int kPublishes = 25;
  const std::vector<std::string> topics = {GroupTopic(1), GroupTopic(2), GroupTopic(3)};
  std::vector<TopicCursor> all;
  for (const std::string& topic : topics) {
    all.push_back({topic, 0});
  }
  ConcurrentRun run = PublishWhileReading(*store_, topics, all, kThreads, kPublishes);
  ASSERT_TRUE(run.reader_errors.empty()) << run.reader_errors.front();

  std::set<int64_t> ids;
  size_t total = 0;
  ASSERT_NO_FATAL_FAILURE(ExpectUniqueRisingIds(run.published, &ids, &total));
  EXPECT_EQ(total, size_t{kThreads} * kPublishes * 2);
  EXPECT_EQ(ids.size(), total) << "an id was given twice";

  // A Query after all returns every stored row exactly once, each topic ascending.
  ASSERT_STORE_OK(QueryPage final_page, store_->Query(all, 1000));
  EXPECT_FALSE(final_page.has_more);
  std::set<int64_t> read_ids;
  std::map<std::string, std::vector<int64_t>> by_topic;
  for (const StoredEnvelope& e : final_page.envelopes) {
    EXPECT_TRUE(read_ids.insert(e.meta.sequence_id).second);
    by_topic[e.meta.topic].push_back(e.meta.sequence_id);
  }
  EXPECT_EQ(read_ids, ids);

  // Every snapshot taken during the run showed each topic as a prefix of its final rows.
  ASSERT_NO_FATAL_FAILURE(ExpectPrefixesOf(run.snapshots, by_topic));
}

// ---- Stream reads (STORE.md 4, 5, 7). ----

// A payload of exactly `size` bytes, distinct per tag (so its hash is distinct too).
std::string PayloadOfSize(const std::string& tag, size_t size) {
  std::string payload = tag + ":";
  payload.resize(std::max(size, payload.size()), 'x');
  return payload;
}

// Publishes each (topic, payload) in its own request, in order; the stored metas.
std::vector<EnvelopeMeta> PublishEach(
    Store& store, const std::vector<std::pair<std::string, std::string>>& rows) {
  std::vector<EnvelopeMeta> metas;
  for (const auto& [topic, payload] : rows) {
    auto result = store.CommitPublish(Request({Item(topic, payload)}));
    if (!IsOk(result)) {
      ADD_FAILURE() << Describe(result);
      return metas;
    }
    metas.push_back(result.value().metas[0]);
  }
  return metas;
}

std::vector<int64_t> HeadIds(const std::vector<RowHead>& heads) {
  std::vector<int64_t> ids;
  for (const RowHead& head : heads) {
    ids.push_back(head.sequence_id);
  }
  return ids;
}

std::vector<std::vector<int64_t>> IdsPerRange(const std::vector<std::vector<StoredEnvelope>>& r) {
  std::vector<std::vector<int64_t>> ids;
  for (const std::vector<StoredEnvelope>& range : r) {
    ids.push_back(Ids(range));
  }
  return ids;
}

TEST_P(StoreConformanceTest, AdvanceBoundaryReachesTheLastIdAndNeverDecreases) {
  // verifies: STORE.md 4.1
  // verifies: API-291
  ASSERT_STORE_OK(BoundaryAdvance empty, store_->AdvanceBoundary());
  EXPECT_FALSE(empty.lock_timeout);
  EXPECT_EQ(empty.boundary, 0);

  const std::vector<EnvelopeMeta> first =
      PublishEach(*store_, {{GroupTopic(1), "a"}, {GroupTopic(2), "b"}, {GroupTopic(1), "c"}});
  ASSERT_EQ(first.size(), 3u);
  ASSERT_STORE_OK(BoundaryAdvance advanced, store_->AdvanceBoundary());
  EXPECT_FALSE(advanced.lock_timeout);
  EXPECT_EQ(advanced.boundary, first[2].sequence_id);

  ASSERT_STORE_OK(BoundaryAdvance again, store_->AdvanceBoundary());
  EXPECT_EQ(again.boundary, advanced.boundary);  // nothing new: it stays

  const std::vector<EnvelopeMeta> later = PublishEach(*store_, {{GroupTopic(3), "d"}});
  ASSERT_EQ(later.size(), 1u);
  ASSERT_STORE_OK(BoundaryAdvance risen, store_->AdvanceBoundary());
  EXPECT_EQ(risen.boundary, later[0].sequence_id);
  EXPECT_GT(risen.boundary, again.boundary);
}

TEST_P(StoreConformanceTest, HeadsGiveEachPositionItsTopicsLastIdOrZero) {
  // verifies: STORE.md 7 (heads)
  const std::string a = GroupTopic(1);
  const std::string b = GroupTopic(2);
  ASSERT_STORE_OK(std::vector<int64_t> before, store_->Heads({a}));
  EXPECT_EQ(before, std::vector<int64_t>({0}));

  const std::vector<EnvelopeMeta> metas = PublishEach(*store_, {{a, "a1"}, {b, "b1"}, {a, "a2"}});
  ASSERT_EQ(metas.size(), 3u);
  ASSERT_STORE_OK(std::vector<int64_t> heads, store_->Heads({a, GroupTopic(9), a, b}));
  EXPECT_EQ(heads, std::vector<int64_t>(
                       {metas[2].sequence_id, 0, metas[2].sequence_id, metas[1].sequence_id}));

  ASSERT_STORE_OK(std::vector<int64_t> none, store_->Heads({}));
  EXPECT_TRUE(none.empty());
}

TEST_P(StoreConformanceTest, CatchUpReturnsEachRangesRowsAscendingUpToTheCap) {
  // verifies: STORE.md 7 (catch-up history)
  const std::string a = GroupTopic(1);
  const std::string b = GroupTopic(2);
  const std::vector<EnvelopeMeta> m = PublishEach(
      *store_,
      {{a, "a0"}, {b, "b0"}, {a, "a1"}, {a, "a2"}, {b, "b1"}, {a, "a3"}, {b, "b2"}, {a, "a4"}});
  ASSERT_EQ(m.size(), 8u);
  const std::vector<int64_t> ai = {m[0].sequence_id, m[2].sequence_id, m[3].sequence_id,
                                   m[5].sequence_id, m[7].sequence_id};
  const std::vector<int64_t> bi = {m[1].sequence_id, m[4].sequence_id, m[6].sequence_id};

  ASSERT_STORE_OK(auto rows, store_->CatchUp(
                                 {
                                     {a, 0, ai[4]},                       // capped at 3
                                     {b, bi[0], bi[2]},                   // after is exclusive
                                     {GroupTopic(9), 0, kMaxSequenceId},  // no rows
                                     {a, ai[1], ai[3]},                   // through is inclusive
                                     {a, ai[4], ai[4]},                   // empty range
                                 },
                                 /*per_range=*/3, /*byte_budget=*/UINT64_MAX));
  EXPECT_EQ(IdsPerRange(rows),
            std::vector<std::vector<int64_t>>(
                {{ai[0], ai[1], ai[2]}, {bi[1], bi[2]}, {}, {ai[2], ai[3]}, {}}));
  // Full rows, as Get reads them.
  for (const std::vector<StoredEnvelope>& range : rows) {
    for (const StoredEnvelope& row : range) {
      ASSERT_STORE_OK(std::optional<StoredEnvelope> got, store_->Get(row.meta.sequence_id));
      ASSERT_TRUE(got.has_value());
      ExpectMetaEq(row.meta, got->meta);
      EXPECT_EQ(row.payload, got->payload);
    }
  }
  EXPECT_EQ(rows[1][0].payload, "b1");

  ASSERT_STORE_OK(auto none, store_->CatchUp({}, 3, UINT64_MAX));
  EXPECT_TRUE(none.empty());
}

TEST_P(StoreConformanceTest, CatchUpByteCutoffAdmitsRoundRobinPrefixesAndThenStops) {
  // verifies: STORE.md 7 (catch-up byte cutoff keeps each topic's prefix)
  // verifies: ARC-087
  const std::string a = GroupTopic(1);
  const std::string b = GroupTopic(2);
  const std::string c = GroupTopic(3);
  // Each row costs its payload + 256 bytes: 356 for 100 bytes, 1256 for 1000, 266 for 10.
  const std::vector<EnvelopeMeta> m = PublishEach(*store_, {{a, PayloadOfSize("a0", 100)},
                                                            {a, PayloadOfSize("a1", 100)},
                                                            {a, PayloadOfSize("a2", 1000)},
                                                            {b, PayloadOfSize("b0", 100)},
                                                            {c, PayloadOfSize("c0", 100)},
                                                            {c, PayloadOfSize("c1", 100)},
                                                            {c, PayloadOfSize("c2", 10)}});
  ASSERT_EQ(m.size(), 7u);
  const std::vector<CatchUpRange> ranges = {
      {a, 0, kMaxSequenceId}, {b, 0, kMaxSequenceId}, {c, 0, kMaxSequenceId}};
  auto id = [&](size_t i) { return m[i].sequence_id; };

  // Round 0: a0 b0 c0 (1068); round 1: a1 c1 (1780); round 2: a2 (3036) c2 (3302).
  ASSERT_STORE_OK(auto all, store_->CatchUp(ranges, 10, UINT64_MAX));
  EXPECT_EQ(IdsPerRange(all), std::vector<std::vector<int64_t>>(
                                  {{id(0), id(1), id(2)}, {id(3)}, {id(4), id(5), id(6)}}));
  EXPECT_EQ(all[0][2].payload.size(), 1000u);

  // Exactly at the budget: five rows fit.
  ASSERT_STORE_OK(auto exact, store_->CatchUp(ranges, 10, 1780));
  EXPECT_EQ(IdsPerRange(exact),
            std::vector<std::vector<int64_t>>({{id(0), id(1)}, {id(3)}, {id(4), id(5)}}));
  // a2 does not fit; c2 would, but the cutoff stops at the first row that does not.
  ASSERT_STORE_OK(auto stopped, store_->CatchUp(ranges, 10, 1780 + 266));
  EXPECT_EQ(IdsPerRange(stopped), IdsPerRange(exact));
  // One byte less: c1 no longer fits, and round 1 ends after a1.
  ASSERT_STORE_OK(auto less, store_->CatchUp(ranges, 10, 1779));
  EXPECT_EQ(IdsPerRange(less),
            std::vector<std::vector<int64_t>>({{id(0), id(1)}, {id(3)}, {id(4)}}));
  // The cap applies before the cutoff.
  ASSERT_STORE_OK(auto capped, store_->CatchUp(ranges, 1, UINT64_MAX));
  EXPECT_EQ(IdsPerRange(capped), std::vector<std::vector<int64_t>>({{id(0)}, {id(3)}, {id(4)}}));
}

TEST_P(StoreConformanceTest, CatchUpAlwaysAdmitsTheFirstRowWhateverItsSize) {
  // verifies: STORE.md 7 (catch-up byte cutoff)
  const std::string a = GroupTopic(1);
  const std::string b = GroupTopic(2);
  const std::vector<EnvelopeMeta> m =
      PublishEach(*store_, {{a, PayloadOfSize("a0", 5000)}, {a, "a1"}, {b, "b0"}});
  ASSERT_EQ(m.size(), 3u);
  ASSERT_STORE_OK(auto rows, store_->CatchUp({{GroupTopic(9), 0, kMaxSequenceId},
                                              {a, 0, kMaxSequenceId},
                                              {b, 0, kMaxSequenceId}},
                                             10, /*byte_budget=*/0));
  EXPECT_EQ(IdsPerRange(rows), std::vector<std::vector<int64_t>>({{}, {m[0].sequence_id}, {}}));
  EXPECT_EQ(rows[1][0].payload, PayloadOfSize("a0", 5000));
}

TEST_P(StoreConformanceTest, CatchUpOfOneRangeStopsAtTheFirstRowPastTheBudget) {
  // verifies: STORE.md 7 (catch-up byte cutoff; a lone range is its own rounds)
  const std::string a = GroupTopic(1);
  const std::vector<EnvelopeMeta> m = PublishEach(
      *store_,
      {{a, PayloadOfSize("a0", 1000)}, {a, PayloadOfSize("a1", 1000)}, {a, "a2"}, {a, "a3"}});
  ASSERT_EQ(m.size(), 4u);
  ASSERT_STORE_OK(auto whole, store_->CatchUp({{a, 0, kMaxSequenceId}}, 10, UINT64_MAX));
  ASSERT_EQ(whole.size(), 1u);
  ASSERT_EQ(whole[0].size(), 4u);
  const uint64_t first_two = whole[0][0].payload.size() + whole[0][1].payload.size() + 2 * 256;
  ASSERT_STORE_OK(auto two, store_->CatchUp({{a, 0, kMaxSequenceId}}, 10, first_two));
  EXPECT_EQ(IdsPerRange(two),
            std::vector<std::vector<int64_t>>({{m[0].sequence_id, m[1].sequence_id}}));
  ASSERT_STORE_OK(auto one, store_->CatchUp({{a, 0, kMaxSequenceId}}, 10, first_two - 1));
  EXPECT_EQ(IdsPerRange(one), std::vector<std::vector<int64_t>>({{m[0].sequence_id}}));
  ASSERT_STORE_OK(auto capped,
                  store_->CatchUp({{a, m[0].sequence_id, m[3].sequence_id}}, 2, UINT64_MAX));
  EXPECT_EQ(IdsPerRange(capped),
            std::vector<std::vector<int64_t>>({{m[1].sequence_id, m[2].sequence_id}}));
  EXPECT_EQ(capped[0][0].payload, whole[0][1].payload);
}

TEST_P(StoreConformanceTest, VisitCatchUpHandsOverExactlyTheRowsOfCatchUp) {
  // verifies: STORE.md 7 (catch-up history, read in place by stream waves)
  const std::string a = GroupTopic(1);
  const std::string b = GroupTopic(2);
  const std::vector<EnvelopeMeta> m = PublishEach(*store_, {{a, PayloadOfSize("a0", 1000)},
                                                            {b, "b0"},
                                                            {a, "a1"},
                                                            {a, PayloadOfSize("a2", 700)},
                                                            {b, "b1"}});
  ASSERT_EQ(m.size(), 5u);
  // The visited rows, copied out (a view is valid only during its call).
  auto visit = [&](const std::vector<CatchUpRange>& ranges, uint32_t per_range, uint64_t budget,
                   size_t stop_after = SIZE_MAX) {
    std::vector<std::vector<StoredEnvelope>> seen(ranges.size());
    size_t calls = 0;
    std::optional<StoreError> error = store_->VisitCatchUp(
        ranges, per_range, budget, [&](size_t range, const StoredEnvelopeView& row) {
          EXPECT_LT(range, ranges.size());
          StoredEnvelope copy;
          copy.meta.sequence_id = row.sequence_id;
          copy.meta.server_ns = row.server_ns;
          EXPECT_EQ(row.message_hash.size(), copy.meta.message_hash.size());
          std::memcpy(copy.meta.message_hash.data(), row.message_hash.data(),
                      std::min(row.message_hash.size(), copy.meta.message_hash.size()));
          copy.meta.topic = std::string(row.topic);
          copy.meta.expiry_ns = row.expiry_ns;
          copy.meta.is_commit_or_proposal = row.is_commit_or_proposal;
          copy.payload = std::string(row.payload);
          seen[range].push_back(std::move(copy));
          return ++calls < stop_after;
        });
    EXPECT_FALSE(error.has_value()) << (error ? error->message : "");
    return seen;
  };
  auto expect_same = [&](const std::vector<CatchUpRange>& ranges, uint32_t per_range,
                         uint64_t budget) {
    ASSERT_STORE_OK(auto rows, store_->CatchUp(ranges, per_range, budget));
    const auto seen = visit(ranges, per_range, budget);
    ASSERT_EQ(IdsPerRange(seen), IdsPerRange(rows));
    for (size_t r = 0; r < rows.size(); ++r) {
      for (size_t i = 0; i < rows[r].size(); ++i) {
        ExpectMetaEq(seen[r][i].meta, rows[r][i].meta);
        EXPECT_EQ(seen[r][i].payload, rows[r][i].payload);
      }
    }
  };
  // One range (read in place on SQLite): whole, capped, cut by the budget, and empty.
  expect_same({{a, 0, kMaxSequenceId}}, 10, UINT64_MAX);
  expect_same({{a, m[0].sequence_id, kMaxSequenceId}}, 1, UINT64_MAX);
  expect_same({{a, 0, kMaxSequenceId}}, 10, 1000 + 256 + 2 + 256);
  expect_same({{a, 0, kMaxSequenceId}}, 10, 0);
  expect_same({{GroupTopic(9), 0, kMaxSequenceId}}, 10, UINT64_MAX);
  // Several ranges, the same topic twice among them.
  expect_same(
      {{a, 0, kMaxSequenceId}, {b, 0, kMaxSequenceId}, {a, m[2].sequence_id, kMaxSequenceId}}, 10,
      UINT64_MAX);
  expect_same({{a, 0, kMaxSequenceId}, {b, 0, kMaxSequenceId}}, 10, 1500);
  expect_same({}, 10, UINT64_MAX);
  // Returning false stops the visit.
  const auto first = visit({{a, 0, kMaxSequenceId}, {b, 0, kMaxSequenceId}}, 10, UINT64_MAX, 1);
  EXPECT_EQ(IdsPerRange(first), std::vector<std::vector<int64_t>>({{m[0].sequence_id}, {}}));
  const auto one = visit({{a, 0, kMaxSequenceId}}, 10, UINT64_MAX, 2);
  EXPECT_EQ(IdsPerRange(one),
            std::vector<std::vector<int64_t>>({{m[0].sequence_id, m[2].sequence_id}}));
}

TEST_P(StoreConformanceTest, TailReaderBeginsAtTheAdvancedBoundaryAndPagesForward) {
  // verifies: STORE.md 5.3 (steps 1 and 3)
  const std::string a = GroupTopic(1);
  const std::string b = GroupTopic(2);
  const std::vector<EnvelopeMeta> m = PublishEach(
      *store_, {{a, "a0"}, {b, PayloadOfSize("b0", 300)}, {a, "a1"}, {b, "b1"}, {a, "a2"}});
  ASSERT_EQ(m.size(), 5u);
  ASSERT_STORE_OK(BoundaryAdvance advanced, store_->AdvanceBoundary());
  ASSERT_EQ(advanced.boundary, m[4].sequence_id);

  ASSERT_STORE_OK(std::unique_ptr<TailReader> reader, store_->OpenTailReader());
  ASSERT_NE(reader, nullptr);
  ASSERT_STORE_OK(int64_t boundary, reader->Begin());
  EXPECT_EQ(boundary, advanced.boundary);

  ASSERT_STORE_OK(std::vector<RowHead> page1, reader->Forward(0, 2));
  EXPECT_EQ(HeadIds(page1), std::vector<int64_t>({m[0].sequence_id, m[1].sequence_id}));
  EXPECT_EQ(page1[0].topic, a);
  EXPECT_EQ(page1[0].payload_bytes, 2u);
  EXPECT_EQ(page1[1].topic, b);
  EXPECT_EQ(page1[1].payload_bytes, 300u);
  ASSERT_STORE_OK(std::vector<RowHead> page2, reader->Forward(page1.back().sequence_id, 2));
  EXPECT_EQ(HeadIds(page2), std::vector<int64_t>({m[2].sequence_id, m[3].sequence_id}));
  ASSERT_STORE_OK(std::vector<RowHead> page3, reader->Forward(page2.back().sequence_id, 2));
  EXPECT_EQ(HeadIds(page3), std::vector<int64_t>({m[4].sequence_id}));
  ASSERT_STORE_OK(std::vector<RowHead> page4, reader->Forward(page3.back().sequence_id, 2));
  EXPECT_TRUE(page4.empty());
  ASSERT_STORE_OK(bool ended, reader->End());
  EXPECT_TRUE(ended);
  ASSERT_STORE_OK(bool ended_again, reader->End());  // no snapshot open: a no-op
  EXPECT_TRUE(ended_again);
}

TEST_P(StoreConformanceTest, TailReaderSnapshotHidesLaterCommitsUntilTheNextBegin) {
  // verifies: STORE.md 5.3 (one snapshot per poll)
  const std::vector<EnvelopeMeta> first = PublishEach(*store_, {{GroupTopic(1), "first"}});
  ASSERT_EQ(first.size(), 1u);
  ASSERT_STORE_OK(std::unique_ptr<TailReader> reader, store_->OpenTailReader());
  ASSERT_STORE_OK(int64_t boundary, reader->Begin());
  EXPECT_LE(boundary, first[0].sequence_id);

  const std::vector<EnvelopeMeta> second = PublishEach(*store_, {{GroupTopic(1), "second"}});
  ASSERT_EQ(second.size(), 1u);
  ASSERT_STORE_OK(std::vector<RowHead> during, reader->Forward(0, 10));
  EXPECT_EQ(HeadIds(during), std::vector<int64_t>({first[0].sequence_id}));
  ASSERT_STORE_OK(std::vector<StoredEnvelope> hidden, reader->Load({second[0].sequence_id}));
  EXPECT_TRUE(hidden.empty());
  ASSERT_STORE_OK(bool ended, reader->End());
  EXPECT_TRUE(ended);

  ASSERT_STORE_OK(int64_t next_boundary, reader->Begin());
  EXPECT_GE(next_boundary, boundary);  // never decreases
  ASSERT_STORE_OK(std::vector<RowHead> after, reader->Forward(0, 10));
  EXPECT_EQ(HeadIds(after), std::vector<int64_t>({first[0].sequence_id, second[0].sequence_id}));
  ASSERT_STORE_OK(bool ended_again, reader->End());
  EXPECT_TRUE(ended_again);
}

TEST_P(StoreConformanceTest, TailReaderProbeReturnsEachRangesRowsUpToTheCap) {
  // verifies: STORE.md 5.3 (step 2: gap probes)
  const std::vector<EnvelopeMeta> m = PublishEach(*store_, {{GroupTopic(1), "p0"},
                                                            {GroupTopic(2), "p1"},
                                                            {GroupTopic(1), "p2"},
                                                            {GroupTopic(3), "p3"},
                                                            {GroupTopic(2), "p4"},
                                                            {GroupTopic(1), "p5"}});
  ASSERT_EQ(m.size(), 6u);
  auto id = [&](size_t i) { return m[i].sequence_id; };
  ASSERT_STORE_OK(std::unique_ptr<TailReader> reader, store_->OpenTailReader());
  ASSERT_STORE_OK(int64_t boundary, reader->Begin());
  EXPECT_GE(boundary, 0);

  ASSERT_STORE_OK(std::vector<std::vector<RowHead>> probed,
                  reader->Probe({{id(0), id(2)},            // capped at 2
                                 {id(4), id(4)},            // a single id
                                 {id(5) + 1, id(5) + 100},  // above every row
                                 {id(1), id(5)}},           // capped at 2
                                /*per_range=*/2));
  ASSERT_EQ(probed.size(), 4u);
  EXPECT_EQ(HeadIds(probed[0]), std::vector<int64_t>({id(0), id(1)}));
  EXPECT_EQ(HeadIds(probed[1]), std::vector<int64_t>({id(4)}));
  EXPECT_TRUE(probed[2].empty());
  EXPECT_EQ(HeadIds(probed[3]), std::vector<int64_t>({id(1), id(2)}));
  EXPECT_EQ(probed[1][0].topic, GroupTopic(2));
  EXPECT_EQ(probed[1][0].payload_bytes, 2u);

  ASSERT_STORE_OK(std::vector<std::vector<RowHead>> none, reader->Probe({}, 2));
  EXPECT_TRUE(none.empty());
  ASSERT_STORE_OK(bool ended, reader->End());
  EXPECT_TRUE(ended);
}

TEST_P(StoreConformanceTest, TailReaderLoadReturnsFullRowsEqualToGet) {
  // verifies: STORE.md 5.3 (step 4: payloads in the same snapshot)
  PublishItem commit = Item(GroupTopic(1), "commit", RetentionClass::kExempt);
  commit.is_commit_or_proposal = true;
  ASSERT_STORE_OK(
      CommitPublishResult published,
      store_->CommitPublish(Request({Item(GroupTopic(1), "message"), commit,
                                     IdentityItem(IdentityTopic(1), "identity", 0),
                                     Item(WelcomeTopic(1), "welcome", RetentionClass::kWelcome)})));
  const std::vector<EnvelopeMeta>& m = published.metas;
  ASSERT_STORE_OK(std::unique_ptr<TailReader> reader, store_->OpenTailReader());
  ASSERT_STORE_OK(int64_t boundary, reader->Begin());
  EXPECT_GE(boundary, 0);
  ASSERT_STORE_OK(std::vector<StoredEnvelope> loaded,
                  reader->Load({m[0].sequence_id, m[1].sequence_id, m[2].sequence_id,
                                m[3].sequence_id + 1000}));
  ASSERT_EQ(Ids(loaded), std::vector<int64_t>({m[0].sequence_id, m[1].sequence_id,
                                               m[2].sequence_id}));  // the unknown id is absent
  for (const StoredEnvelope& row : loaded) {
    ASSERT_STORE_OK(std::optional<StoredEnvelope> got, store_->Get(row.meta.sequence_id));
    ASSERT_TRUE(got.has_value());
    ExpectMetaEq(row.meta, got->meta);
    EXPECT_EQ(row.payload, got->payload);
  }
  EXPECT_TRUE(loaded[1].meta.is_commit_or_proposal);
  EXPECT_EQ(loaded[2].payload, "identity");

  ASSERT_STORE_OK(std::vector<StoredEnvelope> none, reader->Load({}));
  EXPECT_TRUE(none.empty());
  ASSERT_STORE_OK(bool ended, reader->End());
  EXPECT_TRUE(ended);
}

TEST_P(StoreConformanceTest, TailReaderScanWithoutASnapshotFailsAndLeavesItUnusable) {
  // verifies: store.h TailReader (any error means the connection is unusable)
  ASSERT_STORE_OK(std::unique_ptr<TailReader> reader, store_->OpenTailReader());
  auto forward = reader->Forward(0, 10);
  ASSERT_FALSE(IsOk(forward));
  EXPECT_EQ(ErrorOf(forward).kind, ErrorKind::kInvariant) << ErrorOf(forward).message;
  auto begin = reader->Begin();
  ASSERT_FALSE(IsOk(begin));
  EXPECT_EQ(ErrorOf(begin).kind, ErrorKind::kConnection) << ErrorOf(begin).message;

  // A fresh reader works.
  ASSERT_STORE_OK(std::unique_ptr<TailReader> fresh, store_->OpenTailReader());
  ASSERT_STORE_OK(int64_t boundary, fresh->Begin());
  EXPECT_EQ(boundary, 0);
  ASSERT_STORE_OK(bool ended, fresh->End());
  EXPECT_TRUE(ended);
}

}  // namespace
}  // namespace xb::store
