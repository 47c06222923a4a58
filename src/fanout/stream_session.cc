#include "fanout/stream_session.h"

#include <algorithm>
#include <boost/asio/post.hpp>
#include <cstdint>
#include <cstring>
#include <utility>

#include "fanout/messages_frame.h"
#include "fanout/session_endings.h"
#include "fanout/wave_read.h"

namespace xb::fanout {

namespace asio = boost::asio;

namespace {

// Marks the session busy while an Add or a Pump runs, suspensions included.
class BusyScope {
 public:
  explicit BusyScope(bool& busy) : busy_(busy) { busy_ = true; }
  ~BusyScope() { busy_ = false; }
  BusyScope(const BusyScope&) = delete;
  BusyScope& operator=(const BusyScope&) = delete;

 private:
  bool& busy_;
};

}  // namespace

StreamSession::StreamSession(std::shared_ptr<rpc::Call> call, StreamDeps deps, StreamLimits limits,
                             StreamWire wire, telemetry::StreamKind kind)
    : call_(std::move(call)),
      deps_(std::move(deps)),
      limits_(limits),
      wire_(std::move(wire)),
      messages_field_(wire_.messages_field),
      kind_(kind),
      live_frame_(wire_.messages_field),
      last_frame_at_(Clock::now()) {
  if (wire_.row_per_message()) {
    // docs/v3-api.md G3: catch-up reads encode the rows in this wire's encoding as they read them,
    // once per row per wave as every store read does; the history cache holds ServerEnvelopes, so
    // these sessions neither use nor fill it.
    deps_.encoder = wire_.encoder;
    deps_.history = nullptr;
  }
  // The registry runs the wake-up on the call's executor, and not once this session is gone.
  state_ =
      std::make_shared<SessionState>(call_->executor(), call_->connection(), [this] { OnWake(); });
}

StreamSession::~StreamSession() {
  state_->Detach();
  if (ticket_) {
    deps_.permits->Release(ticket_);
  }
  deps_.registry->Close(*state_);
  if (opened_) {
    deps_.metrics->stream().sessions.Dec(kind_);
  }
}

bool StreamSession::Open() {
  opened_ = deps_.registry->Open(*state_);
  if (opened_) {
    deps_.metrics->stream().sessions.Inc(kind_);
  }
  return opened_;
}

asio::awaitable<std::variant<std::vector<CatchupTargetOut>, Ending>> StreamSession::Add(
    const std::vector<store::TopicCursor>& adds, std::optional<WaveTag> wave) {
  BusyScope busy(busy_);
  std::vector<RegistrationPtr> added;
  std::vector<std::string> topics;
  for (const auto& add : adds) {
    if (auto it = by_topic_.find(add.topic); it != by_topic_.end()) {
      // API-253: an already registered topic is left untouched (but a live add of an XIP-83
      // topic still catching up history-only keeps it registered).
      if (wave && !wave->history_only) {
        it->second->history_only = false;
      }
      continue;
    }
    added.push_back(std::make_shared<Registration>(add.topic, add.after, state_.get()));
    added.back()->history_only = wave && wave->history_only;
    topics.push_back(add.topic);
  }
  std::vector<CatchupTargetOut> targets;
  if (added.empty()) {
    co_return targets;
  }
  // ARC-076: registration precedes head capture, on the database the tailer reads.
  if (!deps_.registry->Add(*state_, added)) {
    std::vector<LiveItem> ignored;
    std::optional<Ending> failure;
    deps_.registry->Drain(*state_, &ignored, &failure);
    co_return failure.value_or(DatabaseFailure());
  }
  for (const auto& reg : added) {
    by_topic_.emplace(reg->topic, reg);
  }
  auto heads_job = [store = deps_.store, topics = std::move(topics)] {
    return store->Heads(topics);
  };
  auto heads = co_await deps_.db->Run(std::move(heads_job));
  if (!heads.ok()) {
    co_return DatabaseFailure();
  }
  const auto& values = heads.value();
  if (values.size() != added.size()) {
    co_return DatabaseFailure();
  }
  deps_.registry->SetTargets(added, values);
  targets.reserve(added.size());
  for (size_t i = 0; i < added.size(); ++i) {
    targets.push_back(CatchupTargetOut{added[i]->topic, values[i]});
    added[i]->in_queue = true;
    if (!wave) {
      catch_up_.push_back(added[i]);
    }
  }
  if (wave) {
    waves_.push_back(PendingWave{wave->mutate_id, std::move(added)});
  }
  co_return targets;
}

void StreamSession::Remove(const std::vector<std::string>& topics) {
  std::vector<RegistrationPtr> removed;
  for (const auto& topic : topics) {
    auto it = by_topic_.find(topic);
    if (it == by_topic_.end()) {
      continue;  // API-253: removing an unregistered topic does nothing
    }
    it->second->active = false;
    removed.push_back(std::move(it->second));
    by_topic_.erase(it);
  }
  if (!removed.empty()) {
    deps_.registry->Remove(*state_, removed);
  }
}

std::optional<Ending> StreamSession::WriteControl(std::string_view message,
                                                  telemetry::FrameSent frame,
                                                  uint64_t max_response_bytes) {
  if (message.size() > max_response_bytes) {
    return Ending{Status(StatusCode::kResourceExhausted,
                         "a stream control frame exceeds the response size limit"),
                  telemetry::StreamEndReason::kCapacity};
  }
  if (!call_->WriteNow(message).ok()) {
    return std::nullopt;  // the call ended; the caller sees it
  }
  deps_.metrics->stream().frames_sent.Inc(frame);
  last_frame_at_ = Clock::now();
  return std::nullopt;
}

std::optional<Ending> StreamSession::QueueMessages(MessagesFrame& frame, bool live) {
  const size_t bytes = frame.size();
  const size_t envelopes = frame.count();
  if (!call_->WriteNowInPlace(bytes, [&frame](char* dst) { frame.WriteTo(dst); }).ok()) {
    return std::nullopt;
  }
  CountFrame(envelopes, live);
  return std::nullopt;
}

// Live envelopes of kShareMinBytes or more are not copied into the call: the connection copies
// them straight from the shared row into its write buffer.
std::optional<Ending> StreamSession::QueueLiveMessages(MessagesFrame& frame) {
  if (!call_->can_share()) {
    return QueueMessages(frame, true);
  }
  const size_t envelopes = frame.count();
  if (!call_->BeginMessage(frame.size()).ok()) {
    return std::nullopt;
  }
  frame.Emit([this](std::string_view framing) { call_->AppendCopy(framing); },
             [this](size_t i, std::string_view envelope) {
               if (envelope.size() >= kShareMinBytes) {
                 call_->AppendShared(envelope, *frame_rows_[i]);
               } else {
                 call_->AppendCopy(envelope);
               }
             });
  call_->EndMessage();
  CountFrame(envelopes, true);
  return std::nullopt;
}

void StreamSession::CountFrame(size_t envelopes, bool live) {
  auto& sm = deps_.metrics->stream();
  sm.frames_sent.Inc(telemetry::FrameSent::kMessages);
  sm.envelopes_sent.Add(live ? telemetry::DeliveryPhase::kLive : telemetry::DeliveryPhase::kCatchUp,
                        envelopes);
  last_frame_at_ = Clock::now();
}

// implements: STORE.md 5.5 (live rows, floors), API-254, ARC-080
// Live rows join the session's outbound queue at once (raising the floor), as a list of shared
// rows; FlushLive cuts them into frames only when the connection has taken what was queued
// before, so a busy stream sends few large frames instead of many small ones.
std::optional<Ending> StreamSession::DeliverLive(std::vector<LiveItem>& items) {
  MessagesFrame sizer(messages_field_);
  for (auto& item : items) {
    Registration& reg = *item.registration;
    if (!reg.active || item.row->sequence_id <= reg.floor) {
      continue;  // ARC-074, ARC-075
    }
    const std::string* bytes = LiveBytes(*item.row);
    if (bytes == nullptr) {
      return Undecodable(*deps_.metrics);
    }
    const size_t size = bytes->size();
    const size_t wrap = wire_.waves() ? RowFraming::kMaxHead + RowFraming::kMaxTail : 0;
    const size_t framed = wire_.row_per_message() ? size + wrap : sizer.SizeAlone(size);
    if (framed > limits_.frame_bytes) {
      return TooLarge();
    }
    // The bound counts rows waiting here and bytes the connection has not taken yet.
    if (call_->pending_body() + pending_live_bytes_ + size > limits_.outbound_bytes) {
      return Backpressure();  // never drop, never wait for a slow reader on live rows
    }
    pending_live_bytes_ += size;
    reg.floor = item.row->sequence_id;
    pending_live_.push_back(std::move(item));
  }
  return FlushLive();
}

const std::string* StreamSession::LiveBytes(const DeliveryRow& row) const {
  return wire_.row_per_message() ? row.Transcoded(wire_.transcoder) : &row.encoded;
}

std::optional<Ending> StreamSession::FlushLive() {
  size_t next = 0;
  if (wire_.row_per_message()) {
    FlushLiveRows(next);
  } else if (auto ending = FlushLiveFrames(next)) {
    return ending;
  }
  pending_live_.erase(pending_live_.begin(), pending_live_.begin() + static_cast<ptrdiff_t>(next));
  if (!pending_live_.empty()) {
    call_->WakeOnRoom();  // the rest is cut once the connection takes what is queued
  }
  return std::nullopt;
}

std::optional<Ending> StreamSession::FlushLiveFrames(size_t& next) {
  while (next < pending_live_.size() && call_->queued_messages() < kLiveQueuedFrames &&
         !call_->ended()) {
    MessagesFrame& frame = live_frame_;
    frame.Clear();  // a frame the call refused (it ended) was never emitted
    frame_rows_.clear();
    while (next < pending_live_.size()) {
      const LiveItem& item = pending_live_[next];
      const size_t size = item.row->encoded.size();
      if (!frame.empty() && frame.SizeWith(size) > limits_.frame_bytes) {
        break;
      }
      // API-253: a registration removed meanwhile sends nothing more.
      if (item.registration->active) {
        frame.Add(item.row->encoded);
        frame_rows_.push_back(&item.row);
      }
      pending_live_bytes_ -= size;
      ++next;
    }
    if (!frame.empty()) {
      if (auto ending = QueueLiveMessages(frame)) {
        return ending;
      }
    }
  }
  return std::nullopt;
}

void StreamSession::FlushLiveRows(size_t& next) {
  while (next < pending_live_.size() && call_->queued_messages() < limits_.outbound_frames &&
         !call_->ended()) {
    const LiveItem& item = pending_live_[next++];
    // DeliverLive built the row's bytes before admitting it, so they are there.
    const std::string& bytes = *LiveBytes(*item.row);
    pending_live_bytes_ -= bytes.size();
    // API-253: a registration removed meanwhile sends nothing more.
    if (item.registration->active && wire_.waves()) {
      QueueFramedRow(item.row->topic, bytes, /*lane=*/0, &item.row);
    } else if (item.registration->active) {
      QueueLiveRow(bytes, item.row);
    }
  }
}

// As QueueLiveMessages: a row of kShareMinBytes or more is not copied into the call.
void StreamSession::QueueLiveRow(std::string_view bytes, const RowPtr& row) {
  if (call_->can_share() && bytes.size() >= kShareMinBytes) {
    if (!call_->BeginMessage(bytes.size()).ok()) {
      return;
    }
    call_->AppendShared(bytes, row);
    call_->EndMessage();
  } else if (!call_->WriteNow(bytes).ok()) {
    return;
  }
  CountFrame(1, /*live=*/true);
}

bool StreamSession::HasCatchUpRoom() const {
  // Catch-up keeps well below the outbound bound, so live rows of a reading client always fit.
  // With one row per message the count of messages says little (a wave queues one per row):
  // only the bytes count.
  return pending_live_.empty() &&
         (wire_.row_per_message() || call_->queued_messages() < limits_.outbound_frames / 2) &&
         call_->pending_body() < limits_.catch_up_bytes / 2;
}

bool StreamSession::ready_for_more() const {
  return HasCatchUp() && HasCatchUpRoom() && (!ticket_ || ticket_->granted());
}

void StreamSession::OnWake() {
  if (busy_ || HasCatchUp() || held_ending_ || call_->ended()) {
    call_->Notify();
    return;
  }
  state_->WakeDelivered();  // before draining: a later dispatch wakes again
  std::optional<Ending> failure;
  deps_.registry->Drain(*state_, &woken_rows_, &failure);
  if (!failure && !woken_rows_.empty()) {
    failure = DeliverLive(woken_rows_);
  }
  woken_rows_.clear();
  if (failure) {
    held_ending_ = std::move(failure);
    call_->Notify();
  }
}

asio::awaitable<std::optional<Ending>> StreamSession::Pump() {
  if (held_ending_) {
    co_return std::exchange(held_ending_, std::nullopt);
  }
  BusyScope busy(busy_);
  state_->WakeDelivered();  // before draining: a later dispatch posts a new wake-up
  std::vector<LiveItem> live;
  std::optional<Ending> failure;
  deps_.registry->Drain(*state_, &live, &failure);
  if (failure) {
    co_return failure;
  }
  if (!live.empty()) {
    if (auto ending = DeliverLive(live)) {
      co_return ending;
    }
  } else if (!pending_live_.empty()) {
    if (auto ending = FlushLive()) {
      co_return ending;
    }
  }
  if (!HasCatchUp() || call_->ended()) {
    co_return std::nullopt;
  }
  if (!HasCatchUpRoom()) {
    if (!room_wait_since_) {
      room_wait_since_ = Clock::now();
    }
    call_->WakeOnRoom();
    co_return std::nullopt;  // woken when the connection drains the queue
  }
  if (room_wait_since_) {
    deps_.metrics->stream().outbound_wait_seconds.Observe(
        std::chrono::duration<double>(Clock::now() - *room_wait_since_).count());
    room_wait_since_.reset();
  }
  if (!ticket_) {
    ticket_since_ = Clock::now();
    std::weak_ptr<rpc::Call> weak_call = call_;
    auto executor = call_->executor();
    ticket_ = deps_.permits->Acquire([executor, weak_call] {
      asio::post(executor, [weak_call] {
        if (auto c = weak_call.lock()) {
          c->Notify();
        }
      });
    });
  }
  if (!ticket_->granted()) {
    co_return std::nullopt;
  }
  deps_.metrics->stream().fetch_wait_seconds.Observe(
      std::chrono::duration<double>(Clock::now() - ticket_since_).count());
  telemetry::Span fetch_span;
  if (deps_.tracer != nullptr) {
    fetch_span = deps_.tracer->Start(telemetry::Operation::kStreamFetch, call_->trace_parent());
  }
  std::optional<Ending> ending;
  if (wire_.waves()) {
    ending = co_await WavePass();
  } else {
    ending = co_await CatchUpWave();
  }
  if (ending) {
    fetch_span.SetError();
  }
  fetch_span.End();
  if (ticket_) {
    deps_.permits->Release(ticket_);
    ticket_.reset();
  }
  if (!ending && HasCatchUp() && !HasCatchUpRoom()) {
    call_->WakeOnRoom();  // the next wave waits for the connection to take this one
  }
  co_return ending;
}

std::vector<RegistrationPtr> StreamSession::TakeWave(std::vector<store::CatchUpRange>& ranges) {
  std::vector<RegistrationPtr> wave;
  while (!catch_up_.empty() && wave.size() < limits_.turn_topics) {
    RegistrationPtr reg = std::move(catch_up_.front());
    catch_up_.pop_front();
    if (!reg->active) {
      reg->in_queue = false;
      continue;
    }
    if (deps_.registry->TrySwitchLive(*reg)) {
      reg->in_queue = false;  // STORE.md 5.5: reached its target, live from now on
      continue;
    }
    ranges.push_back(store::CatchUpRange{reg->topic, reg->floor, deps_.registry->Needed(*reg)});
    wave.push_back(std::move(reg));
  }
  return wave;
}

WaveRead StreamSession::PlanWaveRead(std::vector<store::CatchUpRange> ranges) const {
  const size_t queued = call_->pending_body();
  const uint64_t budget =
      queued < limits_.catch_up_bytes ? limits_.catch_up_bytes - queued : limits_.frame_bytes;
  // A wave reads at most turn_topics x turn_rows rows; fewer registrations each read more, so a
  // lone registration is not throttled to 64 rows per read (fairness comes from interleaving).
  const uint32_t per_range = std::max<uint32_t>(
      limits_.turn_rows,
      static_cast<uint32_t>(uint64_t{limits_.turn_topics} * limits_.turn_rows / ranges.size()));
  return WaveRead{.store = deps_.store,
                  .encoder = deps_.encoder,
                  .buffers = deps_.wave_buffers,
                  .history = deps_.history,
                  .ranges = std::move(ranges),
                  .per_range = per_range,
                  .budget = budget,
                  .read_budget = std::max<uint64_t>(budget, limits_.catch_up_read_bytes)};
}

asio::awaitable<FetchedWave> StreamSession::FetchWave(std::vector<store::CatchUpRange> ranges,
                                                      const std::vector<RegistrationPtr>& regs) {
  std::vector<int64_t> throughs;
  for (const store::CatchUpRange& range : ranges) {
    throughs.push_back(range.through);
  }
  WaveRead read = PlanWaveRead(std::move(ranges));
  const uint64_t budget = read.budget;
  auto job = [read = std::move(read)]() -> WaveResult { return ReadWave(read); };
  auto result = co_await deps_.db->Run(std::move(job));
  if (call_->ended()) {
    co_return FetchedWave{};
  }
  if (auto* error = std::get_if<store::StoreError>(&result)) {
    co_return FetchedWave{.wave = std::nullopt, .ending = ReadFailure(*error, *deps_.metrics)};
  }
  Wave& fetched = std::get<Wave>(result);
  if (fetched.per_range.size() != regs.size()) {
    co_return FetchedWave{.wave = std::nullopt, .ending = DatabaseFailure()};
  }
  const bool whole = co_await WaveIsWhole(regs, throughs, fetched, budget);
  if (call_->ended()) {
    co_return FetchedWave{};
  }
  if (!whole) {
    co_return FetchedWave{.wave = std::nullopt, .ending = DatabaseFailure()};
  }
  co_return FetchedWave{.wave = std::move(fetched), .ending = std::nullopt};
}

asio::awaitable<bool> StreamSession::WaveIsWhole(const std::vector<RegistrationPtr>& regs,
                                                 const std::vector<int64_t>& throughs,
                                                 const Wave& fetched, uint64_t budget) {
  if (!LostARow(fetched, regs, budget, limits_.max_envelope_bytes)) {
    co_return true;
  }
  const bool pruned = co_await SettlePrunedRanges(regs, throughs, fetched);
  co_return pruned;
}

// implements: STORE.md 9.2 rule 6 (cursors stay valid; a pruned range is not a lost row), 5.5
asio::awaitable<bool> StreamSession::SettlePrunedRanges(const std::vector<RegistrationPtr>& regs,
                                                        const std::vector<int64_t>& throughs,
                                                        const Wave& fetched) {
  auto job = [store = deps_.store] { return store->PrunedThrough(); };
  auto horizon = co_await deps_.db->Run(std::move(job));
  if (!horizon.ok()) {
    co_return false;
  }
  for (size_t i = 0; i < regs.size(); ++i) {
    if (fetched.per_range[i].empty() && regs[i]->active && throughs[i] > horizon.value()) {
      co_return false;
    }
  }
  // The horizon is read after the wave and never decreases, so it covers every deletion the
  // wave's snapshot saw; every row of the topic at or below `through` was settled when `through`
  // was visible (STORE.md 1), so nothing can still arrive below it.
  for (size_t i = 0; i < regs.size(); ++i) {
    if (fetched.per_range[i].empty() && regs[i]->active) {
      regs[i]->floor = std::max(regs[i]->floor, throughs[i]);
    }
  }
  co_return true;
}

// implements: API-261 (round-robin waves), STORE.md 7 (catch-up history), ARC-086, ARC-087
asio::awaitable<std::optional<Ending>> StreamSession::CatchUpWave() {
  // The wave: up to turn_topics registrations from the front of the queue.
  std::vector<store::CatchUpRange> ranges;
  std::vector<RegistrationPtr> wave = TakeWave(ranges);
  if (wave.empty()) {
    co_return std::nullopt;
  }
  FetchedWave read = co_await FetchWave(std::move(ranges), wave);
  if (!read.wave) {
    co_return std::move(read.ending);
  }
  Wave& fetched = *read.wave;
  if (auto ending = QueueWave(wave, fetched)) {
    co_return ending;
  }
  if (deps_.wave_buffers != nullptr) {
    deps_.wave_buffers->Give(std::move(fetched.bytes));  // every frame has copied its rows
  }
  RequeueWave(wave, fetched);
  co_return std::nullopt;
}

namespace {

// Visits a wave's rows interleaving the registrations row by row, so none gets a second row
// before every other one of the wave has had one (API-261); rows of removed registrations and
// rows at or below a floor are skipped. `visit(reg, row)` returns an ending to stop.
template <typename Visit>
std::optional<Ending> ForEachWaveRow(const std::vector<RegistrationPtr>& wave, const Wave& fetched,
                                     Visit&& visit) {
  const auto& per = fetched.per_range;
  size_t longest = 0;
  for (const auto& rows : per) {
    longest = std::max(longest, rows.size());
  }
  for (size_t k = 0; k < longest; ++k) {
    for (size_t i = 0; i < wave.size(); ++i) {
      if (k >= per[i].size()) {
        continue;
      }
      Registration& reg = *wave[i];
      const WaveRow& row = per[i][k];
      if (!reg.active || row.sequence_id <= reg.floor) {
        continue;
      }
      if (auto ending = visit(reg, row)) {
        return ending;
      }
    }
  }
  return std::nullopt;
}

}  // namespace

// Frames interleave the registrations row by row, so none gets a second frame of catch-up rows
// before every other one of the wave has had one (API-261).
std::optional<Ending> StreamSession::QueueWave(const std::vector<RegistrationPtr>& wave,
                                               const Wave& fetched) {
  if (wire_.row_per_message()) {
    return QueueWaveRows(wave, fetched);
  }
  MessagesFrame frame(messages_field_);
  const size_t catch_up_frame_bytes = std::min(limits_.catch_up_frame_bytes, limits_.frame_bytes);
  auto ending = ForEachWaveRow(
      wave, fetched, [&](Registration& reg, const WaveRow& row) -> std::optional<Ending> {
        if (frame.SizeAlone(row.size) > limits_.frame_bytes) {
          return TooLarge();
        }
        if (!frame.empty() && frame.SizeWith(row.size) > catch_up_frame_bytes) {
          if (auto queued = QueueMessages(frame, false)) {
            return queued;
          }
        }
        frame.Add(fetched.Encoded(row));
        reg.floor = row.sequence_id;
        return std::nullopt;
      });
  if (ending) {
    return ending;
  }
  if (!frame.empty()) {
    return QueueMessages(frame, false);
  }
  return std::nullopt;
}

// One response message per row, copied from the wave's buffer (or a cached chunk).
std::optional<Ending> StreamSession::QueueWaveRows(const std::vector<RegistrationPtr>& wave,
                                                   const Wave& fetched) {
  return ForEachWaveRow(
      wave, fetched, [&](Registration& reg, const WaveRow& row) -> std::optional<Ending> {
        if (row.size > limits_.frame_bytes) {
          return TooLarge();
        }
        const std::string_view bytes = fetched.Encoded(row);
        const Status queued = call_->WriteNowInPlace(
            bytes.size(), [bytes](char* dst) { std::memcpy(dst, bytes.data(), bytes.size()); });
        if (queued.ok()) {
          CountFrame(1, /*live=*/false);
        }
        reg.floor = row.sequence_id;
        return std::nullopt;
      });
}

// Unfinished registrations go to the back of the queue; finished ones turn live. Where the byte
// cutoff ended the wave mid-round, the ones it left a row short go first, so the rounds of
// API-261 continue across waves.
void StreamSession::RequeueWave(std::vector<RegistrationPtr>& wave, const Wave& fetched) {
  std::vector<std::pair<size_t, RegistrationPtr>> unfinished;
  for (size_t i = 0; i < wave.size(); ++i) {
    RegistrationPtr& reg = wave[i];
    if (!reg->active) {
      reg->in_queue = false;
    } else if (deps_.registry->TrySwitchLive(*reg)) {
      reg->in_queue = false;
    } else {
      unfinished.emplace_back(fetched.per_range[i].size(), std::move(reg));
    }
  }
  std::stable_sort(unfinished.begin(), unfinished.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  for (auto& [rows, reg] : unfinished) {
    catch_up_.push_back(std::move(reg));
  }
}

}  // namespace xb::fanout
