// One stream's delivery engine (STORE.md 5.5, API.md 3.8-3.9): its registrations and floors, the
// live rows the tailer hands it, catch-up waves (round-robin fair across topics, under fetch
// permits), and a bounded outbound queue. The wire protocol around it (Started, Update, Applied,
// Ping/Pong, keepalive) belongs to api/stream_service.
//
// Threading: everything runs on the call's executor; only the registry and the fetch permits are
// shared with other threads.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include "fanout/delivery_row.h"
#include "fanout/fetch_permits.h"
#include "fanout/history_cache.h"
#include "fanout/messages_frame.h"
#include "fanout/registry.h"
#include "fanout/wave_buffers.h"
#include "rpc/call.h"
#include "store/db_pool.h"
#include "store/store.h"
#include "telemetry/metrics.h"
#include "telemetry/tracer.h"

namespace xb::fanout {

struct StreamDeps {
  store::Store* store = nullptr;
  store::DbPool* db = nullptr;
  Registry* registry = nullptr;
  FetchPermits* permits = nullptr;
  WaveBuffers* wave_buffers = nullptr;  // nullptr: each wave allocates its own buffer
  HistoryCache* history = nullptr;      // nullptr: every wave reads the store
  telemetry::Metrics* metrics = nullptr;
  RowEncoder encoder;
  telemetry::Tracer* tracer = nullptr;  // stream.fetch spans; nullptr: none
};

struct StreamLimits {
  size_t frame_bytes = 2097152;       // min(2 MiB, limits.max_response_bytes)
  size_t outbound_bytes = 16u << 20;  // queued response bytes, at most
  size_t outbound_frames = 64;        // queued response messages, at most
  // Catch-up reads only while less than half this is queued and fills up to it: enough to keep
  // the socket busy (a stream's HTTP/2 window is 1 MiB), small enough that many streams catching
  // up stay cheap in memory and their output stays in cache.
  size_t catch_up_bytes = 1u << 20;
  // A wave that reads the store reads up to this much (Store::CatchUpWaveBytes: larger where a
  // read is a round trip). With a history cache, what the stream cannot queue yet is served from
  // the cache by its next waves; without one, the wave queues all it read.
  size_t catch_up_read_bytes = 1u << 20;
  // Catch-up frames are cut at this size (or frame_bytes, if smaller); an envelope larger than
  // that goes in a frame of its own (up to frame_bytes). Smaller frames keep each stream's output
  // buffer small.
  size_t catch_up_frame_bytes = 256u << 10;
  uint32_t turn_topics = 256;           // registrations per catch-up wave (ARC-086)
  uint32_t turn_rows = 64;              // rows per registration per wave
  size_t max_envelope_bytes = 1048576;  // limits.max_envelope_bytes (the largest storable row)
};

// How a session puts its rows on the wire: a property of the session, fixed at construction.
struct StreamWire {
  // xmtp.backend.v1 streams: rows as ServerEnvelopes (StreamDeps::encoder, the history cache and
  // DeliveryRow::encoded), many to a response message: a Messages message, field
  // `messages_field` of the response (API.md 2.5).
  static StreamWire Messages(uint32_t messages_field) {
    StreamWire wire;
    wire.messages_field = messages_field;
    return wire;
  }
  // The V3 server streams (docs/v3-api.md 4.1, 4.2): each row is one response message of its own,
  // in its second encoding: `encoder` for catch-up reads (the history cache holds ServerEnvelopes,
  // so these sessions read the store), DeliveryRow::Transcoded(`transcoder`) for live rows.
  // Several such messages may be queued at once.
  static StreamWire RowPerMessage(RowEncoder encoder, RowTranscoder transcoder) {
    StreamWire wire;
    wire.encoder = std::move(encoder);
    wire.transcoder = transcoder;
    return wire;
  }

  // XIP-83 Subscribe (docs/v3-api.md 4.3): as RowPerMessage, each row wrapped by `wrap` into a
  // response message that names its lane; catch-up runs as waves (StreamSession::WaveTag).
  static StreamWire Waves(RowEncoder encoder, RowTranscoder transcoder, RowWrap wrap) {
    StreamWire wire = RowPerMessage(std::move(encoder), transcoder);
    wire.wrap = wrap;
    return wire;
  }

  bool row_per_message() const { return messages_field == 0; }
  bool waves() const { return wrap != nullptr; }

  uint32_t messages_field = 0;  // 0: one row per response message
  RowEncoder encoder;           // row_per_message only
  RowTranscoder transcoder = nullptr;
  RowWrap wrap = nullptr;  // waves only
};

// A catch-up wave's rows as read, and what one wave reads (fanout/wave_read.h).
struct Wave;
struct FetchedWave;
struct WaveRead;

struct CatchupTargetOut {
  std::string topic;
  int64_t through = 0;
};

class StreamSession {
 public:
  using Clock = std::chrono::steady_clock;

