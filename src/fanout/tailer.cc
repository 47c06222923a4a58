#include "fanout/tailer.h"

#include <algorithm>

#include "base/thread_name.h"

namespace xb::fanout {

namespace {

using Clock = std::chrono::steady_clock;

// Initial private constants of STORE.md 5.3.
constexpr size_t kProbeRangesPerStatement = 128;
constexpr uint32_t kProbeRowsPerRange = 64;
constexpr uint32_t kForwardRows = 1024;
constexpr uint64_t kPollByteBudget = uint64_t{64} << 20;  // ARC-077
constexpr uint64_t kRowOverheadBytes = 256;

Ending Lost() {
  return Ending{Status(StatusCode::kUnavailable,
                       "stream recovery restarted: the read database connection was lost; "
                       "reconnect from your cursors"),
                telemetry::StreamEndReason::kTailer};
}

Ending GapOverflow() {
  return Ending{Status(StatusCode::kResourceExhausted,
                       "stream recovery restarted: too many unresolved sequence ranges; "
                       "reconnect from your cursors"),
                telemetry::StreamEndReason::kCapacity};
}

}  // namespace

Tailer::Tailer(store::Store& store, Registry& registry, telemetry::Metrics& metrics,
               telemetry::Logger& logger, RowEncoder encoder, TailerOptions options)
    : store_(store),
      registry_(registry),
      metrics_(metrics),
      logger_(logger),
      encoder_(std::move(encoder)),
      options_(options) {}

Tailer::~Tailer() { Stop(); }

void Tailer::Start() {
  tailer_thread_ = std::thread([this] { Run(); });
  boundary_thread_ = std::thread([this] { RunBoundaryWorker(); });
}

bool Tailer::WaitReadyFor(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  ready_cv_.wait_for(lock, timeout, [&] { return ready_once_ || stopping_; });
  return ready_once_;
}

void Tailer::Stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  tailer_cv_.notify_all();
  boundary_cv_.notify_all();
  ready_cv_.notify_all();
  if (tailer_thread_.joinable()) {
    tailer_thread_.join();
  }
  if (boundary_thread_.joinable()) {
    boundary_thread_.join();
  }
}

void Tailer::OnCommit(int64_t /*last_id*/) {
  bool wake = false;
  {
    std::lock_guard lock(mu_);
    // Only the first commit while the tailer waits for one needs to wake it.
    wake = waiting_for_commit_ && !committed_;
    committed_ = true;
  }
  if (wake) {
    tailer_cv_.notify_one();
  }
}

bool Tailer::SleepUntil(Clock::time_point until, bool wake_on_commit) {
  std::unique_lock lock(mu_);
  waiting_for_commit_ = wake_on_commit;
  tailer_cv_.wait_until(
      lock, until, [&] { return stopping_ || boundary_failed_ || (wake_on_commit && committed_); });
  waiting_for_commit_ = false;
  return !stopping_;
}

void Tailer::RequestBoundaryAdvance() {
  {
    std::lock_guard lock(mu_);
    boundary_requested_ = true;
  }
  boundary_cv_.notify_one();
}

// implements: STORE.md 4.3 (requests coalesce into one pending bit, cleared just before an
// attempt; attempts at least one poll interval apart; a lock timeout keeps it pending; an error
// ends the generation, ARC-082)
void Tailer::RunBoundaryWorker() {
  NameThisThread("xb-boundary");
  while (true) {
    {
      std::unique_lock lock(mu_);
      boundary_cv_.wait(lock, [&] { return stopping_ || boundary_requested_; });
      if (stopping_) {
        return;
      }
      boundary_requested_ = false;
    }
    auto result = store_.AdvanceBoundary();
    auto& advances = metrics_.tailer().boundary_advances;
    if (!result.ok()) {
      advances.Inc(telemetry::BoundaryResult::kError);
      logger_.Warn("allocation boundary advance failed; restarting stream recovery");
      {
        std::lock_guard lock(mu_);
        boundary_failed_ = true;
      }
      tailer_cv_.notify_one();  // ends the tailer's sleep (SleepUntil)
    } else if (result.value().lock_timeout) {
      advances.Inc(telemetry::BoundaryResult::kLockTimeout);
      logger_.Warn("allocation boundary advance timed out waiting for the barrier");
      std::lock_guard lock(mu_);
      boundary_requested_ = true;
    } else {
      advances.Inc(telemetry::BoundaryResult::kOk);
      if (options_.on_boundary_advanced) {
        options_.on_boundary_advanced();
      }
    }
    std::unique_lock lock(mu_);
    boundary_cv_.wait_for(lock, options_.poll_interval, [&] { return stopping_; });
    if (stopping_) {
      return;
    }
  }
}

