// The dispatcher loop (spec/PUSH.md 8, 11). Everything below runs on the dispatcher's own thread
// (one io_context), so its state needs no lock; blocking store calls go to the two pools and the
// caller resumes on this thread with the answer.
//
// GCC 12 may destroy a temporary with a non-trivial destructor created inside a co_await
// expression twice (base/offload_pool.h): every lambda handed to a coroutine is named first.
//
// One holding of the lock is one Holding: its lock connection, read position P, cursor, windows,
// queue. Attempts share the Holding they were started in (shared_ptr), so an attempt that
// outlives an ownership loss finishes against the old holding and writes nothing.
#include "push/dispatcher.h"

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <deque>
#include <functional>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include "base/thread_name.h"
#include "push/attempt_state.h"
#include "push/delivery_queue.h"
#include "push/suppression.h"
#include "push/watermark.h"
#include "store/push.h"

namespace xb::push {

namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;
using telemetry::PushOutcome;

namespace {

// Lock-connection calls at once: at most one per retained delivery (dead deletions) plus the
// tick's own.
constexpr size_t kLockJobs = kQueuedDeliveries + 64;
constexpr size_t kReadJobs = 8;
// Drain: the final cursor write starts this long before the deadline.
constexpr std::chrono::milliseconds kDrainMargin{200};

std::optional<Channel> ChannelOf(int32_t number) {
  if (number < 1 || number > 3) {
    return std::nullopt;
  }
  return static_cast<Channel>(number);
}

telemetry::PushChannel Label(Channel channel) {
  switch (channel) {
    case Channel::kApns:
      return telemetry::PushChannel::kApns;
    case Channel::kFcm:
      return telemetry::PushChannel::kFcm;
    case Channel::kHttp:
      return telemetry::PushChannel::kHttp;
  }
  return telemetry::PushChannel::kHttp;
}

store::StoreError Refused() {
  store::StoreError error;
  error.kind = store::ErrorKind::kQueueFull;
  error.message = "the push dispatcher's store queue is full";
  return error;
}

// Recipient configurations deleted as dead in this holding (PUSH.md 8.5): their queued and
// retried deliveries are dropped. Bounded; the oldest is forgotten first.
class RecentlyDead {
 public:
  void Insert(const store::PushRecipient& recipient) {
    if (entries_.size() == kMax) {
      entries_.pop_front();
    }
    entries_.push_back(recipient);
  }
  bool Contains(const store::PushRecipient& recipient) const {
    return std::find(entries_.begin(), entries_.end(), recipient) != entries_.end();
  }

 private:
  static constexpr size_t kMax = 1024;
  std::deque<store::PushRecipient> entries_;
};

// A page of deliveries with the suppression verdict of each (decided on the read pool).
struct LoadedPage {
  std::vector<store::PushDelivery> rows;
  std::vector<bool> suppressed;
};

// implements: PUSH-230 (suppression applied while loading, PUSH.md 8.3)
store::StoreResult<LoadedPage> LoadPage(store::PushStore& push, const store::PushWindow& window,
                                        const std::optional<store::DeliveryKey>& after,
                                        uint32_t limit) {
  XB_TRY(auto rows, push.PushDeliveries(window, after, limit));
  LoadedPage page;
  page.suppressed.reserve(rows.size());
  for (const store::PushDelivery& row : rows) {
    page.suppressed.push_back(Suppressed(SuppressionInput{.server_ns = row.server_ns,
                                                          .sender_hmac = row.sender_hmac,
                                                          .hmac_epoch_base = row.hmac_epoch_base,
                                                          .hmac_keys = row.hmac_keys,
                                                          .payload = row.payload}));
  }
  page.rows = std::move(rows);
  return page;
}

}  // namespace

struct Dispatcher::Holding {
  explicit Holding(std::unique_ptr<store::PushLock> held)
      : lock(std::move(held)), queue(kQueuedDeliveries, kInFlightPerChannel) {}

