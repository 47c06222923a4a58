// The subscriber registry (STORE.md 5.5, ARCHITECTURE.md 6): topic -> registrations of every
// session, the tailer's dispatch into it, and stream admission (OPS-006).
//
// Threading: the tailer thread dispatches; each session touches its own state from its
// connection's executor. Everything shared lives behind one mutex; dispatch never blocks on a
// session (ARC-073): it appends to the session's inbox and posts one wake-up.
#pragma once

#include <atomic>
#include <boost/asio/any_io_executor.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "fanout/delivery_row.h"
#include "telemetry/metrics.h"

namespace xb::fanout {

class SessionState;

// One topic on one stream (API.md 3.8).
// What a dispatch reads for every registration of a topic comes first: one cache line.
struct Registration {
  Registration(std::string t, int64_t cursor, SessionState* s)
      : session(s), floor(cursor), topic(std::move(t)) {}

  SessionState* const session;
  // Guarded by the registry mutex: the greatest id this registration must reach before it turns
  // live (its catch-up target, raised by tailer notices), and whether it is live.
  int64_t needed = 0;
  bool live = false;

  bool active = true;     // false once removed: its pending rows are dropped (ARC-074)
  bool in_queue = false;  // in the session's catch-up queue
  // XIP-83 waves (session executor only): caught up but never live; the id of the topic's first
  // row above `floor` once a read saw it, else 0 (fanout/wave_merge.h).
  bool history_only = false;
  int64_t peek = 0;
  // Session executor only: rows at or below are discarded; raised when a row is queued (ARC-075).
  int64_t floor;
  const std::string topic;
};

using RegistrationPtr = std::shared_ptr<Registration>;

struct LiveItem {
  RegistrationPtr registration;
  RowPtr row;
};

// Why a stream ends, as the client sees it and as xmtp_stream_ended_total counts it.
struct Ending {
  Status status;
  telemetry::StreamEndReason reason = telemetry::StreamEndReason::kClient;
};

// What the registry keeps per session. Created by the session; `wake` runs once per wake-up.
//
// With an executor, `wake` runs on it: a dispatch hands each executor the sessions it touched
// there in one post per connection (group), however many streams each has (a topic with 1,000
// subscribers on 10 connections costs 10 hand-offs, not 1,000). Without one (unit tests), `wake`
// runs inline in the dispatch, under the registry's mutex.
//
// The members a dispatch touches for every session come first, in as few cache lines as possible.
class SessionState : public std::enable_shared_from_this<SessionState> {
 public:
  explicit SessionState(std::function<void()> wake) : wake_(std::move(wake)) {}
  // `group`: the session's connection (rpc::Call::connection); a dispatch wakes the sessions of
  // one group together, then lets that connection write before the next group's wake-ups.
  SessionState(boost::asio::any_io_executor executor, const void* group, std::function<void()> wake)
      : group_(group), executor_(std::move(executor)), wake_(std::move(wake)) {}

  // Guarded by the registry mutex.
  std::vector<LiveItem> inbox;
  size_t inbox_bytes = 0;
  std::unique_ptr<Ending> failure;  // set once: the stream must end so
  bool open = false;
  bool touched = false;  // dispatch bookkeeping

 private:
  friend class Registry;
  std::atomic<bool> wake_posted_{false};
  const void* const group_ = nullptr;
  const boost::asio::any_io_executor executor_;
  std::function<void()> wake_;

 public:
  std::vector<RegistrationPtr> registrations;  // guarded by the registry mutex

  // The session's executor calls this when its wake-up runs (before it drains): a later dispatch
  // wakes it again.
  void WakeDelivered() { wake_posted_.store(false, std::memory_order_release); }
  // The owner is going away (on its executor): a wake-up still in flight does nothing.
  void Detach() { wake_ = nullptr; }

 private:
  // True when this wake-up is the first since the last WakeDelivered (one in flight at most).
  bool ClaimWake() { return !wake_posted_.exchange(true, std::memory_order_acq_rel); }
  void RunWake() {
    if (wake_) {
      wake_();
    }
  }
};

class Registry {
 public:
  // A dispatch's wake-ups run one connection per turn, small connections sharing a turn up to
  // this many sessions (see RunWakeGroups).
  static constexpr size_t kWakesPerTurn = 64;

