// The pruning pass's runner (STORE.md 9.2, issue 35; retention.prune): one thread per instance
// that, one interval after start-up and then one interval after the end of each pass, runs a pass
// of store batches (Store::PruneBatch) until the expired rows are all visited, pausing between
// batches so publishers keep the database. Which rows a batch may delete is the store's: this
// class only schedules, measures and stops.
//
// Before its first pass it has the store build the pass's index (Store::PreparePruning), and
// tries again one interval later when that fails or another instance holds the pass's lock.
//
// Threading: Start, Halt and Stop are called from the server's main thread; the pass runs on its
// own thread. Halt never blocks: no batch starts after it and an index build is cancelled (a
// drain stops the pass at once, STORE.md 9.2); Stop also waits for the batch in flight (one short
// transaction) and joins.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>

#include "store/store.h"
#include "telemetry/logger.h"
#include "telemetry/metrics.h"
#include "telemetry/tracer.h"

namespace xb::server {

struct PrunePassOptions {
  std::chrono::milliseconds interval{std::chrono::hours(1)};  // retention.prune_interval_seconds
  uint32_t batch = 1000;                                      // retention.prune_batch
  // A push channel is configured: nothing above the push cursor goes (STORE.md 9.2 rule 4).
  bool hold_at_push_cursor = false;
};

class PrunePass {
 public:
  // `store`, `metrics`, `logger` and `tracer` (may be null) outlive the pass.
  // `request_boundary_advance` asks the boundary task for an attempt (fanout::Streams, as the
  // push dispatcher does): the pass deletes only at or below the closed boundary (STORE.md 9.2
  // rule 4), which on PostgreSQL moves only when asked; each pass asks before it starts, so the
  // next one sees ids up to about one interval ago.
  PrunePass(store::Store& store, telemetry::Metrics& metrics, telemetry::Logger& logger,
            telemetry::Tracer* tracer, std::function<void()> request_boundary_advance,
            PrunePassOptions options);
  ~PrunePass();
  PrunePass(const PrunePass&) = delete;
  PrunePass& operator=(const PrunePass&) = delete;

  void Start();
  void Halt();
  void Stop();

  // The pause after a batch that took `took`: a batch holds the writer (SQLite) or a transaction
  // (PostgreSQL), so the pass keeps to about a fifth of the time, and at least a few milliseconds
  // apart, to cost publishers little (bench/prune.sh measures it).
  static std::chrono::steady_clock::duration PauseAfter(std::chrono::steady_clock::duration took);

 private:
  void Loop();
  // Store::PreparePruning: true once the pass can run; false to try again one interval later.
  bool Prepare();
  void RunPass();
  // Sleeps for `d` unless halted first; false once halted.
  bool Sleep(std::chrono::steady_clock::duration d);
  bool halted();

  store::Store& store_;
  telemetry::Metrics& metrics_;
  telemetry::Logger& logger_;
  telemetry::Tracer* const tracer_;
  const std::function<void()> request_boundary_advance_;
  const PrunePassOptions options_;

  std::mutex mu_;
  std::condition_variable wake_;
  bool halted_ = false;  // guarded by mu_
  std::thread thread_;
};

}  // namespace xb::server