  std::unique_ptr<store::PushLock> lock;  // touched on lock_pool_ only, after construction
  bool lost = false;                      // no more loading, cursor or recipient writes
  int64_t read_position = 0;              // P
  int64_t last_written = 0;               // the cursor as this holding last wrote or read it
  Watermark watermark;
  DeliveryQueue queue;
  std::optional<store::PushWindow> window;  // the window being paged, if any
  Watermark::WindowId window_id = 0;
  std::optional<store::DeliveryKey> after;         // keyset position inside `window`
  std::optional<Clock::time_point> retention_due;  // nullopt: the first tick runs it
  RecentlyDead dead;
};

class Dispatcher::Loop {
 public:
  Loop(Dispatcher& owner, asio::any_io_executor executor)
      : d_(owner), executor_(executor), wake_(std::in_place, executor) {}

  asio::awaitable<void> Run();
  void RequestDrain(Clock::time_point deadline);
  void RequestStop() { RequestDrain(Clock::now()); }
  // After the thread ended: the timer goes before its io_context (a pending wait is abandoned).
  void DropTimer() { wake_.reset(); }
  // A commit stored rows: a holder asleep between ticks loads now (Dispatcher::Wake).
  void OnWake();

  ChannelSenders senders;

 private:
  asio::awaitable<bool> Acquire();
  asio::awaitable<void> Hold(std::shared_ptr<Holding> h);
  asio::awaitable<bool> Tick(std::shared_ptr<Holding> h);
  asio::awaitable<void> LoadAtBoundary(std::shared_ptr<Holding> h);
  asio::awaitable<bool> PersistCursor(std::shared_ptr<Holding> h);
  asio::awaitable<bool> RetentionIfDue(std::shared_ptr<Holding> h);
  asio::awaitable<void> Load(std::shared_ptr<Holding> h, int64_t boundary);
  asio::awaitable<bool> OpenWindow(std::shared_ptr<Holding> h, int64_t boundary);
  void Admit(Holding& h, store::PushDelivery row, bool suppressed);
  void Pump(const std::shared_ptr<Holding>& h);
  asio::awaitable<void> RunAttempt(std::shared_ptr<Holding> h, ChannelSender* sender, Delivery d);
  asio::awaitable<void> DeleteDead(std::shared_ptr<Holding> h, store::PushRecipient used);
  asio::awaitable<void> EndHolding(std::shared_ptr<Holding> h);
  asio::awaitable<void> WaitInFlight(std::function<bool()> idle, Clock::time_point until);
  asio::awaitable<void> SleepUntil(Clock::time_point when);

  // Runs `call(PushLock&)` on the lock pool; an error when the lock is already dropped.
  template <typename Call>
  auto OnLock(std::shared_ptr<Holding> h, Call call)
      -> asio::awaitable<std::invoke_result_t<Call&, store::PushLock&>>;
  // Runs `call(PushStore&)` on the read pool.
  template <typename Call>
  auto OnRead(Call call) -> asio::awaitable<std::invoke_result_t<Call&, store::PushStore&>>;

  void MarkLost(Holding& h);
  void Count(Channel channel, PushOutcome outcome) {
    d_.metrics_.push().deliveries.Inc(Label(channel), outcome);
  }
  bool PastDrainDeadline() const { return draining_ && Clock::now() >= drain_deadline_; }

