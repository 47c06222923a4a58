#include "auth/jwks_refresher.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <future>

#include "auth/jwks.h"

namespace xb::auth {

namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;

Result<std::unique_ptr<JwksRefresher>> JwksRefresher::Create(JwksRefresherOptions options) {
  XB_ASSIGN_OR_RETURN(JwksSource source, ParseJwksSource(options.url));
  std::shared_ptr<asio::ssl::context> tls;
  if (source.tls) {
    XB_ASSIGN_OR_RETURN(tls, MakeJwksTlsContext());
  }
  return std::unique_ptr<JwksRefresher>(
      new JwksRefresher(std::move(options), std::move(source), std::move(tls)));
}

JwksRefresher::JwksRefresher(JwksRefresherOptions options, JwksSource source,
                             std::shared_ptr<asio::ssl::context> tls)
    : options_(std::move(options)),
      source_(std::move(source)),
      tls_(std::move(tls)),
      random_(std::random_device{}()) {}

JwksRefresher::~JwksRefresher() { Stop(); }

asio::awaitable<Status> JwksRefresher::FetchOnce() {
  Result<std::string> body =
      co_await FetchJwks(source_, tls_, Clock::now() + options_.fetch_timeout);
  if (!body.ok()) {
    co_return body.status();
  }
  size_t skipped = 0;
  Result<std::vector<Key>> keys = ParseJwks(*body, [&skipped] { ++skipped; });
  if (skipped > 0 && options_.logger != nullptr) {
    // implements: AUTH-027 (skipped entries: nothing of the entry beyond a count)
    options_.logger->Warn("JWKS entries skipped",
                          {telemetry::Field::Host(source_.host), telemetry::Field::Count(skipped)});
  }
  if (!keys.ok()) {
    co_return keys.status();
  }
  if (stale_ || stopped_) {
    co_return Unavailable("fetched after the key set went stale");  // AUTH-019: no rescue
  }
  options_.authenticator->ReplaceKeySet(std::move(keys).value());
  stale_deadline_ = Clock::now() + options_.max_stale;
  stale_timer_.expires_at(stale_deadline_);  // cancels the pending wait; the watch re-arms
  co_return Status::Ok();
}

asio::awaitable<Status> JwksRefresher::StartupLoad() {
  // implements: AUTH-017 (JWKS): up to 3 attempts, 1 s apart.
  Status last = Unavailable("no attempt");
  for (int attempt = 0; attempt < options_.startup_attempts; ++attempt) {
    if (attempt > 0) {
      boost::system::error_code ec;
      wait_timer_.expires_after(options_.startup_spacing);
      co_await wait_timer_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    }
    last = co_await FetchOnce();
    if (last.ok()) {
      co_return Status::Ok();
    }
    if (options_.logger != nullptr) {
      options_.logger->Warn("JWKS fetch failed",
                            {telemetry::Field::Host(source_.host), telemetry::Field::Error(last)});
    }
  }
  co_return InvalidArgument("configuration is invalid: auth.jwks_url (no usable key from host " +
                            source_.host + " after " + std::to_string(options_.startup_attempts) +
                            " attempts)");
}

Status JwksRefresher::LoadAtStartup() {
  std::future<Status> done = asio::co_spawn(io_, StartupLoad(), asio::use_future);
  io_.restart();
  io_.run();
  return done.get();
}

Clock::duration JwksRefresher::Jitter() {
  // AUTH-018: a random delay between 0 and one tenth of the period.
  const auto tenth = std::chrono::duration_cast<std::chrono::milliseconds>(options_.refresh) / 10;
  std::uniform_int_distribution<int64_t> pick(0, tenth.count());
  return std::chrono::milliseconds(pick(random_));
}

asio::awaitable<void> JwksRefresher::RefreshLoop() {
  // implements: AUTH-018
  while (!stopped_ && !stale_) {
    boost::system::error_code ec;
    wait_timer_.expires_after(options_.refresh + Jitter());
    co_await wait_timer_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    if (stopped_ || stale_) {
      co_return;
    }
    Status fetched = co_await FetchOnce();
    if (stopped_ || stale_) {
      co_return;
    }
    if (options_.metrics != nullptr) {
      options_.metrics->auth().jwks_refreshes.Inc(
          fetched.ok() ? telemetry::JwksRefreshResult::kOk : telemetry::JwksRefreshResult::kError);
    }
    if (!fetched.ok() && options_.logger != nullptr) {
      // The last good set stays in force; the warning names the host only (AUTH-027).
      options_.logger->Warn("JWKS refresh failed", {telemetry::Field::Host(source_.host),
                                                    telemetry::Field::Error(fetched)});
    }
  }
}

asio::awaitable<void> JwksRefresher::StaleWatch() {
  // implements: AUTH-019. The deadline moves with every good fetch (FetchOnce re-arms the timer,
  // which wakes this wait with operation_aborted); whether the loop is waiting or fetching when
  // it passes, the set is stale.
  while (!stopped_) {
    boost::system::error_code ec;
    co_await stale_timer_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    if (stopped_) {
      co_return;
    }
    if (Clock::now() >= stale_deadline_) {
      stale_ = true;
      wait_timer_.cancel();
      if (options_.logger != nullptr) {
        options_.logger->Error("JWKS key set is stale; draining",
                               {telemetry::Field::Host(source_.host)});
      }
      if (on_stale_) {
        on_stale_();
      }
      co_return;
    }
  }
}

void JwksRefresher::Start(std::function<void()> on_stale) {
  on_stale_ = std::move(on_stale);
  stale_timer_.expires_at(stale_deadline_);
  asio::co_spawn(io_, RefreshLoop(), asio::detached);
  asio::co_spawn(io_, StaleWatch(), asio::detached);
  io_.restart();
  thread_ = std::thread([this] { io_.run(); });
}

void JwksRefresher::Stop() {
  if (!thread_.joinable()) {
    return;
  }
  // Whatever is pending (a wait, an in-flight fetch) is abandoned; its coroutine frames are
  // destroyed with io_.
  io_.stop();
  thread_.join();
  stopped_ = true;
}

}  // namespace xb::auth
