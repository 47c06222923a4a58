// The shared, cached signing credentials of ATTACH.md 6.4 (ATCH-028) and the lifetime E of each
// presigned request:
//
//   remaining = credential expiry - now  (whole seconds, floor; infinite without an expiry)
//   E         = min(presign_ttl_seconds, 3600, remaining)
//
// A request reuses the cached credential while its E is at least 300. Otherwise it asks for a
// refresh; concurrent requests share one refresh, and a request that finds a refresh already done
// by another uses its answer. After the provider answers, the clock is read again and E computed
// again; below 300, or a failed refresh, fails the request (a failed refresh never falls back to
// the credential it replaces). The clock reading used for E is the signing time T.
//
// Threads: Acquire may be called from any thread at once. The fast path reads an atomic
// generation and a per-thread copy of the current credential: no lock and no allocation. The
// refresh is started through `Fetcher`, whose callback may run on any thread.
#pragma once

#include <atomic>
#include <boost/asio/awaitable.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "attach/credentials.h"

namespace xb::attach {

class CredentialCache {
 public:
  // Starts one fetch from the provider and calls `done` exactly once with its answer, on any
  // thread. Never called again before `done` ran.
  using Fetcher = std::function<void(std::function<void(CredentialResult)> done)>;

  struct Options {
    uint32_t presign_ttl_seconds = 900;
    std::function<WallClock::time_point()> now = [] { return WallClock::now(); };
  };

  CredentialCache(Options options, Fetcher fetcher);
  ~CredentialCache();
  CredentialCache(const CredentialCache&) = delete;
  CredentialCache& operator=(const CredentialCache&) = delete;

  struct Lease {
    std::shared_ptr<const AwsCredentials> credentials;
    WallClock::time_point signing_time;  // T
    uint32_t expires_seconds = 0;        // E, 300..3600
  };

  // A credential with E >= 300 and its T and E, or why none (kUnavailable when the refresh failed
  // or left less than 300 s; the provider's kind otherwise). Suspends only for a refresh; resumes
  // on the caller's executor.
  boost::asio::awaitable<Expected<Lease, CredentialError>> Acquire();

  // Fails every request waiting for a refresh (kUnavailable) and every later one; for shutdown,
  // before the fetcher's executor goes away. Idempotent.
  void Close();

  // Fetches started so far (tests).
  uint64_t fetches() const { return fetches_.load(std::memory_order_relaxed); }

  // E for `credentials` at `now`, or 0 when less than 300 would be left (pure; tests).
  static uint32_t LifetimeAt(const AwsCredentials& credentials, WallClock::time_point now,
                             uint32_t presign_ttl_seconds);

 private:
  using SharedResult = Expected<std::shared_ptr<const AwsCredentials>, CredentialError>;
  using Waiter = std::function<void(SharedResult)>;
  struct Snapshot {
    uint64_t generation = 0;
    std::shared_ptr<const AwsCredentials> credentials;
  };

  Snapshot Current();
  // Registers `waiter` for the refresh after `seen_generation`; starts it when none runs. When a
  // newer generation already exists, answers the waiter at once with it.
  void Refresh(uint64_t seen_generation, Waiter waiter);
  void OnFetched(CredentialResult result);

  // Const after construction.
  const Options options_;
  const Fetcher fetcher_;
  const uint64_t instance_id_;  // tells this cache's per-thread copies from another's

  std::atomic<uint64_t> generation_{0};  // bumped under mu_ after current_ changed
  std::atomic<uint64_t> fetches_{0};
  std::mutex mu_;
  std::shared_ptr<const AwsCredentials> current_;  // guarded by mu_
  bool fetching_ = false;                          // guarded by mu_
  bool closed_ = false;                            // guarded by mu_
  std::vector<Waiter> waiters_;                    // guarded by mu_
};

}  // namespace xb::attach