  // `max_inbox_bytes`: live rows waiting for one session to take them, at most; past it the
  // session fails RESOURCE_EXHAUSTED (it is not keeping up), so memory stays bounded even when a
  // session cannot run for a while.
  explicit Registry(telemetry::Metrics& metrics, size_t max_inbox_bytes = size_t{16} << 20)
      : metrics_(metrics), max_inbox_bytes_(max_inbox_bytes) {}

  // Stream admission (OPS-006): false while recovery runs or after shutdown began.
  bool Open(SessionState& session);
  // Removes every registration of the session (idempotent).
  void Close(SessionState& session);

  // Registers new registrations (live = false, needed = 0). False when the session's generation
  // ended meanwhile (its failure is set); nothing is registered then.
  bool Add(SessionState& session, const std::vector<RegistrationPtr>& added);
  void Remove(SessionState& session, const std::vector<RegistrationPtr>& removed);
  // Raises each registration's `needed` to its captured target (API-252).
  void SetTargets(const std::vector<RegistrationPtr>& regs, const std::vector<int64_t>& targets);
  // The id `reg` must reach now.
  int64_t Needed(const Registration& reg);
  // Switches `reg` to live when its floor reached `needed`, atomically with respect to dispatch
  // (STORE.md 5.5). Returns true when it is live now.
  bool TrySwitchLive(Registration& reg);
  // The same for a whole XIP-83 wave, at once: true when every active registration's floor
  // reached its `needed`; then those not history only are live. Nothing changes otherwise.
  bool TrySwitchLiveAll(const std::vector<RegistrationPtr>& regs);

  // Takes what the tailer left for the session.
  void Drain(SessionState& session, std::vector<LiveItem>* live, std::optional<Ending>* failure);

  // Tailer: per row, whether any registration wants its topic now. A row nobody wants needs no
  // payload: a registration added later captures a head at or above it and fetches it (ARC-076).
  std::vector<bool> Interested(const std::vector<store::RowHead>& rows) const;
  // Tailer: dispatches rows (ascending id) to registrations and wakes their sessions.
  void Dispatch(const std::vector<RowPtr>& rows);
  // Tailer: streams are admitted from now on (xmtp_tailer_ready = 1).
  void SetReady();
  // Tailer or shutdown: refuses new streams and ends every open one with `ending`, clearing all
  // registrations (STORE.md 5.2 step 1, OPS-006, OPS-007).
  void FailAll(const Ending& ending);
  // Shutdown: refuse streams for good.
  void Shutdown(const Ending& ending);

  bool ready() const;
  // Whether any stream has a topic registered: the store then wakes the tailer before a commit's
  // publishers are told (Store::SetCommitListener). Lock-free; a moment stale at worst.
  bool has_registrations() const { return registered_.load(std::memory_order_relaxed) > 0; }

 private:
  void RemoveLocked(const RegistrationPtr& reg);
  struct WakeEntry {
    const void* group;
    std::weak_ptr<SessionState> session;
  };
  // Wakes `sessions` (each at most once in flight): one post per executor, which wakes the first
  // group's sessions and posts the rest. Under the mutex, so a session is not closed meanwhile.
  static void WakeLocked(const std::vector<SessionState*>& sessions);
  // Runs the wake-ups of entries[next]'s group (and of the groups after it while the turn holds
  // fewer than kWakesPerTurn sessions), then posts itself for the rest.
  static void RunWakeGroups(const boost::asio::any_io_executor& executor,
                            std::vector<WakeEntry> entries, size_t next);

  telemetry::Metrics& metrics_;
  const size_t max_inbox_bytes_;
  mutable std::mutex mu_;
  bool ready_ = false;
  bool shut_down_ = false;
  std::unordered_map<std::string, std::vector<RegistrationPtr>> by_topic_;
  std::atomic<int64_t> registered_{0};  // registrations in by_topic_ (written under mu_)
  std::vector<SessionState*> sessions_;
};

}  // namespace xb::fanout
