// The push side of the PostgreSQL engine (store/push.h, PUSH.md 3, 4, 8, 11). NotificationService
// calls run on the primary pool (OPS-009); the dispatcher's reads (ClosedBoundary, EligibleAbove,
// NextPushWindow, PushDeliveries) on the read database; the lock, the cursor and recipient
// deletions on the PushLock's own primary connection (application_name "xmtp-backend push"),
// outside the pools, so that the session-scoped advisory lock (0, 3) lives exactly as long as it.
//
// Threading: as PushStore. The pools belong to the PostgresStore, which outlives this object; a
// PushLock owns its connection and may outlive neither.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "store/postgres/pool.h"
#include "store/push.h"

namespace xb::store::postgres {

class PostgresPushStore final : public PushStore {
 public:
  struct Options {
    std::string primary_url;  // database.url, for the lock connection
    int statement_timeout_ms = 5000;
  };
  PostgresPushStore(ConnectionPool& primary, ConnectionPool& read, Options options)
      : primary_(primary), read_(read), options_(std::move(options)) {}

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

  // Opens the dedicated connection (bounded by the statement timeout); the lock is not taken yet.
  StoreResult<std::unique_ptr<PushLock>> OpenPushLock() override;
  StoreResult<int64_t> ClosedBoundary() override;
  StoreResult<bool> EligibleAbove(int64_t boundary) override;
  StoreResult<PushWindow> NextPushWindow(int64_t after, int64_t ceiling,
                                         uint32_t max_envelopes) override;
  StoreResult<std::vector<PushDelivery>> PushDeliveries(const PushWindow& window,
                                                        const std::optional<DeliveryKey>& after,
                                                        uint32_t limit) override;

 private:
  ConnectionPool& primary_;
  ConnectionPool& read_;  // the replica's pool when configured, else the primary's
  const Options options_;
};

}  // namespace xb::store::postgres