void Tailer::Run() {
  NameThisThread("xb-tailer");
  while (true) {
    telemetry::Span bootstrap_span;
    if (options_.tracer != nullptr) {
      bootstrap_span = options_.tracer->Start(telemetry::Operation::kTailerBootstrap, {});
    }
    if (!Bootstrap()) {
      bootstrap_span.SetError();
      return;
    }
    bootstrap_span.End();
    bool first_ready = false;
    {
      std::lock_guard lock(mu_);
      first_ready = !ready_once_;
      ready_once_ = true;
    }
    ready_cv_.notify_all();
    if (first_ready && options_.on_first_ready) {
      options_.on_first_ready();
    }
    while (true) {
      const auto started = Clock::now();
      {
        std::lock_guard lock(mu_);
        if (stopping_) {
          return;
        }
        if (boundary_failed_) {
          break;
        }
        committed_ = false;
      }
      telemetry::Span poll_span;
      if (options_.tracer != nullptr) {
        poll_span = options_.tracer->Start(telemetry::Operation::kTailerPoll, {});
      }
      const PollOutcome outcome = Poll();
      if (outcome == PollOutcome::kFailed || outcome == PollOutcome::kGapOverflow) {
        poll_span.SetError();
      }
      poll_span.End();
      if (outcome == PollOutcome::kFailed) {
        break;
      }
      if (outcome == PollOutcome::kGapOverflow) {
        EndGeneration(GapOverflow());
        break;
      }
      if (outcome == PollOutcome::kIncomplete) {
        continue;  // ARC-071: a poll cut short polls again at once
      }
      // A commit wakes the next poll early, but no earlier than commit_wake_gap after this one
      // began: under a publish load the polls stay bounded in number.
      const auto gap = std::min(options_.commit_wake_gap, options_.poll_interval);
      if (gap.count() > 0 && !SleepUntil(started + gap, /*wake_on_commit=*/false)) {
        return;
      }
      if (!SleepUntil(started + options_.poll_interval, /*wake_on_commit=*/true)) {
        return;
      }
    }
    {
      std::lock_guard lock(mu_);
      if (stopping_) {
        return;
      }
    }
    // A poll error or a boundary error (the gap overflow ended its generation already).
    if (registry_.ready()) {
      EndGeneration(Lost());
    }
  }
}

void Tailer::EndGeneration(const Ending& ending) {
  logger_.Warn("stream recovery restarting; open streams end",
               {telemetry::Field::Error(ending.status)});
  registry_.FailAll(ending);
  reader_.reset();
  gaps_.Clear();
}

