#include "fanout/streams.h"

#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace xb::fanout {

namespace asio = boost::asio;

Streams::Streams(store::Store& store, store::DbPool& db, telemetry::Metrics& metrics,
                 telemetry::Logger& logger, telemetry::Tracer* tracer, RowEncoder encoder,
                 StreamsOptions options)
    : store_(store),
      db_(db),
      metrics_(metrics),
      tracer_(tracer),
      encoder_(encoder),
      registry_(metrics),
      fetch_permits_(options.fetch_permits),
      wave_buffers_(options.fetch_permits, options.wave_buffer_bytes),
      history_cache_(options.history_cache_bytes),
      tailer_(
          store, registry_, metrics, logger, std::move(encoder),
          TailerOptions{.poll_interval = options.poll_interval,
                        .max_gap_ranges = options.max_gap_ranges,
                        .commit_wake_gap = store.CommitWakeGap(),
                        .tracer = tracer,
                        .on_first_ready = [this] { OnFirstReady(); },
                        .on_boundary_advanced = [this] { TellObserver(Progress::kBoundary); }}) {}

Streams::~Streams() { Stop(); }

void Streams::Start(asio::any_io_executor executor) {
  ready_timer_.emplace(executor, asio::steady_timer::time_point::max());
  store_.SetCommitListener(
      [this](int64_t last_id) {
        tailer_.OnCommit(last_id);
        TellObserver(Progress::kCommit);
      },
      [this] { return registry_.has_registrations(); });
  started_ = true;
  tailer_.Start();
}

void Streams::SetProgressObserver(std::function<void(Progress)> observer) {
  std::lock_guard lock(observer_mu_);
  progress_observer_ = std::move(observer);
}

void Streams::TellObserver(Progress progress) {
  std::lock_guard lock(observer_mu_);
  if (progress_observer_) {
    progress_observer_(progress);
  }
}

void Streams::OnFirstReady() {
  // Tailer thread: hand the news to the executor that waits for it.
  asio::post(ready_timer_->get_executor(), [this] {
    ready_ = true;
    ready_timer_->cancel();
  });
}

asio::awaitable<bool> Streams::WaitReady() {
  if (!ready_ && !wait_cancelled_) {
    boost::system::error_code ec;
    co_await ready_timer_->async_wait(asio::redirect_error(asio::use_awaitable, ec));
  }
  co_return ready_ && !wait_cancelled_;
}

void Streams::CancelWait() {
  wait_cancelled_ = true;
  if (ready_timer_) {
    ready_timer_->cancel();
  }
}

void Streams::Shutdown(const Ending& ending) { registry_.Shutdown(ending); }

void Streams::Stop() {
  if (!started_) {
    return;
  }
  started_ = false;
  tailer_.Stop();
  store_.SetCommitListener(nullptr);
}

StreamDeps Streams::Deps() {
  return StreamDeps{.store = &store_,
                    .db = &db_,
                    .registry = &registry_,
                    .permits = &fetch_permits_,
                    .wave_buffers = &wave_buffers_,
                    .history = &history_cache_,
                    .metrics = &metrics_,
                    .encoder = encoder_,
                    .tracer = tracer_};
}

}  // namespace xb::fanout
