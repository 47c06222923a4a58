// Keeps the key set of a JWKS source fresh (AUTH section 7.3): the startup load (3 attempts, 1 s
// apart, AUTH-017), the refresh loop (period plus up to a tenth of jitter, AUTH-018) and the
// staleness deadline (AUTH-019). It owns one thread with its own io_context; requests never wait
// for it (they read whatever set the Authenticator holds).
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <thread>

#include "auth/authenticator.h"
#include "auth/jwks_fetch.h"
#include "base/status.h"
#include "telemetry/logger.h"
#include "telemetry/metrics.h"

namespace xb::auth {

struct JwksRefresherOptions {
  std::string url;  // auth.jwks_url, already checked
  std::chrono::seconds refresh{300};
  std::chrono::seconds max_stale{3600};
  Authenticator* authenticator = nullptr;  // receives each good set; outlives the refresher
  telemetry::Metrics* metrics = nullptr;
  telemetry::Logger* logger = nullptr;
  std::chrono::milliseconds fetch_timeout{10000};  // AUTH-033
  int startup_attempts = 3;                        // AUTH-017
  std::chrono::milliseconds startup_spacing{1000};
};

class JwksRefresher {
 public:
  static Result<std::unique_ptr<JwksRefresher>> Create(JwksRefresherOptions options);
  ~JwksRefresher();  // Stop()

  // Blocks the caller for up to `startup_attempts` fetches. OK once a fetch yielded a usable
  // entry (the set is published and the staleness clock starts); otherwise the startup error
  // naming auth.jwks_url and the host only (AUTH-017, AUTH-027).
  Status LoadAtStartup();

  // Starts the refresh loop and the staleness watch on the refresher's thread. After
  // LoadAtStartup succeeded; at most once. `on_stale` is called once, on that thread, when no
  // fetch succeeded for max_stale (AUTH-019).
  void Start(std::function<void()> on_stale);

  // Ends the loop (an in-flight fetch is abandoned) and joins the thread. Idempotent.
  void Stop();

  const std::string& host() const { return source_.host; }

 private:
  JwksRefresher(JwksRefresherOptions options, JwksSource source,
                std::shared_ptr<boost::asio::ssl::context> tls);

  // One fetch and parse; on success publishes the set. Logs skipped entries and failures with
  // the host only.
  boost::asio::awaitable<Status> FetchOnce();
  boost::asio::awaitable<Status> StartupLoad();
  boost::asio::awaitable<void> RefreshLoop();
  boost::asio::awaitable<void> StaleWatch();
  std::chrono::steady_clock::duration Jitter();

  // Const after construction.
  const JwksRefresherOptions options_;
  const JwksSource source_;
  const std::shared_ptr<boost::asio::ssl::context> tls_;

  // Touched only on io_'s thread (or before Start).
  boost::asio::io_context io_{1};
  boost::asio::steady_timer wait_timer_{io_};
  boost::asio::steady_timer stale_timer_{io_};
  std::chrono::steady_clock::time_point stale_deadline_;
  std::function<void()> on_stale_;
  bool stale_ = false;
  bool stopped_ = false;
  std::mt19937_64 random_;
  std::thread thread_;
};

}  // namespace xb::auth