// implements: STORE.md 5.2 (recovery generation), OPS-006
bool Tailer::Bootstrap() {
  // Step 1. Streams of a previous generation were failed by EndGeneration.
  metrics_.tailer().restarts.Inc();
  metrics_.tailer().gap_ranges.Set(0);
  metrics_.tailer().ready.Set(0);
  {
    std::lock_guard lock(mu_);
    boundary_failed_ = false;
  }
  reader_.reset();
  gaps_.Clear();
  bool first_attempt = true;
  while (true) {
    if (!first_attempt && !SleepUntil(Clock::now() + options_.poll_interval, false)) {
      return false;
    }
    first_attempt = false;
    {
      std::lock_guard lock(mu_);
      if (stopping_) {
        return false;
      }
    }
    // Step 2: the boundary B on the primary.
    auto advance = store_.AdvanceBoundary();
    auto& advances = metrics_.tailer().boundary_advances;
    if (!advance.ok()) {
      advances.Inc(telemetry::BoundaryResult::kError);
      logger_.Warn("stream recovery: allocation boundary advance failed; retrying");
      continue;
    }
    const auto& outcome = advance.value();
    if (outcome.lock_timeout) {
      advances.Inc(telemetry::BoundaryResult::kLockTimeout);
      continue;
    }
    advances.Inc(telemetry::BoundaryResult::kOk);
    const int64_t boundary = outcome.boundary;
    // Step 3: a fresh dedicated connection to the read database.
    auto reader = store_.OpenTailReader();
    if (!reader.ok()) {
      logger_.Warn("stream recovery: cannot open the tailer's read connection; retrying");
      continue;
    }
    reader_ = std::move(reader).value();
    // Step 4: wait until the read database shows B.
    bool visible = false;
    bool failed = false;
    while (!visible && !failed) {
      auto seen = reader_->Begin();
      auto ended = reader_->End();
      if (!seen.ok() || !ended.ok()) {
        failed = true;
      } else if (seen.value() >= boundary) {
        visible = true;
      } else if (!SleepUntil(Clock::now() + options_.poll_interval, false)) {
        return false;
      }
    }
    if (failed) {
      logger_.Warn("stream recovery: the read database failed while catching up; retrying");
      reader_.reset();
      continue;
    }
    // Step 5.
    cursor_ = boundary;
    gaps_.Clear();
    registry_.SetReady();
    return true;
  }
}

struct Tailer::PollScan {
  // Takes `row` unless it would pass the poll's byte budget (the first row always fits).
  bool Admit(const store::RowHead& row) {
    const uint64_t cost = row.payload_bytes + kRowOverheadBytes;
    if (!selected.empty() && bytes + cost > kPollByteBudget) {
      return false;
    }
    bytes += cost;
    selected.push_back(row);
    return true;
  }

  std::vector<store::RowHead> selected;
  uint64_t bytes = 0;
  uint64_t gap_rows = 0;
  uint64_t forward_rows = 0;
  bool incomplete = false;
};

// Gap probes, ascending, in batches.
Tailer::StepFailure Tailer::ProbeGaps(int64_t boundary, PollScan& scan) {
  const auto ranges = gaps_.Ranges();
  for (size_t start = 0; start < ranges.size() && !scan.incomplete;
       start += kProbeRangesPerStatement) {
    const size_t end = std::min(ranges.size(), start + kProbeRangesPerStatement);
    std::vector<store::IdRange> batch(ranges.begin() + static_cast<ptrdiff_t>(start),
                                      ranges.begin() + static_cast<ptrdiff_t>(end));
    auto probed = reader_->Probe(batch, kProbeRowsPerRange);
    if (!probed.ok()) {
      return StepFailure::kDatabase;
    }
    const auto& per_range = probed.value();
    if (per_range.size() != batch.size()) {
      return StepFailure::kInvariant;
    }
    for (size_t i = 0; i < batch.size(); ++i) {
      bool fit = true;
      for (const auto& row : per_range[i]) {
        if (!scan.Admit(row)) {
          fit = false;
          break;
        }
        gaps_.Subtract(row.sequence_id, row.sequence_id);
        ++scan.gap_rows;
      }
      if (!fit || per_range[i].size() >= kProbeRowsPerRange) {
        scan.incomplete = true;
        break;
      }
      // ARC-038: only the boundary of this same snapshot retires a gap.
      gaps_.Subtract(batch[i].low, std::min(batch[i].high, boundary));
    }
  }
  return StepFailure::kNone;
}

