// An in-memory store::Store whose push() side is enough for the dispatcher's tests: envelopes,
// subscriptions, recipients, the cursor, the closed boundary and one connection-scoped lock, with
// switches that break the lock connection. The delivery condition of PUSH.md 8.3 is applied as
// the engines apply it. Everything else of Store answers an error. Thread-safe (one mutex).
#pragma once

#include <algorithm>
#include <array>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "store/push.h"
#include "store/store.h"

namespace xb::push::testing {

inline store::StoreError FakeError(const char* what) {
  store::StoreError error;
  error.kind = store::ErrorKind::kConnection;
  error.message = what;
  return error;
}

struct FakeEnvelope {
  int64_t sequence_id = 0;
  std::string topic;
  bool eligible = true;
  bool is_commit_or_proposal = false;
  int64_t server_ns = 0;
  std::optional<store::Hash> sender_hmac;
  std::string payload;
};

struct FakeSubscription {
  std::string recipient_id;
  std::string topic;
  int64_t since = 0;
  bool include_commits = false;
  std::optional<int64_t> hmac_epoch_base;
  std::array<std::optional<std::string>, 3> hmac_keys;
};

struct FakePushData {
  std::mutex mu;
  std::vector<FakeEnvelope> envelopes;  // ascending ids
  std::vector<FakeSubscription> subscriptions;
  std::map<std::string, store::PushRecipient> recipients;
  int64_t cursor = 0;
  int64_t boundary = 0;
  bool lock_held = false;
  bool lock_broken = false;  // every call on a lock connection fails
  uint64_t expire_next = 0;  // what the next DeleteExpired deletes (a count only)
  int retention_passes = 0;
  int locks_opened = 0;
};

class FakePushLock : public store::PushLock {
 public:
  explicit FakePushLock(std::shared_ptr<FakePushData> data) : data_(std::move(data)) {}
  ~FakePushLock() override {
    std::lock_guard lock(data_->mu);
    if (mine_) {
      data_->lock_held = false;
    }
  }
  store::StoreResult<bool> TryAcquire() override {
    std::lock_guard lock(data_->mu);
    if (data_->lock_broken) {
      return FakeError("broken");
    }
    if (!mine_ && !data_->lock_held) {
      data_->lock_held = mine_ = true;
    }
    return mine_;
  }
  store::StoreResult<bool> Ping() override {
    std::lock_guard lock(data_->mu);
    return data_->lock_broken ? store::StoreResult<bool>(FakeError("broken")) : true;
  }
  store::StoreResult<int64_t> ReadCursor() override {
    std::lock_guard lock(data_->mu);
    return data_->lock_broken ? store::StoreResult<int64_t>(FakeError("broken")) : data_->cursor;
  }
  store::StoreResult<bool> AdvanceCursor(int64_t last_written, int64_t next) override {
    std::lock_guard lock(data_->mu);
    if (data_->lock_broken) {
      return FakeError("broken");
    }
    if (data_->cursor != last_written || data_->cursor >= next) {
      return false;
    }
    data_->cursor = next;
    return true;
  }
  store::StoreResult<bool> DeleteDead(const store::PushRecipient& used) override {
    std::lock_guard lock(data_->mu);
    if (data_->lock_broken) {
      return FakeError("broken");
    }
    auto it = data_->recipients.find(used.recipient_id);
    if (it == data_->recipients.end() || !(it->second == used)) {
      return false;
    }
    data_->recipients.erase(it);
    std::erase_if(data_->subscriptions,
                  [&](const FakeSubscription& s) { return s.recipient_id == used.recipient_id; });
    return true;
  }
  store::StoreResult<uint64_t> DeleteExpired(uint64_t) override {
    std::lock_guard lock(data_->mu);
    if (data_->lock_broken) {
      return FakeError("broken");
    }
    ++data_->retention_passes;
    return std::exchange(data_->expire_next, 0);
  }

 private:
  std::shared_ptr<FakePushData> data_;
  bool mine_ = false;
};

class FakePushStore : public store::PushStore {
 public:
  explicit FakePushStore(std::shared_ptr<FakePushData> data) : data_(std::move(data)) {}

  store::StoreResult<store::RecipientCheck> CheckRecipient(const std::string&,
                                                           const store::Hash&) override {
    return FakeError("not in this fake");
  }
  store::StoreResult<store::PushAnswer<store::RecipientState>> RegisterRecipient(
      const store::PushRecipient&) override {
    return FakeError("not in this fake");
  }
  store::StoreResult<store::PushVerdict> UnregisterRecipient(const std::string&,
                                                             const store::Hash&) override {
    return FakeError("not in this fake");
  }
  store::StoreResult<store::PushAnswer<store::SubscriptionChange>> UpdateSubscriptions(
      const std::string&, const store::Hash&, const std::vector<store::SubscriptionAdd>&,
      const std::vector<std::string>&, uint32_t) override {
    return FakeError("not in this fake");
  }