  StreamSession(std::shared_ptr<rpc::Call> call, StreamDeps deps, StreamLimits limits,
                StreamWire wire, telemetry::StreamKind kind);
  ~StreamSession();
  StreamSession(const StreamSession&) = delete;
  StreamSession& operator=(const StreamSession&) = delete;

  // Stream admission (OPS-006): false while stream recovery runs.
  bool Open();

  // An XIP-83 Mutate's adds (StreamWire::Waves): the wave's tag, and whether its topics are
  // caught up only (no live registration once the wave completes).
  struct WaveTag {
    uint64_t mutate_id = 0;
    bool history_only = false;
  };
  // Called when a wave completes: every topic it still has caught up (and live, unless history
  // only), nothing of it sent afterwards on its lane. Gets the wave's mutate_id and those topics;
  // returns an ending to fail the stream. Runs inside Pump.
  using WaveDone = std::function<std::optional<Ending>(uint64_t mutate_id,
                                                       const std::vector<std::string>& topics)>;

  // Registers the topics of `adds` that are not registered yet (callers pass distinct topics),
  // then reads their heads (API-252: targets captured after registration). Returns one target per
  // newly registered topic, in add order. With `wave` (Waves wire only), the new topics form one
  // wave, caught up in one merged pass and turned live together; an add of a topic already
  // registered only lifts a history-only mark when this wave is not history only.
  boost::asio::awaitable<std::variant<std::vector<CatchupTargetOut>, Ending>> Add(
      const std::vector<store::TopicCursor>& adds, std::optional<WaveTag> wave = std::nullopt);
  void SetWaveDone(WaveDone done) { wave_done_ = std::move(done); }
  // Whether a wave with this mutate_id is still catching up.
  bool WaveInFlight(uint64_t mutate_id) const;
  bool waves_in_flight() const { return !waves_.empty(); }
  // Unregisters; no envelope of a removed registration is queued afterwards (API-253).
  void Remove(const std::vector<std::string>& topics);
  bool IsRegistered(const std::string& topic) const { return by_topic_.contains(topic); }
  size_t registered() const { return by_topic_.size(); }

  // Queues what is ready: live rows, then catch-up waves while there is room and a fetch permit.
  // Returns the ending when the stream must fail. Suspends for catch-up reads.
  boost::asio::awaitable<std::optional<Ending>> Pump();
  // True when Pump could make progress now without waiting (more catch-up with room and permit).
  bool ready_for_more() const;

  // Queues a control response message (Started, Applied, Ping, Pong, Keepalive); RESOURCE_EXHAUSTED
  // when it exceeds limits.max_response_bytes (API.md 3.13).
  std::optional<Ending> WriteControl(std::string_view message, telemetry::FrameSent frame,
                                     uint64_t max_response_bytes);

  Clock::time_point last_frame_at() const { return last_frame_at_; }