// Forward scan, only after complete probes (ARC-037).
Tailer::StepFailure Tailer::ScanForward(PollScan& scan) {
  auto forward = reader_->Forward(cursor_, kForwardRows);
  if (!forward.ok()) {
    return StepFailure::kDatabase;
  }
  const auto& rows = forward.value();
  for (const auto& row : rows) {
    if (!scan.Admit(row)) {
      scan.incomplete = true;
      break;
    }
    if (row.sequence_id > cursor_ + 1) {
      gaps_.Add(cursor_ + 1, row.sequence_id - 1);
    }
    cursor_ = row.sequence_id;
    ++scan.forward_rows;
  }
  if (rows.size() >= kForwardRows) {
    scan.incomplete = true;
  }
  return StepFailure::kNone;
}

// Payloads of the selected ids that some registration wants, same snapshot, encoded.
Tailer::StepFailure Tailer::LoadWanted(const PollScan& scan, std::vector<RowPtr>* rows) {
  const std::vector<bool> wanted = registry_.Interested(scan.selected);
  std::vector<int64_t> ids;
  for (size_t i = 0; i < scan.selected.size(); ++i) {
    if (wanted[i]) {
      ids.push_back(scan.selected[i].sequence_id);
    }
  }
  if (ids.empty()) {
    return StepFailure::kNone;
  }
  auto loaded = reader_->Load(ids);
  if (!loaded.ok()) {
    return StepFailure::kDatabase;
  }
  auto& full = loaded.value();
  if (full.size() != ids.size()) {
    return StepFailure::kInvariant;
  }
  rows->reserve(full.size());
  for (auto& envelope : full) {
    auto row = std::make_shared<DeliveryRow>();
    row->sequence_id = envelope.meta.sequence_id;
    if (!encoder_(store::StoredEnvelopeView::Of(envelope), &row->encoded)) {
      return StepFailure::kInvariant;
    }
    row->topic = std::move(envelope.meta.topic);
    rows->push_back(std::move(row));
  }
  return StepFailure::kNone;
}

// implements: STORE.md 5.3 (one poll, one snapshot), ARC-037, ARC-038, ARC-042, ARC-077
Tailer::PollOutcome Tailer::Poll() {
  auto& tm = metrics_.tailer();
  auto fail = [&](StepFailure failure) {
    tm.polls.Inc(telemetry::TailerPollResult::kError);
    if (failure == StepFailure::kInvariant) {
      metrics_.db().errors.Inc(telemetry::DbErrorKind::kInvariant);
    }
    if (reader_) {
      (void)reader_->End();  // the poll has failed already; a failed End adds nothing
    }
    return PollOutcome::kFailed;
  };
  auto begun = reader_->Begin();
  if (!begun.ok()) {
    return fail(StepFailure::kDatabase);
  }
  const int64_t b = begun.value();

  PollScan scan;
  if (StepFailure failure = ProbeGaps(b, scan); failure != StepFailure::kNone) {
    return fail(failure);
  }
  if (!scan.incomplete) {
    if (StepFailure failure = ScanForward(scan); failure != StepFailure::kNone) {
      return fail(failure);
    }
  }
  std::vector<RowPtr> rows;
  if (StepFailure failure = LoadWanted(scan, &rows); failure != StepFailure::kNone) {
    return fail(failure);
  }
  if (!reader_->End().ok()) {
    return fail(StepFailure::kDatabase);
  }
  tm.polls.Inc(telemetry::TailerPollResult::kOk);
  tm.rows.Add(telemetry::TailerRowSource::kForward, scan.forward_rows);
  tm.rows.Add(telemetry::TailerRowSource::kGap, scan.gap_rows);
  tm.gap_ranges.Set(static_cast<int64_t>(gaps_.size()));

  // ARC-042: overflow ends the generation before dispatching; unknown gaps are never dropped.
  if (gaps_.size() > options_.max_gap_ranges) {
    return PollOutcome::kGapOverflow;
  }
  if (!rows.empty()) {
    registry_.Dispatch(rows);
  }
  if (gaps_.highest() > b) {
    RequestBoundaryAdvance();
  }
  return scan.incomplete ? PollOutcome::kIncomplete : PollOutcome::kComplete;
}

}  // namespace xb::fanout
