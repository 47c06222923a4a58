#include "store/push_conformance.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "store/store_test_data.h"

namespace xb::store {

void PushConformanceTest::SetUp() {
  store_ = GetParam()();
  ASSERT_NE(store_, nullptr);
  push_ = store_->push();
  ASSERT_NE(push_, nullptr);
}

void PushConformanceTest::TearDown() { store_.reset(); }

namespace {

using test_data::GroupTopic;
using test_data::HashOf;
using test_data::Request;
using test_data::WelcomeTopic;

constexpr int64_t kNoCeiling = std::numeric_limits<int64_t>::max();

template <typename T>
std::string Describe(const StoreResult<T>& result) {
  if (!result.ok()) {
    return "store error kind " + std::to_string(static_cast<int>(result.error().kind)) + ": " +
           result.error().message;
  }
  return "ok";
}

#define XB_PUSH_CONCAT_INNER(a, b) a##b
#define XB_PUSH_CONCAT(a, b) XB_PUSH_CONCAT_INNER(a, b)
#define ASSERT_PUSH_OK(lhs, expr)                          \
  auto XB_PUSH_CONCAT(push_result_, __LINE__) = (expr);    \
  ASSERT_TRUE(XB_PUSH_CONCAT(push_result_, __LINE__).ok()) \
      << Describe(XB_PUSH_CONCAT(push_result_, __LINE__)); \
  lhs = std::move(XB_PUSH_CONCAT(push_result_, __LINE__)).value()

// ---- Test data. ----

std::string Id(uint8_t n) { return std::string(32, static_cast<char>(n)); }

Hash Secret(uint8_t n) {
  Hash hash{};
  hash.fill(n);
  return hash;
}

PushRecipient Apns(uint8_t id, uint8_t secret, std::string token = "a0b1c2d3") {
  return PushRecipient{.recipient_id = Id(id),
                       .secret_hash = Secret(secret),
                       .channel = 1,
                       .delivery = std::move(token),
                       .signing_key = std::nullopt};
}

PushRecipient Http(uint8_t id, uint8_t secret) {
  return PushRecipient{.recipient_id = Id(id),
                       .secret_hash = Secret(secret),
                       .channel = 3,
                       .delivery = "https://hooks.example.org/push",
                       .signing_key = std::string(16, 'k')};
}

std::string Key(char c) { return std::string(42, c); }

SubscriptionAdd Add(std::string topic, std::vector<std::string> keys = {},
                    bool include_commits = false, int64_t epoch_base = 655) {
  return SubscriptionAdd{.topic = std::move(topic),
                         .hmac_epoch_base = epoch_base,
                         .hmac_keys = std::move(keys),
                         .include_commits = include_commits};
}

PublishItem Eligible(const std::string& topic, const std::string& payload, bool commit = false,
                     std::optional<Hash> sender_hmac = std::nullopt) {
  PublishItem item = test_data::Item(
      topic, payload, commit ? RetentionClass::kExempt : RetentionClass::kGroupMessage);
  item.is_commit_or_proposal = commit;
  item.push_eligible = true;
  item.sender_hmac = sender_hmac;
  return item;
}

}  // namespace

// ---- Fixture helpers. ----

std::vector<int64_t> PushConformanceTest::Publish(std::vector<PublishItem> items) {
  std::vector<int64_t> ids;
  auto stored = store_->CommitPublish(Request(std::move(items)));
  EXPECT_TRUE(stored.ok()) << Describe(stored);
  if (stored.ok()) {
    for (const EnvelopeMeta& meta : stored.value().metas) {
      ids.push_back(meta.sequence_id);
    }
  }
  AdvanceBoundary();
  return ids;
}

int64_t PushConformanceTest::PublishOne(PublishItem item) {
  std::vector<int64_t> ids = Publish({std::move(item)});
  return ids.empty() ? 0 : ids[0];
}

void PushConformanceTest::AdvanceBoundary() {
  for (int attempt = 0; attempt < 50; ++attempt) {
    auto advanced = store_->AdvanceBoundary();
    ASSERT_TRUE(advanced.ok()) << Describe(advanced);
    if (!advanced.value().lock_timeout) {
      return;
    }
  }
  ADD_FAILURE() << "the boundary did not advance";
}

RecipientState PushConformanceTest::Register(const PushRecipient& recipient) {
  auto answer = push_->RegisterRecipient(recipient);
  EXPECT_TRUE(answer.ok()) << Describe(answer);
  EXPECT_EQ(answer.ok() ? answer.value().verdict : PushVerdict::kNotFound, PushVerdict::kOk);
  return answer.ok() ? answer.value().value : RecipientState{};
}

StoreResult<PushAnswer<SubscriptionChange>> PushConformanceTest::Update(
    uint8_t id, uint8_t secret, std::vector<SubscriptionAdd> adds, std::vector<std::string> removes,
    uint32_t max_topics) {
  return push_->UpdateSubscriptions(Id(id), Secret(secret), adds, removes, max_topics);
}

SubscriptionChange PushConformanceTest::MustUpdate(uint8_t id, uint8_t secret,
                                                   std::vector<SubscriptionAdd> adds,
                                                   std::vector<std::string> removes,
                                                   uint32_t max_topics) {
  auto answer = Update(id, secret, std::move(adds), std::move(removes), max_topics);
  EXPECT_TRUE(answer.ok()) << Describe(answer);
  EXPECT_EQ(answer.ok() ? answer.value().verdict : PushVerdict::kNotFound, PushVerdict::kOk);
  return answer.ok() ? answer.value().value : SubscriptionChange{};
}

// Every delivery above `after` up to the boundary, window by window, page by page.
std::vector<PushDelivery> PushConformanceTest::AllDeliveries(int64_t after, uint32_t window_size,
                                                             uint32_t page) {
  std::vector<PushDelivery> out;
  auto ceiling = push_->ClosedBoundary();
  EXPECT_TRUE(ceiling.ok()) << Describe(ceiling);
  while (ceiling.ok()) {
    auto window = push_->NextPushWindow(after, ceiling.value(), window_size);
    EXPECT_TRUE(window.ok()) << Describe(window);
    if (!window.ok() || window.value().envelopes == 0) {
      break;
    }
    std::optional<DeliveryKey> position;
    for (;;) {
      auto deliveries = push_->PushDeliveries(window.value(), position, page);
      EXPECT_TRUE(deliveries.ok()) << Describe(deliveries);
      if (!deliveries.ok() || deliveries.value().empty()) {
        break;
      }
      const PushDelivery& last = deliveries.value().back();
      position =
          DeliveryKey{.sequence_id = last.sequence_id, .recipient_id = last.recipient.recipient_id};
      const size_t got = deliveries.value().size();
      for (PushDelivery& d : deliveries.value()) {
        out.push_back(std::move(d));
      }
      if (got < page) {
        break;
      }
    }
    after = window.value().last;
  }
  return out;
}

namespace {

using Pairs = std::vector<std::pair<int64_t, uint8_t>>;

// (sequence_id, first recipient id byte) of every delivery.
Pairs PairsOf(const std::vector<PushDelivery>& deliveries) {
  Pairs out;
  for (const PushDelivery& d : deliveries) {
    out.emplace_back(d.sequence_id, static_cast<uint8_t>(d.recipient.recipient_id[0]));
  }
  return out;
}

// ---- NotificationService. ----

// verifies: PUSH-253 (the stored hash decides: absent, mismatch, match)
TEST_P(PushConformanceTest, CheckRecipientTellsAbsentMismatchAndMatch) {
  ASSERT_PUSH_OK(RecipientCheck absent, push_->CheckRecipient(Id(1), Secret(1)));
  EXPECT_EQ(absent, RecipientCheck::kAbsent);
  Register(Apns(1, 1));
  ASSERT_PUSH_OK(RecipientCheck match, push_->CheckRecipient(Id(1), Secret(1)));
  EXPECT_EQ(match, RecipientCheck::kMatch);
  ASSERT_PUSH_OK(RecipientCheck mismatch, push_->CheckRecipient(Id(1), Secret(2)));
  EXPECT_EQ(mismatch, RecipientCheck::kSecretMismatch);
}

// verifies: PUSH-255 (insert with no subscriptions; renewed_ns is the store clock of the call)
TEST_P(PushConformanceTest, RegisterInsertsANewRecipientStampedWithTheStoreClock) {
  ASSERT_PUSH_OK(int64_t before, store_->ClockNs());
  const RecipientState state = Register(Http(1, 1));
  ASSERT_PUSH_OK(int64_t after, store_->ClockNs());
  EXPECT_EQ(state.topic_count, 0u);
  EXPECT_EQ(state.channel, 3);
  EXPECT_GE(state.renewed_ns, before);
  EXPECT_LE(state.renewed_ns, after);
}

// verifies: PUSH-255 (a known id with the same hash: delivery replaced, subscriptions untouched)
TEST_P(PushConformanceTest, RegisterAgainReplacesTheDeliveryAndKeepsSubscriptions) {
  const RecipientState first = Register(Http(1, 1));
  MustUpdate(1, 1, {Add(GroupTopic(1)), Add(GroupTopic(2))});
  const RecipientState second = Register(Apns(1, 1, "ffee"));
  EXPECT_EQ(second.topic_count, 2u);
  EXPECT_EQ(second.channel, 1);
  EXPECT_GE(second.renewed_ns, first.renewed_ns);
  // The stored delivery is the new one (the signing key went to NULL): DeleteDead matches it.
  ASSERT_PUSH_OK(std::unique_ptr<PushLock> lock, push_->OpenPushLock());
  ASSERT_PUSH_OK(bool old_gone, lock->DeleteDead(Http(1, 1)));
  EXPECT_FALSE(old_gone);
  ASSERT_PUSH_OK(bool deleted, lock->DeleteDead(Apns(1, 1, "ffee")));
  EXPECT_TRUE(deleted);
}

// verifies: PUSH-253 (a stored id with another hash: PERMISSION_DENIED, nothing changed)
TEST_P(PushConformanceTest, RegisterWithAnotherSecretIsDeniedAndChangesNothing) {
  Register(Http(1, 1));
  ASSERT_PUSH_OK(PushAnswer<RecipientState> answer, push_->RegisterRecipient(Apns(1, 2)));
  EXPECT_EQ(answer.verdict, PushVerdict::kPermissionDenied);
  ASSERT_PUSH_OK(std::unique_ptr<PushLock> lock, push_->OpenPushLock());
  ASSERT_PUSH_OK(bool deleted, lock->DeleteDead(Http(1, 1)));
  EXPECT_TRUE(deleted);  // still exactly the first registration
}

// verifies: PUSH-253 (the race of PUSH.md 4.1: two concurrent first Registers of one id with
// different secrets; exactly one wins, the other is PERMISSION_DENIED)
TEST_P(PushConformanceTest, ConcurrentFirstRegistersWithDifferentSecretsLeaveOneWinner) {
  for (uint8_t id = 1; id <= 10; ++id) {
    std::optional<StoreResult<PushAnswer<RecipientState>>> a;
    std::optional<StoreResult<PushAnswer<RecipientState>>> b;
    std::thread first([&] { a.emplace(push_->RegisterRecipient(Apns(id, 1))); });
    std::thread second([&] { b.emplace(push_->RegisterRecipient(Apns(id, 2))); });
    first.join();
    second.join();
    ASSERT_TRUE(a->ok()) << Describe(*a);
    ASSERT_TRUE(b->ok()) << Describe(*b);
    const std::multiset<PushVerdict> verdicts = {a->value().verdict, b->value().verdict};
    EXPECT_EQ(verdicts,
              (std::multiset<PushVerdict>{PushVerdict::kOk, PushVerdict::kPermissionDenied}));
    const uint8_t winner = a->value().verdict == PushVerdict::kOk ? 1 : 2;
    ASSERT_PUSH_OK(RecipientCheck check, push_->CheckRecipient(Id(id), Secret(winner)));
    EXPECT_EQ(check, RecipientCheck::kMatch);
  }
}

// verifies: PUSH-207 (NOT_FOUND, PERMISSION_DENIED, and a delete that cascades)
TEST_P(PushConformanceTest, UnregisterVerdictsAndCascade) {
  ASSERT_PUSH_OK(PushVerdict unknown, push_->UnregisterRecipient(Id(1), Secret(1)));
  EXPECT_EQ(unknown, PushVerdict::kNotFound);
  Register(Apns(1, 1));
  MustUpdate(1, 1, {Add(GroupTopic(1))});
  ASSERT_PUSH_OK(PushVerdict denied, push_->UnregisterRecipient(Id(1), Secret(2)));
  EXPECT_EQ(denied, PushVerdict::kPermissionDenied);
  ASSERT_PUSH_OK(RecipientCheck still, push_->CheckRecipient(Id(1), Secret(1)));
  EXPECT_EQ(still, RecipientCheck::kMatch);
  ASSERT_PUSH_OK(PushVerdict ok, push_->UnregisterRecipient(Id(1), Secret(1)));
  EXPECT_EQ(ok, PushVerdict::kOk);
  ASSERT_PUSH_OK(RecipientCheck gone, push_->CheckRecipient(Id(1), Secret(1)));
  EXPECT_EQ(gone, RecipientCheck::kAbsent);
  // The subscription went with it: a new recipient under the same id has none.
  EXPECT_EQ(Register(Apns(1, 3)).topic_count, 0u);
  PublishOne(Eligible(GroupTopic(1), "after"));
  EXPECT_TRUE(AllDeliveries().empty());
}

// verifies: PUSH-253 (UpdateSubscriptions: NOT_FOUND, PERMISSION_DENIED, nothing changed)
TEST_P(PushConformanceTest, UpdateSubscriptionsVerdicts) {
  ASSERT_PUSH_OK(auto unknown, Update(1, 1, {Add(GroupTopic(1))}));
  EXPECT_EQ(unknown.verdict, PushVerdict::kNotFound);
  Register(Apns(1, 1));
  ASSERT_PUSH_OK(auto denied, Update(1, 2, {Add(GroupTopic(1))}));
  EXPECT_EQ(denied.verdict, PushVerdict::kPermissionDenied);
  EXPECT_EQ(MustUpdate(1, 1, {}).state.topic_count, 0u);
}

// verifies: PUSH-216 (a new topic starts at the boundary read in the transaction; a re-add keeps
// its start position and takes the new key window and flag)
TEST_P(PushConformanceTest, NewTopicsStartAtTheBoundaryAndReplacementsKeepIt) {
  Register(Apns(1, 1));
  const int64_t before = PublishOne(Eligible(GroupTopic(1), "before"));
  const SubscriptionChange first = MustUpdate(1, 1, {Add(GroupTopic(1))});
  EXPECT_EQ(first.added, 1u);
  const int64_t between = PublishOne(Eligible(GroupTopic(1), "between", /*commit=*/true));
  // Re-added with commits and keys: the start stays below `between`, which is now delivered.
  const SubscriptionChange second =
      MustUpdate(1, 1, {Add(GroupTopic(1), {Key('a')}, /*include_commits=*/true)});
  EXPECT_EQ(second.added, 0u);
  EXPECT_EQ(second.state.topic_count, 1u);
  const int64_t after = PublishOne(Eligible(GroupTopic(1), "after"));
  const std::vector<PushDelivery> deliveries = AllDeliveries();
  EXPECT_EQ(PairsOf(deliveries), (Pairs{{between, 1}, {after, 1}}));
  EXPECT_LT(before, between);
  ASSERT_EQ(deliveries.size(), 2u);
  EXPECT_EQ(deliveries[0].hmac_keys[0], Key('a'));
  EXPECT_EQ(deliveries[0].hmac_epoch_base, 655);
}

// verifies: PUSH-216, PUSH-217 (count = old - deleted + inserted; absent removes and replacements
// do not count; over the limit nothing is applied)
TEST_P(PushConformanceTest, CountLimitAndRollback) {
  Register(Apns(1, 1));
  const SubscriptionChange two = MustUpdate(1, 1, {Add(GroupTopic(1)), Add(WelcomeTopic(1))}, {},
                                            /*max_topics=*/2);
  EXPECT_EQ(two.state.topic_count, 2u);
  EXPECT_EQ(two.added, 2u);
  // A third topic, with a remove of an absent topic and a replacement: 3 > 2, nothing applied.
  ASSERT_PUSH_OK(auto over, Update(1, 1, {Add(GroupTopic(3)), Add(GroupTopic(1), {Key('b')})},
                                   {GroupTopic(9)}, /*max_topics=*/2));
  EXPECT_EQ(over.verdict, PushVerdict::kTopicLimit);
  // A remove of a stored topic makes room in the same call.
  const SubscriptionChange swapped =
      MustUpdate(1, 1, {Add(GroupTopic(3))}, {WelcomeTopic(1), GroupTopic(9)}, 2);
  EXPECT_EQ(swapped.added, 1u);
  EXPECT_EQ(swapped.removed, 1u);
  EXPECT_EQ(swapped.state.topic_count, 2u);
  // The rolled-back replacement left GroupTopic(1) without keys.
  PublishOne(Eligible(GroupTopic(1), "m", false, HashOf("hmac")));
  const std::vector<PushDelivery> deliveries = AllDeliveries();
  ASSERT_EQ(deliveries.size(), 1u);
  EXPECT_FALSE(deliveries[0].hmac_keys[0].has_value());
  EXPECT_FALSE(deliveries[0].hmac_epoch_base.has_value());
  EXPECT_EQ(MustUpdate(1, 1, {}, {GroupTopic(1), GroupTopic(3)}).state.topic_count, 0u);
}

// verifies: PUSH-255 (an empty update is valid and only renews)
TEST_P(PushConformanceTest, AnEmptyUpdateRenews) {
  const RecipientState registered = Register(Apns(1, 1));
  const SubscriptionChange renewed = MustUpdate(1, 1, {});
  EXPECT_GE(renewed.state.renewed_ns, registered.renewed_ns);
  EXPECT_EQ(renewed.state.channel, 1);
  EXPECT_EQ(renewed.added + renewed.removed, 0u);
}

// ---- The dispatcher's reads. ----

// verifies: PUSH-257 (windows: eligible ids only, in (after, ceiling], at most N)
TEST_P(PushConformanceTest, WindowsAreEligibleIdsUnderTheCeiling) {
  PublishItem plain = test_data::Item(GroupTopic(1), "not eligible");
  const std::vector<int64_t> ids =
      Publish({Eligible(GroupTopic(1), "a"), plain, Eligible(GroupTopic(1), "b"),
               Eligible(GroupTopic(2), "c")});
  ASSERT_EQ(ids.size(), 4u);
  ASSERT_PUSH_OK(int64_t boundary, push_->ClosedBoundary());
  EXPECT_GE(boundary, ids[3]);
  ASSERT_PUSH_OK(PushWindow two, push_->NextPushWindow(0, kNoCeiling, 2));
  EXPECT_EQ(two.first, ids[0]);
  EXPECT_EQ(two.last, ids[2]);
  EXPECT_EQ(two.envelopes, 2u);
  // The ceiling is hard: never above it.
  ASSERT_PUSH_OK(PushWindow capped, push_->NextPushWindow(ids[0], ids[2], 10));
  EXPECT_EQ(capped.first, ids[2]);
  EXPECT_EQ(capped.last, ids[2]);
  EXPECT_EQ(capped.envelopes, 1u);
  ASSERT_PUSH_OK(PushWindow none, push_->NextPushWindow(ids[3], kNoCeiling, 10));
  EXPECT_EQ(none.envelopes, 0u);
  ASSERT_PUSH_OK(PushWindow between, push_->NextPushWindow(ids[0], ids[1], 10));
  EXPECT_EQ(between.envelopes, 0u);
  ASSERT_PUSH_OK(bool above, push_->EligibleAbove(ids[2]));
  EXPECT_TRUE(above);
  ASSERT_PUSH_OK(bool none_above, push_->EligibleAbove(ids[3]));
  EXPECT_FALSE(none_above);
}

// verifies: PUSH-257 (keyset paging on (sequence_id, recipient_id): no loss, no repeat, also when
// a page ends inside one envelope's recipients)
TEST_P(PushConformanceTest, PagingLosesAndRepeatsNothing) {
  for (uint8_t r = 1; r <= 5; ++r) {
    Register(Apns(r, r));
    MustUpdate(r, r, {Add(GroupTopic(1))});
  }
  Register(Apns(9, 9));
  MustUpdate(9, 9, {Add(GroupTopic(2))});
  const std::vector<int64_t> ids = Publish(
      {Eligible(GroupTopic(1), "x"), Eligible(GroupTopic(2), "y"), Eligible(GroupTopic(1), "z")});
  Pairs expected;
  for (int64_t id : {ids[0], ids[2]}) {
    for (uint8_t r = 1; r <= 5; ++r) {
      expected.emplace_back(id, r);
    }
  }
  expected.emplace_back(ids[1], 9);
  std::sort(expected.begin(), expected.end());
  for (uint32_t page : {1u, 3u, 4u, 1000u}) {
    EXPECT_EQ(PairsOf(AllDeliveries(0, 1024, page)), expected) << "page " << page;
    EXPECT_EQ(PairsOf(AllDeliveries(0, 1, page)), expected)
        << "one-envelope windows, page " << page;
  }
  // A page stays within its window.
  ASSERT_PUSH_OK(PushWindow first, push_->NextPushWindow(0, kNoCeiling, 1));
  ASSERT_PUSH_OK(std::vector<PushDelivery> all, push_->PushDeliveries(first, std::nullopt, 100));
  EXPECT_EQ(all.size(), 5u);
}

// verifies: PUSH-257 (commits and proposals only with include_commits; others ignore the flag)
TEST_P(PushConformanceTest, CommitsReachOnlyIncludeCommitsSubscriptions) {
  Register(Apns(1, 1));
  Register(Apns(2, 2));
  MustUpdate(1, 1, {Add(GroupTopic(1), {}, /*include_commits=*/true)});
  MustUpdate(2, 2, {Add(GroupTopic(1), {}, /*include_commits=*/false)});
  const std::vector<int64_t> ids =
      Publish({Eligible(GroupTopic(1), "commit", /*commit=*/true), Eligible(GroupTopic(1), "app")});
  const std::vector<PushDelivery> deliveries = AllDeliveries();
  EXPECT_EQ(PairsOf(deliveries), (Pairs{{ids[0], 1}, {ids[1], 1}, {ids[1], 2}}));
  ASSERT_FALSE(deliveries.empty());
  EXPECT_TRUE(deliveries[0].is_commit_or_proposal);
}

// verifies: PUSH-257 (the joined recipient and envelope values a delivery carries)
TEST_P(PushConformanceTest, DeliveriesCarryTheRecipientAndTheEnvelope) {
  Register(Http(1, 1));
  MustUpdate(1, 1, {Add(WelcomeTopic(4))});
  const int64_t id = PublishOne(Eligible(WelcomeTopic(4), "welcome"));
  ASSERT_PUSH_OK(std::optional<StoredEnvelope> row, store_->Get(id));
  ASSERT_TRUE(row.has_value());
  const std::vector<PushDelivery> deliveries = AllDeliveries();
  ASSERT_EQ(deliveries.size(), 1u);
  const PushDelivery& d = deliveries[0];
  EXPECT_EQ(d.sequence_id, id);
  EXPECT_EQ(d.server_ns, row->meta.server_ns);
  EXPECT_EQ(d.topic, WelcomeTopic(4));
  EXPECT_FALSE(d.sender_hmac.has_value());
  EXPECT_EQ(d.recipient, Http(1, 1));
}

// verifies: PUSH-230 (the payload is read only when suppression could apply: a sender HMAC and a
// key window)
TEST_P(PushConformanceTest, PayloadOnlyWithSenderHmacAndKeyWindow) {
  Register(Apns(1, 1));
  Register(Apns(2, 2));
  MustUpdate(1, 1, {Add(GroupTopic(1), {Key('a'), Key('b'), Key('c')}, false, 654)});
  MustUpdate(2, 2, {Add(GroupTopic(1), {}, false, 654)});  // no keys: no epoch base stored
  const Hash hmac = HashOf("sender");
  const std::vector<int64_t> ids =
      Publish({Eligible(GroupTopic(1), "with hmac", false, hmac), Eligible(GroupTopic(1), "none")});
  const std::vector<PushDelivery> d = AllDeliveries();
  ASSERT_EQ(PairsOf(d), (Pairs{{ids[0], 1}, {ids[0], 2}, {ids[1], 1}, {ids[1], 2}}));
  EXPECT_EQ(d[0].payload, "with hmac");
  EXPECT_EQ(d[0].sender_hmac, hmac);
  EXPECT_EQ(d[0].hmac_epoch_base, 654);
  EXPECT_EQ(d[0].hmac_keys[2], Key('c'));
  EXPECT_EQ(d[1].payload, "");  // no key window
  EXPECT_FALSE(d[1].hmac_epoch_base.has_value());
  EXPECT_EQ(d[2].payload, "");  // no sender HMAC
  EXPECT_FALSE(d[2].sender_hmac.has_value());
}

// ---- The lock connection. ----

// verifies: PUSH.md 8.2 step 2 (compare-and-set: lost when last_written is stale, never lower)
TEST_P(PushConformanceTest, CursorCompareAndSet) {
  ASSERT_PUSH_OK(std::unique_ptr<PushLock> lock, push_->OpenPushLock());
  ASSERT_PUSH_OK(bool acquired, lock->TryAcquire());
  EXPECT_TRUE(acquired);
  ASSERT_PUSH_OK(bool alive, lock->Ping());
  EXPECT_TRUE(alive);
  ASSERT_PUSH_OK(int64_t start, lock->ReadCursor());
  EXPECT_EQ(start, 0);
  ASSERT_PUSH_OK(bool moved, lock->AdvanceCursor(0, 5));
  EXPECT_TRUE(moved);
  ASSERT_PUSH_OK(bool stale, lock->AdvanceCursor(0, 7));
  EXPECT_FALSE(stale);
  ASSERT_PUSH_OK(bool lower, lock->AdvanceCursor(5, 3));
  EXPECT_FALSE(lower);
  ASSERT_PUSH_OK(bool same, lock->AdvanceCursor(5, 5));
  EXPECT_FALSE(same);
  ASSERT_PUSH_OK(int64_t now, lock->ReadCursor());
  EXPECT_EQ(now, 5);
}

// verifies: PUSH-234 (deleted only when all five values match; subscriptions cascade)
TEST_P(PushConformanceTest, DeleteDeadOnlyWhenAllFiveValuesMatch) {
  Register(Http(1, 1));
  MustUpdate(1, 1, {Add(GroupTopic(1))});
  ASSERT_PUSH_OK(std::unique_ptr<PushLock> lock, push_->OpenPushLock());
  std::vector<PushRecipient> differing(5, Http(1, 1));
  differing[0].recipient_id = Id(2);
  differing[1].channel = 2;
  differing[2].delivery = "https://hooks.example.org/other";
  differing[3].signing_key = std::nullopt;
  differing[4].secret_hash = Secret(2);
  for (size_t i = 0; i < differing.size(); ++i) {
    ASSERT_PUSH_OK(bool deleted, lock->DeleteDead(differing[i]));
    EXPECT_FALSE(deleted) << "value " << i;
  }
  PushRecipient other_key = Http(1, 1);
  other_key.signing_key = std::string(16, 'x');
  ASSERT_PUSH_OK(bool wrong_key, lock->DeleteDead(other_key));
  EXPECT_FALSE(wrong_key);
  ASSERT_PUSH_OK(bool deleted, lock->DeleteDead(Http(1, 1)));
  EXPECT_TRUE(deleted);
  PublishOne(Eligible(GroupTopic(1), "after"));
  EXPECT_TRUE(AllDeliveries().empty());
  // A recipient without a signing key matches a NULL one (IS NOT DISTINCT FROM).
  Register(Apns(3, 3));
  ASSERT_PUSH_OK(bool apns, lock->DeleteDead(Apns(3, 3)));
  EXPECT_TRUE(apns);
}

// verifies: PUSH-226 (deleted when renewed_ns < store now - ttl, by each recipient's renewal)
TEST_P(PushConformanceTest, DeleteExpiredByRenewalTime) {
  const RecipientState old_state = Register(Apns(1, 1));
  MustUpdate(1, 1, {Add(GroupTopic(1))});
  const int64_t old_renewal = MustUpdate(1, 1, {}).state.renewed_ns;
  EXPECT_GE(old_renewal, old_state.renewed_ns);
  ASSERT_PUSH_OK(std::unique_ptr<PushLock> lock, push_->OpenPushLock());
  ASSERT_PUSH_OK(uint64_t none, lock->DeleteExpired(3600));
  EXPECT_EQ(none, 0u);
  ASSERT_PUSH_OK(uint64_t huge, lock->DeleteExpired(std::numeric_limits<uint64_t>::max()));
  EXPECT_EQ(huge, 0u);
  // Wait (on the store clock) until the first renewal is more than a second old.
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (;;) {
    ASSERT_PUSH_OK(int64_t now, store_->ClockNs());
    if (now > old_renewal + 1100000000) {
      break;
    }
    ASSERT_LT(std::chrono::steady_clock::now(), give_up);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  Register(Apns(2, 2));
  ASSERT_PUSH_OK(uint64_t one, lock->DeleteExpired(1));
  EXPECT_EQ(one, 1u);
  ASSERT_PUSH_OK(RecipientCheck first, push_->CheckRecipient(Id(1), Secret(1)));
  EXPECT_EQ(first, RecipientCheck::kAbsent);
  ASSERT_PUSH_OK(RecipientCheck second, push_->CheckRecipient(Id(2), Secret(2)));
  EXPECT_EQ(second, RecipientCheck::kMatch);
  // Its subscription went with it.
  PublishOne(Eligible(GroupTopic(1), "after"));
  EXPECT_TRUE(AllDeliveries().empty());
}

}  // namespace

}  // namespace xb::store