  Dispatcher& d_;
  asio::any_io_executor executor_;
  // Optional only so that Stop() can destroy it before the io_context it is bound to.
  std::optional<asio::steady_timer> wake_;
  std::unique_ptr<store::PushLock> candidate_;  // between election tries; lock pool only
  bool draining_ = false;
  bool woken_ = false;            // a commit since the last load step began
  bool holder_sleeping_ = false;  // Hold() sleeps between steps: a wake-up may cut it short
  Clock::time_point drain_deadline_ = Clock::time_point::max();
  size_t attempts_running_ = 0;
};

template <typename Call>
auto Dispatcher::Loop::OnLock(std::shared_ptr<Holding> h, Call call)
    -> asio::awaitable<std::invoke_result_t<Call&, store::PushLock&>> {
  using R = std::invoke_result_t<Call&, store::PushLock&>;
  auto job = [h = std::move(h), call = std::move(call)]() mutable -> R {
    if (h->lock == nullptr) {
      store::StoreError gone;
      gone.kind = store::ErrorKind::kConnection;
      gone.message = "the push lock connection is closed";
      return gone;
    }
    return call(*h->lock);
  };
  auto answer = co_await d_.lock_pool_.Run(std::move(job));
  if (!answer.has_value()) {
    co_return R(Refused());
  }
  co_return std::move(*answer);
}

template <typename Call>
auto Dispatcher::Loop::OnRead(Call call)
    -> asio::awaitable<std::invoke_result_t<Call&, store::PushStore&>> {
  using R = std::invoke_result_t<Call&, store::PushStore&>;
  auto job = [push = d_.store_.push(), call = std::move(call)]() mutable -> R {
    return call(*push);
  };
  auto answer = co_await d_.read_pool_.Run(std::move(job));
  if (!answer.has_value()) {
    co_return R(Refused());
  }
  co_return std::move(*answer);
}

void Dispatcher::Loop::RequestDrain(Clock::time_point deadline) {
  draining_ = true;
  drain_deadline_ = std::min(drain_deadline_, deadline);
  wake_->cancel();
}

void Dispatcher::Loop::OnWake() {
  woken_ = true;
  if (holder_sleeping_) {
    wake_->cancel();
  }
}

void Dispatcher::Loop::MarkLost(Holding& h) {
  h.lost = true;
  wake_->cancel();
}

asio::awaitable<void> Dispatcher::Loop::SleepUntil(Clock::time_point when) {
  wake_->expires_at(when);
  boost::system::error_code ignored;
  co_await wake_->async_wait(asio::redirect_error(asio::use_awaitable, ignored));
}

asio::awaitable<void> Dispatcher::Loop::WaitInFlight(std::function<bool()> idle,
                                                     Clock::time_point until) {
  while (!idle() && Clock::now() < until) {
    co_await SleepUntil(std::min(until, Clock::now() + d_.options_.poll_interval));
  }
}

// implements: PUSH-257 (one dispatcher per deployment: the lock decides who loads)
asio::awaitable<void> Dispatcher::Loop::Run() {
  while (!draining_) {
    if (co_await Acquire()) {
      auto holding = std::make_shared<Holding>(std::move(candidate_));
      co_await Hold(std::move(holding));
      continue;
    }
    co_await SleepUntil(Clock::now() + d_.options_.poll_interval);
  }
  if (candidate_ != nullptr) {
    auto drop = [lock = std::move(candidate_)]() mutable {
      lock.reset();
      return true;
    };
    co_await d_.lock_pool_.Run(std::move(drop));
  }
  d_.SignalDone();
  // Attempts still in flight (past a drain deadline) end within their own 10 s bound.
  std::function<bool()> idle = [this] { return attempts_running_ == 0; };
  co_await WaitInFlight(std::move(idle), Clock::now() + kAttemptDeadline + std::chrono::seconds(1));
}

asio::awaitable<bool> Dispatcher::Loop::Acquire() {
  auto job = [this, push = d_.store_.push()]() -> store::StoreResult<bool> {
    if (candidate_ == nullptr) {
      XB_TRY(candidate_, push->OpenPushLock());
    }
    auto held = candidate_->TryAcquire();
    if (!held.ok()) {
      candidate_.reset();  // a new connection next time
    }
    return held;
  };
  auto held = co_await d_.lock_pool_.Run(std::move(job));
  co_return held.has_value() && held->ok() && held->value();
}

asio::awaitable<void> Dispatcher::Loop::Hold(std::shared_ptr<Holding> h) {
  auto read = [](store::PushLock& lock) { return lock.ReadCursor(); };
  auto cursor = co_await OnLock(h, std::move(read));
  if (!cursor.ok()) {
    MarkLost(*h);
  } else {
    h->read_position = h->last_written = cursor.value();
    d_.metrics_.push().dispatcher.Set(1);
    d_.logger_.Info("push dispatcher lock taken");
  }
  // The tick of PUSH.md 8.2 every poll interval; between ticks, a commit (Wake) or a due retry
  // runs a load step alone, so a push need not wait for the next tick.
  Clock::time_point tick_due = Clock::now();
  while (!h->lost) {
    woken_ = false;
    if (Clock::now() >= tick_due) {
      if (!co_await Tick(h)) {
        break;
      }
      tick_due = Clock::now() + d_.options_.poll_interval;
    } else {
      co_await LoadAtBoundary(h);
    }
    if (draining_ && (h->queue.empty() || Clock::now() >= drain_deadline_ - kDrainMargin)) {
      break;
    }
    Clock::time_point next = tick_due;
    if (auto due = h->queue.NextDue()) {
      next = std::min(next, *due);
    }
    if (draining_) {
      next = std::min(next, drain_deadline_ - kDrainMargin);
    }
    if (!woken_ || draining_) {
      holder_sleeping_ = true;
      co_await SleepUntil(next);
      holder_sleeping_ = false;
    }
  }
  co_await EndHolding(std::move(h));
}

// PUSH.md 8.2, in its order.
asio::awaitable<bool> Dispatcher::Loop::Tick(std::shared_ptr<Holding> h) {
  auto liveness = [](store::PushLock& lock) { return lock.Ping(); };
  auto ping = co_await OnLock(h, std::move(liveness));
  if (!ping.ok() || !ping.value()) {
    MarkLost(*h);
    co_return false;
  }
  if (!co_await PersistCursor(h)) {
    co_return false;
  }
  if (draining_) {
    Pump(h);
    co_return !h->lost;
  }
  auto read_boundary = [](store::PushStore& push) { return push.ClosedBoundary(); };
  auto boundary = co_await OnRead(std::move(read_boundary));
  if (boundary.ok()) {
    const int64_t b = boundary.value();
    auto read_above = [b](store::PushStore& push) { return push.EligibleAbove(b); };
    auto above = co_await OnRead(std::move(read_above));
    if (above.ok() && above.value() && d_.request_boundary_advance_) {
      d_.request_boundary_advance_();  // push does not wait for stream subscribers
    }
  }
  if (!co_await RetentionIfDue(h)) {
    co_return false;
  }
  if (boundary.ok()) {
    co_await Load(h, boundary.value());
  }
  Pump(h);
  co_return !h->lost;
}

// Between ticks: windows up to the current boundary, and due attempts started. No liveness query
// or cursor write (those are the tick's); nothing new is loaded while draining.
asio::awaitable<void> Dispatcher::Loop::LoadAtBoundary(std::shared_ptr<Holding> h) {
  if (!draining_) {
    auto read_boundary = [](store::PushStore& push) { return push.ClosedBoundary(); };
    auto boundary = co_await OnRead(std::move(read_boundary));
    if (boundary.ok()) {
      co_await Load(h, boundary.value());
    }
  }
  Pump(h);
}

// implements: PUSH-257 (the cursor is written by compare-and-set, never lower; a failed CAS is an
// ownership loss)
asio::awaitable<bool> Dispatcher::Loop::PersistCursor(std::shared_ptr<Holding> h) {
  const int64_t low = h->watermark.Low(h->read_position);
  if (low <= h->last_written) {
    co_return true;
  }
  if (h->lost) {
    co_return false;
  }
  const int64_t last = h->last_written;
  auto advance = [last, low](store::PushLock& lock) { return lock.AdvanceCursor(last, low); };
  auto moved = co_await OnLock(h, std::move(advance));
  if (!moved.ok() || !moved.value()) {
    MarkLost(*h);
    co_return false;
  }
  h->last_written = low;
  co_return true;
}

// implements: PUSH-226
asio::awaitable<bool> Dispatcher::Loop::RetentionIfDue(std::shared_ptr<Holding> h) {
  if (h->retention_due.has_value() && Clock::now() < *h->retention_due) {
    co_return true;
  }
  const uint64_t ttl = d_.options_.recipient_ttl_seconds;
  auto expire = [ttl](store::PushLock& lock) { return lock.DeleteExpired(ttl); };
  auto expired = co_await OnLock(h, std::move(expire));
  if (!expired.ok()) {
    MarkLost(*h);
    co_return false;
  }
  if (expired.value() > 0) {
    d_.metrics_.push().recipients.Add(telemetry::PushRecipientAction::kExpired, expired.value());
  }
  d_.logger_.Info("push retention pass done", {telemetry::Field::Count(expired.value())});
  h->retention_due = Clock::now() + kRetentionInterval;  // after the previous pass ended
  co_return true;
}

// PUSH.md 8.3: windows of eligible ids in (P, B], their deliveries in keyset pages, while the
// queue has room.
asio::awaitable<void> Dispatcher::Loop::Load(std::shared_ptr<Holding> h, int64_t boundary) {
  while (!h->lost && !draining_ && h->queue.room() > 0) {
    if (!h->window.has_value() && !co_await OpenWindow(h, boundary)) {
      co_return;
    }
    const store::PushWindow window = *h->window;
    const std::optional<store::DeliveryKey> after = h->after;
    const auto limit = static_cast<uint32_t>(std::min<size_t>(kPageDeliveries, h->queue.room()));
    auto load = [window, after, limit](store::PushStore& push) {
      return LoadPage(push, window, after, limit);
    };
    auto page = co_await OnRead(std::move(load));
    if (!page.ok() || h->lost || draining_) {
      co_return;  // a page read but not admitted is replayed with its window
    }
    LoadedPage& loaded = page.value();
    const size_t n = loaded.rows.size();
    if (n == limit) {
      h->after = store::DeliveryKey{.sequence_id = loaded.rows.back().sequence_id,
                                    .recipient_id = loaded.rows.back().recipient.recipient_id};
    }
    for (size_t i = 0; i < n; ++i) {
      Admit(*h, std::move(loaded.rows[i]), loaded.suppressed[i]);
    }
    if (n < limit) {
      h->watermark.AllPagesLoaded(h->window_id);
      h->read_position = window.last;  // PUSH.md 8.3 Advance
      h->window.reset();
      h->after.reset();
    }
    Pump(h);
  }
}

// Opens the next window above P; false when there is none below the boundary (P then moves to B:
// nothing eligible lies between) or the read failed.
asio::awaitable<bool> Dispatcher::Loop::OpenWindow(std::shared_ptr<Holding> h, int64_t boundary) {
  const int64_t from = h->read_position;
  if (from >= boundary) {
    co_return false;
  }
  auto next = [from, boundary](store::PushStore& push) {
    return push.NextPushWindow(from, boundary, kWindowEnvelopes);
  };
  auto window = co_await OnRead(std::move(next));
  if (!window.ok() || h->lost || h->read_position != from) {
    co_return false;
  }
  if (window.value().envelopes == 0) {
    h->read_position = boundary;
    co_return false;
  }
  h->window = window.value();
  h->window_id = h->watermark.Open(from);
  h->after.reset();
  co_return true;
}

// implements: PUSH-257 (a recipient on a channel not configured here: failed, no request)
void Dispatcher::Loop::Admit(Holding& h, store::PushDelivery row, bool suppressed) {
  const std::optional<Channel> channel = ChannelOf(row.recipient.channel);
  if (!channel.has_value()) {
    return;  // the store keeps 1..3 (PUSH.md 3.1); there is no label for anything else
  }
  if (suppressed) {
    Count(*channel, PushOutcome::kSuppressed);  // counts as first-attempted
    return;
  }
  if (!senders.contains(*channel) || h.dead.Contains(row.recipient)) {
    Count(*channel, PushOutcome::kFailed);
    return;
  }
  h.watermark.AddPending(h.window_id, 1);
  h.queue.Push(
      Delivery{.window = h.window_id,
               .first_attempted = false,
               .state = {},
               .channel = *channel,
               .recipient = std::move(row.recipient),
               .message = PushMessage{.topic = std::move(row.topic),
                                      .sequence_id = static_cast<uint64_t>(row.sequence_id)}});
}

// Starts every attempt that may start now, channel by channel: a channel at its in-flight bound
// holds back only itself.
void Dispatcher::Loop::Pump(const std::shared_ptr<Holding>& h) {
  if (h->lost || PastDrainDeadline()) {
    return;
  }
  const Clock::time_point now = Clock::now();
  for (auto& [channel, sender] : senders) {
    while (auto next = h->queue.NextReady(channel, now)) {
      ++attempts_running_;
      asio::co_spawn(executor_, RunAttempt(h, sender.get(), std::move(*next)), asio::detached);
    }
  }
}

// implements: PUSH-259 (attempts bounded to 10 s, retries after the clamped delay, one final
// outcome per delivery)
asio::awaitable<void> Dispatcher::Loop::RunAttempt(std::shared_ptr<Holding> h,
                                                   ChannelSender* sender, Delivery d) {
  const Target target{.recipient_id = d.recipient.recipient_id,
                      .delivery = d.recipient.delivery,
                      .signing_key = d.recipient.signing_key};
  const AttemptResult result =
      co_await sender->Attempt(target, d.message, Clock::now() + kAttemptDeadline);
  --attempts_running_;
  if (!d.first_attempted) {
    d.first_attempted = true;
    h->watermark.FirstAttemptDone(d.window);
  }
  NextStep step = AfterAttempt(d.state, result, d_.options_.max_attempts);
  step = AbandonIfBlocked(
      step, h->dead.Contains(d.recipient) ? RetryBlock::kConfigurationDead : RetryBlock::kNone);
  if (step.kind == NextStep::Kind::kRetry && !h->lost && !PastDrainDeadline()) {
    h->queue.Retry(std::move(d), Clock::now() + step.delay);
  } else {
    h->queue.Finished(d.channel);
    // A retry cut short by an ownership loss or the drain deadline ends failed.
    Count(d.channel, step.kind == NextStep::Kind::kRetry ? PushOutcome::kFailed : step.outcome);
    if (step.delete_recipient) {
      co_await DeleteDead(h, std::move(d.recipient));
    }
  }
  Pump(h);
  if (draining_ || h->lost) {
    wake_->cancel();  // the loop waits for the queue to empty
  }
}

// implements: PUSH-234
asio::awaitable<void> Dispatcher::Loop::DeleteDead(std::shared_ptr<Holding> h,
                                                   store::PushRecipient used) {
  if (h->lost) {
    co_return;  // no recipient writes after an ownership loss
  }
  auto delete_dead = [used](store::PushLock& lock) { return lock.DeleteDead(used); };
  auto deleted = co_await OnLock(h, std::move(delete_dead));
  if (!deleted.ok()) {
    MarkLost(*h);
    co_return;
  }
  if (!deleted.value()) {
    co_return;  // re-registered meanwhile (or already gone): nothing deleted, nothing counted
  }
  d_.metrics_.push().recipients.Inc(telemetry::PushRecipientAction::kDead);
  h->dead.Insert(used);
  for (Delivery& discarded : h->queue.DiscardConfiguration(used)) {
    if (!discarded.first_attempted) {
      h->watermark.FirstAttemptDone(discarded.window);
    }
    Count(discarded.channel, PushOutcome::kFailed);
  }
}

// The end of a holding (PUSH.md 8.1 loss, 8.6 drain): after a drain the cursor is persisted;
// after a loss nothing more is written and in-flight attempts get up to 10 s. Then the lock
// connection is closed, which releases the lock.
asio::awaitable<void> Dispatcher::Loop::EndHolding(std::shared_ptr<Holding> h) {
  const bool was_lost = h->lost;
  if (!was_lost) {
    co_await PersistCursor(h);
  }
  h->lost = true;  // stops loading, attempts and writes of this holding
  if (was_lost) {
    std::function<bool()> idle = [h] { return h->queue.in_flight() == 0; };
    co_await WaitInFlight(std::move(idle), Clock::now() + kLossWait);
  }
  for (const Delivery& d : h->queue.TakeAll()) {
    if (d.first_attempted) {
      Count(d.channel, PushOutcome::kFailed);  // a retry abandoned; the rest is replayed
    }
  }
  auto drop = [h]() mutable {
    h->lock.reset();
    return true;
  };
  co_await d_.lock_pool_.Run(std::move(drop));
  d_.metrics_.push().dispatcher.Set(0);
  if (was_lost) {
    d_.logger_.Info("push dispatcher lock lost");
  } else {
    d_.logger_.Info("push dispatcher lock released");
  }
}

// --- Dispatcher -----------------------------------------------------------------------------

Dispatcher::Dispatcher(store::Store& store, ChannelFactory channels, telemetry::Metrics& metrics,
                       telemetry::Logger& logger, std::function<void()> request_boundary_advance,
                       DispatcherOptions options)
    : store_(store),
      channels_(std::move(channels)),
      metrics_(metrics),
      logger_(logger),
      request_boundary_advance_(std::move(request_boundary_advance)),
      options_(options),
      lock_pool_(1, kLockJobs),
      read_pool_(1, kReadJobs) {
  XB_CHECK(store_.push() != nullptr);
  metrics_.push().dispatcher.Set(0);
}

Dispatcher::~Dispatcher() { Stop(); }

void Dispatcher::Start() {
  XB_CHECK(io_ == nullptr && !stopped_);
  io_ = std::make_unique<asio::io_context>(1);
  loop_ = std::make_unique<Loop>(*this, io_->get_executor());
  {
    std::lock_guard lock(wake_mu_);
    accepting_wakes_ = true;
  }
  thread_ = std::thread([this] {
    NameThisThread("xb-push");
    loop_->senders = channels_(io_->get_executor());
    asio::co_spawn(*io_, loop_->Run(), [this](std::exception_ptr) { io_->stop(); });
    io_->run();
    loop_->senders.clear();  // destroyed on their executor's thread
  });
}

void Dispatcher::SignalDone() {
  std::lock_guard lock(mu_);
  done_ = true;
  done_cv_.notify_all();
}

void Dispatcher::Drain(Clock::time_point deadline) {
  if (io_ == nullptr || stopped_) {
    return;
  }
  asio::post(*io_, [this, deadline] { loop_->RequestDrain(deadline); });
  std::unique_lock lock(mu_);
  done_cv_.wait_until(lock, deadline + kDrainMargin, [this] { return done_; });
}

void Dispatcher::Wake() {
  if (wake_posted_.exchange(true, std::memory_order_acq_rel)) {
    return;  // one wake-up is on its way; it sees this commit too
  }
  std::lock_guard lock(wake_mu_);
  if (!accepting_wakes_) {
    wake_posted_.store(false, std::memory_order_release);
    return;
  }
  asio::post(*io_, [this] {
    wake_posted_.store(false, std::memory_order_release);
    loop_->OnWake();
  });
}

void Dispatcher::Stop() {
  if (stopped_) {
    return;
  }
  stopped_ = true;
  {
    std::lock_guard lock(wake_mu_);
    accepting_wakes_ = false;
  }
  if (thread_.joinable()) {
    asio::post(*io_, [this] { loop_->RequestStop(); });
    thread_.join();
  }
  lock_pool_.Stop();
  read_pool_.Stop();
  // The loop's timer goes before the io_context that owns its service; an abandoned coroutine
  // frame (destroyed with the io_context) goes before the loop it points to.
  if (loop_ != nullptr) {
    loop_->DropTimer();
  }
  io_.reset();
  loop_.reset();
}

}  // namespace xb::push