  store::StoreResult<std::unique_ptr<store::PushLock>> OpenPushLock() override {
    std::lock_guard lock(data_->mu);
    if (data_->lock_broken) {
      return FakeError("broken");
    }
    ++data_->locks_opened;
    return std::unique_ptr<store::PushLock>(std::make_unique<FakePushLock>(data_));
  }
  store::StoreResult<int64_t> ClosedBoundary() override {
    std::lock_guard lock(data_->mu);
    return data_->boundary;
  }
  store::StoreResult<bool> EligibleAbove(int64_t boundary) override {
    std::lock_guard lock(data_->mu);
    return std::any_of(
        data_->envelopes.begin(), data_->envelopes.end(),
        [&](const FakeEnvelope& e) { return e.eligible && e.sequence_id > boundary; });
  }
  store::StoreResult<store::PushWindow> NextPushWindow(int64_t after, int64_t ceiling,
                                                       uint32_t max_envelopes) override {
    std::lock_guard lock(data_->mu);
    store::PushWindow window;
    for (const FakeEnvelope& e : data_->envelopes) {
      if (!e.eligible || e.sequence_id <= after || e.sequence_id > ceiling) {
        continue;
      }
      if (window.envelopes == 0) {
        window.first = e.sequence_id;
      }
      window.last = e.sequence_id;
      if (++window.envelopes == max_envelopes) {
        break;
      }
    }
    return window;
  }
  store::StoreResult<std::vector<store::PushDelivery>> PushDeliveries(
      const store::PushWindow& window, const std::optional<store::DeliveryKey>& after,
      uint32_t limit) override {
    std::lock_guard lock(data_->mu);
    std::vector<store::PushDelivery> all;
    for (const FakeEnvelope& e : data_->envelopes) {
      if (!e.eligible || e.sequence_id < window.first || e.sequence_id > window.last) {
        continue;
      }
      for (const FakeSubscription& s : data_->subscriptions) {
        auto r = data_->recipients.find(s.recipient_id);
        if (s.topic != e.topic || e.sequence_id <= s.since || r == data_->recipients.end() ||
            (e.is_commit_or_proposal && !s.include_commits)) {
          continue;
        }
        all.push_back(store::PushDelivery{.sequence_id = e.sequence_id,
                                          .server_ns = e.server_ns,
                                          .topic = e.topic,
                                          .is_commit_or_proposal = e.is_commit_or_proposal,
                                          .sender_hmac = e.sender_hmac,
                                          .payload = e.payload,
                                          .recipient = r->second,
                                          .hmac_epoch_base = s.hmac_epoch_base,
                                          .hmac_keys = s.hmac_keys});
      }
    }
    auto key = [](const store::PushDelivery& d) {
      return std::tie(d.sequence_id, d.recipient.recipient_id);
    };
    std::sort(all.begin(), all.end(),
              [&](const auto& a, const auto& b) { return key(a) < key(b); });
    std::vector<store::PushDelivery> page;
    for (store::PushDelivery& d : all) {
      if (after && !(std::tie(after->sequence_id, after->recipient_id) < key(d))) {
        continue;
      }
      if (page.size() == limit) {
        break;
      }
      page.push_back(std::move(d));
    }
    return page;
  }

 private:
  std::shared_ptr<FakePushData> data_;
};

// A Store that has only its push side.
class FakeStore : public store::Store {
 public:
  explicit FakeStore(std::shared_ptr<FakePushData> data) : push_(std::move(data)) {}
  store::PushStore* push() override { return &push_; }

  store::StoreResult<int64_t> ClockNs() override { return FakeError("no"); }
  store::StoreResult<std::vector<std::optional<store::EnvelopeMeta>>> FindDuplicates(
      const std::vector<std::pair<std::string, store::Hash>>&) override {
    return FakeError("no");
  }
  store::StoreResult<std::vector<store::StoredEnvelope>> History(const std::string&) override {
    return FakeError("no");
  }
  store::StoreResult<store::CommitPublishResult> CommitPublish(
      const store::CommitPublishRequest&) override {
    return FakeError("no");
  }
  store::StoreResult<store::QueryPage> Query(const std::vector<store::TopicCursor>&, uint32_t,
                                             uint64_t) override {
    return FakeError("no");
  }
  store::StoreResult<store::QueryPage> QueryBefore(const std::string&, int64_t, uint32_t,
                                                   uint64_t) override {
    return FakeError("no");
  }
  store::StoreResult<std::vector<store::StoredEnvelope>> Newest(const std::vector<std::string>&,
                                                                bool) override {
    return FakeError("no");
  }
  store::StoreResult<std::vector<store::StoredEnvelope>> NewestOnPrimary(
      const std::vector<std::string>&, bool) override {
    return FakeError("no");
  }
  store::StoreResult<std::vector<std::optional<std::string>>> InboxIds(
      const std::vector<store::IdentifierKey>&) override {
    return FakeError("no");
  }
  store::StoreResult<std::optional<store::StoredEnvelope>> Get(int64_t) override {
    return FakeError("no");
  }
  store::StoreResult<store::BoundaryAdvance> AdvanceBoundary() override { return FakeError("no"); }
  store::StoreResult<std::unique_ptr<store::TailReader>> OpenTailReader() override {
    return FakeError("no");
  }
  store::StoreResult<std::vector<int64_t>> Heads(const std::vector<std::string>&) override {
    return FakeError("no");
  }
  store::StoreResult<std::vector<std::vector<store::StoredEnvelope>>> CatchUp(
      const std::vector<store::CatchUpRange>&, uint32_t, uint64_t) override {
    return FakeError("no");
  }

 private:
  FakePushStore push_;
};

}  // namespace xb::push::testing
