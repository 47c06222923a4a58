// Per-caller quotas (issue 32; docs/configuration.md, Per-caller quotas): token buckets per
// principal (the API key's name or the JWT's subject) and per client address, for publishing (one
// token per envelope, at least one per request) and for opening streams (one token per open).
// Off unless configured ([quotas]); a refusal is RESOURCE_EXHAUSTED with a google.rpc.RetryInfo
// in its details.
//
// Threading: const after construction except the buckets, which lock per shard; Charge* may be
// called from every worker thread at once and never suspend. Nothing about a caller is logged or
// labelled (OPS-014): refusals are counted by the request's gRPC code like any other answer.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "api/quota_buckets.h"
#include "base/status.h"
#include "config/config.h"
#include "rpc/call.h"

namespace xb::api {

// The keys a call is charged under, copied out of the call so that a coroutine can hold them
// across suspensions. Empty strings: that kind of quota does not apply to the call.
struct QuotaCaller {
  std::string principal;  // a kind byte ('k' API key, 's' JWT subject) and the name
  std::string address;    // the 16 bytes of net::PeerAddress
};

class Quotas {
 public:
  using Clock = QuotaBuckets::Clock;
  // Buckets kept per quota at most (QuotaBuckets): about 200 bytes each.
  static constexpr size_t kMaxBuckets = 65536;

  // From a checked [quotas] table (every burst at least 1 where the rate is set).
  explicit Quotas(const config::QuotasConfig& config, size_t max_buckets = kMaxBuckets);

  bool enabled() const { return enabled_; }

  // The keys `call` is charged under; an empty caller (nothing copied) when no quota is on.
  QuotaCaller CallerOf(const rpc::Call& call) const;

  // implements: issue 32 (quotas). OK when every applicable bucket had the tokens (and they are
  // taken); else RESOURCE_EXHAUSTED naming the quota, with the wait until its bucket would have
  // them, and nothing taken from any bucket.
  Status ChargePublish(const QuotaCaller& caller, uint32_t envelopes,
                       Clock::time_point now = Clock::now());
  Status ChargeStreamOpen(const QuotaCaller& caller, Clock::time_point now = Clock::now());

 private:
  struct Pair {
    std::unique_ptr<QuotaBuckets> principal;  // nullptr: off
    std::unique_ptr<QuotaBuckets> address;
  };
  Status Charge(Pair& pair, const QuotaCaller& caller, double tokens, Clock::time_point now,
                std::string_view what);

  const bool enabled_;
  Pair publish_;
  Pair stream_opens_;
};

// A stream handler's first step: charges `call`'s stream open (OK when `quotas` is nullptr). On
// refusal the handler finishes the call with the status before it registers anything.
Status ChargeStreamOpen(Quotas* quotas, const rpc::Call& call);

// RESOURCE_EXHAUSTED with `message` and, in its details (grpc-status-details-bin), a
// google.rpc.Status holding one google.rpc.RetryInfo{retry_delay = delay}.
Status QuotaExhausted(std::string message, std::chrono::nanoseconds delay);

// The retry_delay of a status made by QuotaExhausted; nullopt for any other status.
std::optional<std::chrono::nanoseconds> RetryDelayOf(const Status& status);

}  // namespace xb::api
