#include "server/prune_pass.h"

#include <algorithm>
#include <utility>

#include "api/store_status.h"

namespace xb::server {

namespace {
using SteadyClock = std::chrono::steady_clock;
constexpr std::chrono::milliseconds kMinPause{5};
constexpr int kPauseFactor = 4;  // pause = 4 x the batch: the pass takes about 20% at most
}  // namespace

PrunePass::PrunePass(store::Store& store, telemetry::Metrics& metrics, telemetry::Logger& logger,
                     telemetry::Tracer* tracer, std::function<void()> request_boundary_advance,
                     PrunePassOptions options)
    : store_(store),
      metrics_(metrics),
      logger_(logger),
      tracer_(tracer),
      request_boundary_advance_(std::move(request_boundary_advance)),
      options_(options) {}

PrunePass::~PrunePass() { Stop(); }

void PrunePass::Start() {
  thread_ = std::thread([this] { Loop(); });
}

void PrunePass::Halt() {
  {
    std::lock_guard lock(mu_);
    halted_ = true;
    wake_.notify_all();
  }
  store_.CancelPreparePruning();  // an index build in progress stops too
}

void PrunePass::Stop() {
  Halt();
  if (thread_.joinable()) {
    thread_.join();
  }
}

SteadyClock::duration PrunePass::PauseAfter(SteadyClock::duration took) {
  return std::max<SteadyClock::duration>(kMinPause, took * kPauseFactor);
}

bool PrunePass::halted() {
  std::lock_guard lock(mu_);
  return halted_;
}

bool PrunePass::Sleep(SteadyClock::duration d) {
  std::unique_lock lock(mu_);
  return !wake_.wait_for(lock, d, [this] { return halted_; });
}

void PrunePass::Loop() {
  bool prepared = false;
  while (Sleep(options_.interval)) {
    if (!prepared) {
      prepared = Prepare();
    }
    if (prepared) {
      RunPass();
    }
  }
}

// implements: STORE.md 9.2 rule 5 (the partial index on the expiry, before the first batch)
bool PrunePass::Prepare() {
  const auto started = SteadyClock::now();
  store::StoreResult<bool> ready = store_.PreparePruning();
  if (!ready.ok()) {
    if (!halted()) {
      logger_.Warn("prune index build failed; the next pass retries",
                   {telemetry::Field::Reason(api::FailureCause(ready.error()))});
    }
    return false;
  }
  const std::chrono::duration<double> took = SteadyClock::now() - started;
  if (ready.value()) {
    logger_.Info("prune index ready", {telemetry::Field::DurationMs(took.count() * 1000)});
  }
  return ready.value();
}

// implements: STORE.md 9.2 rule 5 (bounded batches repeated with a pause; a drain stops the pass)
void PrunePass::RunPass() {
  if (request_boundary_advance_) {
    request_boundary_advance_();
  }
  const auto started = SteadyClock::now();
  telemetry::Span pass;
  if (tracer_ != nullptr) {
    pass = tracer_->Start(telemetry::Operation::kPrunePass, {});
  }
  uint64_t deleted = 0;
  bool failed = false;
  store::PruneKey after;
  while (!halted()) {
    const auto batch_start = SteadyClock::now();
    telemetry::Span batch;
    if (tracer_ != nullptr) {
      batch = tracer_->Start(telemetry::Operation::kPruneBatch, pass.context());
    }
    store::StoreResult<store::PruneBatchResult> r =
        store_.PruneBatch(after, options_.batch, options_.hold_at_push_cursor);
    if (!r.ok()) {
      batch.SetError();
      failed = true;
      logger_.Warn("prune batch failed; the next pass retries",
                   {telemetry::Field::Reason(api::FailureCause(r.error()))});
      break;
    }
    const store::PruneBatchResult& done = r.value();
    batch.Set(telemetry::IntAttribute::kRows, static_cast<int64_t>(done.deleted));
    batch.End();
    deleted += done.deleted;
    metrics_.prune().envelopes.Add(done.deleted);
    if (done.done || done.busy) {
      break;
    }
    after = done.next;
    if (!Sleep(PauseAfter(SteadyClock::now() - batch_start))) {
      break;
    }
  }
  if (failed) {
    pass.SetError();
  }
  pass.Set(telemetry::IntAttribute::kRows, static_cast<int64_t>(deleted));
  pass.End();
  const std::chrono::duration<double> took = SteadyClock::now() - started;
  metrics_.prune().pass_seconds.Observe(took.count());
  logger_.Info("prune pass ended", {telemetry::Field::Count(deleted),
                                    telemetry::Field::DurationMs(took.count() * 1000)});
}

}  // namespace xb::server
