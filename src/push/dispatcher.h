// The push dispatcher (spec/PUSH.md section 8, 11): while it holds the deployment's dispatcher
// lock it turns settled push-eligible envelopes into provider attempts, at least once per
// (envelope, subscription), and keeps the low-watermark cursor and the recipient tables.
//
// Ownership and threads: the server owns one Dispatcher when a channel is configured. Start()
// starts its own thread running its own io_context; the channel senders are made on that
// executor by the ChannelFactory and live and die there. Blocking store calls never run on that
// thread: the lock connection's calls run on a one-thread pool (a PushLock is used by one thread
// at a time), the other reads on a small pool of their own. Start, Drain and Stop are called from
// one controlling thread (the server's); they block, Drain until the lock is released or its
// deadline passed, Stop until the thread has ended.
//
// Telemetry: xmtp_push_dispatcher (1 while the lock is held), xmtp_push_deliveries_total (once
// per delivery, its final outcome), xmtp_push_recipients_total{expired,dead}. Logs carry events
// and counts only, never recipient ids, tokens, URLs or topics (OPS-014).
#pragma once

#include <atomic>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "base/offload_pool.h"
#include "push/channel.h"
#include "store/store.h"
#include "telemetry/logger.h"
#include "telemetry/metrics.h"

namespace xb::push {

// Fixed values of PUSH.md 12 (the "choice" ones are this project's).
inline constexpr uint32_t kWindowEnvelopes = 1024;
inline constexpr uint32_t kPageDeliveries = 1000;
inline constexpr size_t kQueuedDeliveries = 10000;
inline constexpr uint32_t kInFlightPerChannel = 256;
inline constexpr std::chrono::seconds kAttemptDeadline{10};
inline constexpr std::chrono::seconds kRetentionInterval{3600};
// How long an ownership loss waits for in-flight attempts (PUSH.md 8.1).
inline constexpr std::chrono::seconds kLossWait{10};

struct DispatcherOptions {
  std::chrono::milliseconds poll_interval{100};  // streams.poll_interval_ms
  uint32_t max_attempts = 3;                     // push.max_attempts
  uint64_t recipient_ttl_seconds = 2592000;      // push.recipient_ttl_seconds
};

using ChannelSenders = std::map<Channel, std::unique_ptr<ChannelSender>>;
// Makes the configured channels' senders on the dispatcher's executor. A channel absent from the
// map is not configured here: its deliveries end `failed` without a request.
using ChannelFactory = std::function<ChannelSenders(boost::asio::any_io_executor)>;

class Dispatcher {
 public:
  // `store` (with a non-null push()), `metrics` and `logger` outlive the Dispatcher.
  // `request_boundary_advance` asks the allocation-boundary task to advance (PUSH.md 8.2 step 4);
  // it is called on a dispatcher thread and must be quick and thread-safe.
  Dispatcher(store::Store& store, ChannelFactory channels, telemetry::Metrics& metrics,
             telemetry::Logger& logger, std::function<void()> request_boundary_advance,
             DispatcherOptions options);
  ~Dispatcher();  // Stop()
  Dispatcher(const Dispatcher&) = delete;
  Dispatcher& operator=(const Dispatcher&) = delete;

  // Starts the thread: election, then the tick loop while holding. Once.
  void Start();
  // PUSH.md 8.6: stops loading at once, lets queued and in-flight attempts (retries included)
  // run until `deadline`, persists the cursor, releases the lock. Blocks until the lock is
  // released (or was never held), at most until a moment after `deadline`.
  void Drain(std::chrono::steady_clock::time_point deadline);
  // Ends the thread: a holder still running persists its cursor and releases the lock at once,
  // attempts in flight end within their own deadline. Joins. Idempotent; safe before Start.
  void Stop();
  // A commit stored rows (the store's commit listener, through the server): a holder loads up to
  // the boundary now instead of at its next tick. Thread-safe, never blocks; wake-ups coalesce.
  // A no-op before Start and from Stop on.
  void Wake();

 private:
  struct Holding;
  class Loop;

  void SignalDone();

  store::Store& store_;
  ChannelFactory channels_;
  telemetry::Metrics& metrics_;
  telemetry::Logger& logger_;
  std::function<void()> request_boundary_advance_;
  const DispatcherOptions options_;

  // The lock connection's calls, one at a time; the other store reads.
  OffloadPool lock_pool_;
  OffloadPool read_pool_;
  std::unique_ptr<boost::asio::io_context> io_;
  std::unique_ptr<Loop> loop_;  // lives on io_'s thread
  std::thread thread_;
  bool stopped_ = false;  // controlling thread only

  std::atomic<bool> wake_posted_{false};  // a wake-up is posted and not yet run
  std::mutex wake_mu_;
  bool accepting_wakes_ = false;  // guarded by wake_mu_: io_ and loop_ exist and run

  std::mutex mu_;
  std::condition_variable done_cv_;
  bool done_ = false;  // guarded by mu_: the loop released any lock and stopped for good
};

}  // namespace xb::push
