// The push side of the embedded engine (store/push.h, PUSH.md 3, 4, 8, 11). Writes run on the
// store's single writer (one BEGIN IMMEDIATE transaction each, so a Register, an
// UpdateSubscriptions and a publish never interleave); reads lease a pooled reader for one read
// transaction. The closed allocation boundary is the last committed id (STORE.md 8), read inside
// the writer's transaction.
//
// Threading: as PushStore. Both classes keep references to the store's writer and readers: the
// SqliteStore that owns the SqlitePushStore outlives every call, and every PushLock it opened.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "store/push.h"
#include "store/sqlite/reader_pool.h"
#include "store/sqlite/writer.h"

namespace xb::store::sqlite {

class SqlitePushStore final : public PushStore {
 public:
  // `clock_ns` is the store clock (the one that stamps server_ns).
  SqlitePushStore(Writer& writer, ReaderPool& readers, uint32_t statement_timeout_ms,
                  int64_t (*clock_ns)())
      : writer_(writer),
        readers_(readers),
        statement_timeout_ms_(statement_timeout_ms),
        clock_ns_(clock_ns) {}

  StoreResult<RecipientCheck> CheckRecipient(const std::string& recipient_id,
                                             const Hash& secret_hash) override;
  StoreResult<PushAnswer<RecipientState>> RegisterRecipient(
      const PushRecipient& recipient) override;
  StoreResult<PushVerdict> UnregisterRecipient(const std::string& recipient_id,
                                               const Hash& secret_hash) override;
  StoreResult<PushAnswer<SubscriptionChange>> UpdateSubscriptions(
      const std::string& recipient_id, const Hash& secret_hash,
      const std::vector<SubscriptionAdd>& adds, const std::vector<std::string>& removes,
      uint32_t max_topics) override;

  // The lock is always granted (one process per database file); its writes go through the writer.
  StoreResult<std::unique_ptr<PushLock>> OpenPushLock() override;
  StoreResult<int64_t> ClosedBoundary() override;
  StoreResult<bool> EligibleAbove(int64_t boundary) override;
  StoreResult<PushWindow> NextPushWindow(int64_t after, int64_t ceiling,
                                         uint32_t max_envelopes) override;
  StoreResult<std::vector<PushDelivery>> PushDeliveries(const PushWindow& window,
                                                        const std::optional<DeliveryKey>& after,
                                                        uint32_t limit) override;

 private:
  Writer& writer_;
  ReaderPool& readers_;
  const uint32_t statement_timeout_ms_;
  int64_t (*const clock_ns_)();
};

}  // namespace xb::store::sqlite
