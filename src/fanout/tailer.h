// The tailer (STORE.md 5): one per instance. It owns the dedicated read connection, the forward
// cursor and the gap ranges; runs recovery generations; polls the read database (PostgreSQL:
// every streams.poll_interval_ms; SQLite: woken in-process after each commit, the timer as a
// fallback); and dispatches rows to the registry. A boundary worker beside it runs the boundary
// task on request (STORE.md 4.3). Both are plain threads: every step blocks on the database.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "fanout/delivery_row.h"
#include "fanout/gap_set.h"
#include "fanout/registry.h"
#include "store/store.h"
#include "telemetry/logger.h"
#include "telemetry/metrics.h"
#include "telemetry/tracer.h"

namespace xb::fanout {

struct TailerOptions {
  std::chrono::milliseconds poll_interval{100};  // streams.poll_interval_ms
  uint64_t max_gap_ranges = 10000;               // streams.max_gap_ranges
  // The least time from one poll's start to the next when a commit wakes it (Store::CommitWakeGap).
  std::chrono::milliseconds commit_wake_gap{0};
  telemetry::Tracer* tracer = nullptr;  // tailer.bootstrap / tailer.poll spans
  // Called once, on the tailer thread, when the first generation completed (streams admitted).
  std::function<void()> on_first_ready = nullptr;
  // Called on the boundary worker's thread after each attempt that stored the boundary; quick.
  std::function<void()> on_boundary_advanced = nullptr;
};

class Tailer {
 public:
  Tailer(store::Store& store, Registry& registry, telemetry::Metrics& metrics,
         telemetry::Logger& logger, RowEncoder encoder, TailerOptions options);
  ~Tailer();
  Tailer(const Tailer&) = delete;
  Tailer& operator=(const Tailer&) = delete;

  // Starts the threads; the first generation begins at once.
  void Start();
  // Blocks until the first generation completed (streams admitted) or Stop(), for at most
  // `timeout`: false when not ready yet. The server is told by TailerOptions::on_first_ready
  // instead (fanout::Streams); this is for tests.
  bool WaitReadyFor(std::chrono::milliseconds timeout);
  // Ends the threads (shutdown). Streams are ended by the caller (Registry::Shutdown).
  void Stop();

  // SQLite's commit listener: poll now (STORE.md 8). Thread-safe, never blocks.
  void OnCommit(int64_t last_id);

  // Asks the boundary worker for an attempt (requests coalesce). Thread-safe, never blocks. Also
  // the push dispatcher's nudge (PUSH.md 8.2 step 4: push must not wait for stream subscribers).
  void RequestBoundaryAdvance();

 private:
  enum class PollOutcome : uint8_t { kComplete, kIncomplete, kFailed, kGapOverflow };

  void Run();
  void RunBoundaryWorker();
  // Steps 2-5 of STORE.md 5.2; false when stopping.
  bool Bootstrap();
  PollOutcome Poll();
  // The steps of one poll, in its one snapshot (tailer.cc). Each says how it failed, if it did.
  enum class StepFailure : uint8_t { kNone, kDatabase, kInvariant };
  struct PollScan;  // the rows a poll selected within its byte budget
  StepFailure ProbeGaps(int64_t boundary, PollScan& scan);
  StepFailure ScanForward(PollScan& scan);
  StepFailure LoadWanted(const PollScan& scan, std::vector<RowPtr>* rows);
  void EndGeneration(const Ending& ending);
  // Sleeps until `until`, a commit wake-up, or Stop(); false when stopping.
  bool SleepUntil(std::chrono::steady_clock::time_point until, bool wake_on_commit);

  store::Store& store_;
  Registry& registry_;
  telemetry::Metrics& metrics_;
  telemetry::Logger& logger_;
  const RowEncoder encoder_;
  const TailerOptions options_;

  // Tailer thread only.
  std::unique_ptr<store::TailReader> reader_;
  int64_t cursor_ = 0;
  GapSet gaps_;
  bool first_generation_ = true;

  std::mutex mu_;
  // One condition per waiting party, so that an event wakes only the thread it concerns: commits
  // come once per transaction, and a shared condition woke the boundary worker and the tailer's
  // gap sleep (which ignore commits) on each of them, two context switches per commit for nothing.
  std::condition_variable tailer_cv_;    // the tailer's sleeps: a commit, a boundary failure, Stop
  std::condition_variable boundary_cv_;  // the boundary worker: a request, Stop
  std::condition_variable ready_cv_;     // WaitReadyFor callers: the first generation, Stop
  bool stopping_ = false;                // guarded by mu_
  bool committed_ = false;               // guarded by mu_: a commit since the last poll started
  bool waiting_for_commit_ = false;  // guarded by mu_: the tailer sleeps until a commit wakes it
  bool ready_once_ = false;          // guarded by mu_
  bool boundary_requested_ = false;  // guarded by mu_
  bool boundary_failed_ = false;     // guarded by mu_: the worker's attempt ended in `error`

  std::thread tailer_thread_;
  std::thread boundary_thread_;
};

}  // namespace xb::fanout