 private:
  // The registry's wake-up, on the call's executor. Live rows go straight to the outbound queue
  // here, without resuming the handler coroutine; anything else (catch-up notices, failures,
  // rows while the coroutine is mid-registration or mid-wave) is left to it.
  void OnWake();
  bool HasCatchUpRoom() const;
  std::optional<Ending> QueueMessages(MessagesFrame& frame, bool live);
  // A frame of live rows; frame_rows_ holds the row of each of its envelopes.
  std::optional<Ending> QueueLiveMessages(MessagesFrame& frame);
  // A live row as a response message of its own (row_per_message).
  void QueueLiveRow(std::string_view bytes, const RowPtr& row);
  // The bytes this session sends for a live row; nullptr when its second encoding cannot be
  // built (an invariant failure).
  const std::string* LiveBytes(const DeliveryRow& row) const;
  // Live rows cut into response messages, up to the queue bound of the session's wire.
  std::optional<Ending> FlushLiveFrames(size_t& next);
  void FlushLiveRows(size_t& next);
  // A catch-up wave's rows, one response message each (row_per_message).
  std::optional<Ending> QueueWaveRows(const std::vector<RegistrationPtr>& wave,
                                      const Wave& fetched);
  void CountFrame(size_t envelopes, bool live);
  boost::asio::awaitable<std::optional<Ending>> CatchUpWave();
  // STORE.md 5.5: false when the wave lost a row (LostARow), unless every empty range is one the
  // pruning pass emptied (SettlePrunedRanges, which then moves their floors).
  boost::asio::awaitable<bool> WaveIsWhole(const std::vector<RegistrationPtr>& regs,
                                           const std::vector<int64_t>& throughs,
                                           const Wave& fetched, uint64_t budget);
  // Issue 35 (STORE.md 9.2): a wave's empty ranges (those LostARow reports) that all end at or
  // below the pruning pass's horizon (Store::PrunedThrough, read after the wave) lost their rows
  // to the pass, not to a fault: each such registration's floor moves to its range's end (no row
  // of the topic is left at or below it). False, a lost row (STORE.md 5.5), when one ends above.
  boost::asio::awaitable<bool> SettlePrunedRanges(const std::vector<RegistrationPtr>& regs,
                                                  const std::vector<int64_t>& throughs,
                                                  const Wave& fetched);
  // The registrations of the next wave, from the front of the queue, each with its range appended
  // to `ranges`; those removed or live meanwhile leave the queue.
  std::vector<RegistrationPtr> TakeWave(std::vector<store::CatchUpRange>& ranges);
  bool HasCatchUp() const { return !catch_up_.empty() || !waves_.empty(); }
  // A wave read of `ranges` under the stream's catch-up budget (what may be queued now).
  WaveRead PlanWaveRead(std::vector<store::CatchUpRange> ranges) const;
  // Reads `ranges` (of `regs`, one each) on the DB pool (wave_read.h).
  boost::asio::awaitable<FetchedWave> FetchWave(std::vector<store::CatchUpRange> ranges,
                                                const std::vector<RegistrationPtr>& regs);
  // XIP-83 waves (stream_session_waves.cc): one merged pass of the front wave, then its
  // completion when every topic reached its target.
  boost::asio::awaitable<std::optional<Ending>> WavePass();
  // The pass's rows at or below `frontier`, in id order, each a response message of the wave's
  // lane; floors and known next rows updated.
  std::optional<Ending> QueueMergedRows(const std::vector<RegistrationPtr>& regs,
                                        const std::vector<size_t>& chosen, const Wave& fetched,
                                        int64_t frontier, uint64_t lane);
  std::optional<Ending> TryFinishWave();
  // A row as an XIP-83 response message of `lane`: RowFraming around the bytes.
  void QueueFramedRow(std::string_view topic, std::string_view bytes, uint64_t lane,
                      const RowPtr* shared);
  // Queues the wave's rows as catch-up frames, raising the floors; the ending if the stream fails.
  std::optional<Ending> QueueWave(const std::vector<RegistrationPtr>& wave, const Wave& fetched);
  // After a queued wave: finished registrations turn live, the others go back to the queue.
  void RequeueWave(std::vector<RegistrationPtr>& wave, const Wave& fetched);
  std::optional<Ending> DeliverLive(std::vector<LiveItem>& items);
  std::optional<Ending> FlushLive();

  // Live frames are cut only while fewer than this many response messages wait for the
  // connection (coalescing under load). One row per message cannot coalesce: those rows are
  // queued while fewer than limits.outbound_frames messages wait.
  static constexpr size_t kLiveQueuedFrames = 2;
  // Live envelopes at least this large are queued by reference (Call::AppendShared).
  static constexpr size_t kShareMinBytes = 256;

  std::shared_ptr<rpc::Call> call_;
  StreamDeps deps_;
  StreamLimits limits_;
  StreamWire wire_;
  uint32_t messages_field_;
  telemetry::StreamKind kind_;
  std::shared_ptr<SessionState> state_;
  bool opened_ = false;
  bool busy_ = false;                  // inside Add or Pump (either may be suspended)
  std::optional<Ending> held_ending_;  // found by OnWake; the next Pump returns it
  std::vector<LiveItem> woken_rows_;   // OnWake's scratch (its capacity is reused)

  std::unordered_map<std::string, RegistrationPtr> by_topic_;
  std::deque<RegistrationPtr> catch_up_;  // registrations not live yet, round-robin order
  struct PendingWave {
    uint64_t mutate_id = 0;
    std::vector<RegistrationPtr> regs;
  };
  std::deque<PendingWave> waves_;  // XIP-83 waves not complete yet, oldest first
  WaveDone wave_done_;
  std::shared_ptr<FetchPermits::Ticket> ticket_;
  Clock::time_point ticket_since_{};
  std::optional<Clock::time_point> room_wait_since_;
  std::vector<LiveItem> pending_live_;     // admitted live rows not yet cut into frames
  std::vector<const RowPtr*> frame_rows_;  // FlushLive's scratch: the rows of the frame it cuts
  // FlushLive's frame, kept so that its envelope list keeps its capacity: a fan-out cuts one
  // frame per stream per row, and a new list cost each of them an allocation.
  MessagesFrame live_frame_;
  size_t pending_live_bytes_ = 0;
  Clock::time_point last_frame_at_;
};

}  // namespace xb::fanout
