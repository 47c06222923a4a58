// The streams facade (ARCHITECTURE.md section 6): one object that owns what every live stream
// shares — the subscriber registry, the tailer, the catch-up fetch permits, the kept wave buffers
// and the history cache — so the server wires one thing and the API layer holds one pointer.
//
// Lifetime: built by server::Server after the store is open; Stop() (or the destructor) ends the
// tailer and disconnects the store's commit listener before the store closes. Threads: Start,
// WaitReady, CancelWait, Shutdown and Stop on the server's main executor; Deps() from any thread
// (everything it hands out is thread-safe or per stream).
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>

#include "fanout/fetch_permits.h"
#include "fanout/history_cache.h"
#include "fanout/registry.h"
#include "fanout/stream_session.h"
#include "fanout/tailer.h"
#include "fanout/wave_buffers.h"
#include "store/db_pool.h"
#include "store/store.h"
#include "telemetry/logger.h"
#include "telemetry/metrics.h"
#include "telemetry/tracer.h"

namespace xb::fanout {

struct StreamsOptions {
  std::chrono::milliseconds poll_interval{100};  // streams.poll_interval_ms
  uint64_t max_gap_ranges = 10000;               // streams.max_gap_ranges
  size_t fetch_permits = 1;                      // catch-up reads of all streams together, at most
  size_t wave_buffer_bytes = 0;    // the largest kept wave buffer (one kept per permit)
  size_t history_cache_bytes = 0;  // encoded catch-up rows shared between streams
};

class Streams {
 public:
  // `store`, `db`, `metrics`, `logger` and `tracer` (nullable) outlive this object.
  Streams(store::Store& store, store::DbPool& db, telemetry::Metrics& metrics,
          telemetry::Logger& logger, telemetry::Tracer* tracer, RowEncoder encoder,
          StreamsOptions options);
  ~Streams();
  Streams(const Streams&) = delete;
  Streams& operator=(const Streams&) = delete;

  // Connects the store's commit listener and starts the tailer's first recovery generation
  // (STORE.md 5.2). `executor` is where WaitReady() is resumed.
  void Start(boost::asio::any_io_executor executor);
  // Suspends until the first generation completed (true: streams are admitted) or CancelWait()
  // (false). No bound of its own: STORE.md 5.2 makes the orchestrator's startup probe the bound.
  boost::asio::awaitable<bool> WaitReady();
  // A termination signal during start-up: a pending WaitReady() and every later one answer false.
  void CancelWait();
  // Drain: ends every stream with `ending` and refuses new ones (OPS-007).
  void Shutdown(const Ending& ending);
  // PUSH.md 8.2 step 4: an attempt of the boundary task (Tailer::RequestBoundaryAdvance). Any
  // thread.
  void RequestBoundaryAdvance() { tailer_.RequestBoundaryAdvance(); }
  // What moved: a commit the store's commit listener heard (on the committing thread, after the
  // tailer), or the stored allocation boundary (on the boundary worker's thread).
  enum class Progress : uint8_t { kCommit, kBoundary };
  // Told of both (the push dispatcher's wake-up); it must be quick. nullptr: none. Any thread.
  void SetProgressObserver(std::function<void(Progress)> observer);
  // Stops the tailer and disconnects the commit listener. Idempotent.
  void Stop();

  // What one stream session uses (fanout/stream_session.h).
  StreamDeps Deps();

 private:
  void OnFirstReady();

  store::Store& store_;
  store::DbPool& db_;
  telemetry::Metrics& metrics_;
  telemetry::Tracer* const tracer_;
  const RowEncoder encoder_;

  Registry registry_;
  FetchPermits fetch_permits_;
  WaveBuffers wave_buffers_;
  HistoryCache history_cache_;
  Tailer tailer_;

  // Main executor only.
  std::optional<boost::asio::steady_timer> ready_timer_;
  bool ready_ = false;
  bool wait_cancelled_ = false;
  bool started_ = false;

  std::mutex observer_mu_;
  std::function<void(Progress)> progress_observer_;  // guarded by observer_mu_
  void TellObserver(Progress progress);
};

}  // namespace xb::fanout
