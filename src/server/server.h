// Wiring and lifecycle (ARCHITECTURE.md section 7): start order, readiness (OPS-005), signals,
// drain and stop order (OPS-007, OPS-008).
//
// server::Server declares its members in start order, so they are destroyed in reverse: what a
// later step built (workers, listener) goes before what it uses (store, telemetry). Start() runs
// CONF.md 1.5's start-up steps 3 to 8, one method each; Drain() begins the drain (SIGTERM,
// SIGINT, a stale auth key set); Stop() ends what is left once every call has its answer.
// Threads: everything here runs on the thread that called Run(), on main_io_.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "api/configuration_service.h"
#include "api/context.h"
#include "api/cpu_pool.h"
#include "api/quotas.h"
#include "api/scw_verifier.h"
#include "api/store_status.h"
#include "attach/upload_signer.h"
#include "auth/authenticator.h"
#include "auth/jwks_refresher.h"
#include "config/config.h"
#include "config/socket_address.h"
#include "fanout/streams.h"
#include "net/listener.h"
#include "push/dispatcher.h"
#include "rpc/dispatcher.h"
#include "rpc/router.h"
#include "server/health.h"
#include "server/memory_release.h"
#include "server/net_observer.h"
#include "server/prune_pass.h"
#include "server/sd_notify.h"
#include "store/db_pool.h"
#include "store/store.h"
#include "telemetry/completion_budget.h"
#include "telemetry/logger.h"
#include "telemetry/metrics.h"
#include "telemetry/metrics_listener.h"
#include "telemetry/otlp_exporter.h"
#include "telemetry/tracer.h"

namespace xb::server {

struct RunOptions {
  // Test builds only (XB_TEST_HOOKS): extra handlers registered before serving.
  std::function<void(rpc::Router&)> extra_handlers;
  // Test builds only: awaited by Publish between identity validation and commit (API-232 tests).
  std::function<boost::asio::awaitable<void>()> before_identity_commit;
  // Test builds only: the fixed provider hosts (APNs, FCM, its OAuth endpoint; AWS STS, SSO portal,
  // instance metadata and container endpoints) answered from this table instead of DNS
  // (net::HttpClientOptions::static_hosts), so that the push and attachment tests reach loopback
  // fakes; the URLs and certificate names stay the spec's.
  std::map<std::string, boost::asio::ip::tcp::endpoint, std::less<>> provider_hosts;
};

// Runs the backend until it has drained after SIGTERM/SIGINT. Returns the process exit code;
// a startup failure has already printed its one line.
int Run(const config::Config& config, RunOptions options = {});

class Server {
 public:
  // `config` outlives the server.
  Server(const config::Config& config, RunOptions options);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Start-up, serving until drained, stop: the process exit code.
  int Run();

  enum class StartOutcome { kServing, kFailed, kStoppedBeforeServing };
  // CONF.md 1.5 steps 3-8, in order; a failed step has printed its one line. Suspends while the
  // first stream recovery runs, when a termination signal ends start-up cleanly.
  boost::asio::awaitable<StartOutcome> Start();
  // OPS-007: NOT_SERVING, admission closed, streams ended, unary calls given the drain deadline
  // (OPS-008). Idempotent.
  void Drain();
  // After the main loop: pool jobs, workers and telemetry end within the flush bound (OPS-008).
  void Stop();

 private:
  struct Worker;

  // CONF.md 1.5, one method per step; false: the step failed and printed its line.
  bool StartTelemetry();            // step 3
  bool StartOtlpExporter();         // step 3 (traces, logs)
  bool BindMetricsListener();       // step 3
  bool LoadAuth();                  // step 4
  bool CheckProviderCredentials();  // step 4
  enum class StepOutcome { kDone, kFailed, kStopped };
  boost::asio::awaitable<StepOutcome> OpenDatabase();  // step 5
  bool BuildPublicConfiguration();                     // step 6
  boost::asio::awaitable<bool> RecoverStreams();       // step 7: first stream recovery
  void StartBackgroundTasks();                         // step 7: pools, API context
  bool PushChannelConfigured() const;                  // PUSH.md 8.1: a dispatcher may run
  void StartPushDispatcher();                          // step 7: PUSH.md 8, when configured
  void StartPrunePass();                               // step 7: retention.prune (issue 35)
  void BuildRouter();                                  // step 7: services and health
  void BuildWorkers();                                 // step 7: one dispatcher per I/O thread
  bool BindListener();                                 // step 8
  void ReportServing();                                // step 8

  // Type=notify units (deploy/systemd): tells systemd `state`; a failure is logged, never fatal.
  void NotifySystemd(const std::string& state);
  void OnSignal(const boost::system::error_code& ec);
  // The end of the drain: whatever is left ends UNAVAILABLE (idle, or the drain deadline).
  void Finish();
  void JoinWorkers(std::chrono::steady_clock::time_point deadline);
  void FlushTelemetry(std::chrono::steady_clock::time_point deadline);

  const config::Config& config_;
  RunOptions options_;
  telemetry::Logger logger_;
  telemetry::Metrics metrics_;
  // NOTIFY_SOCKET, read once: READY=1 when serving, STOPPING=1 when the drain begins.
  const SdNotifier systemd_;
  // Before every io_context: connections report to it until their frames are destroyed.
  NetObserver net_observer_;
  // Step 3. Declared before everything that starts spans, so it is destroyed after all of them.
  std::unique_ptr<telemetry::OtlpExporter> exporter_;
  std::unique_ptr<telemetry::Tracer> tracer_;
  boost::asio::io_context main_io_{1};
  // Installed at construction: a SIGTERM that arrives once anything could have seen this process
  // begins a drain (or ends start-up) rather than killing it.
  boost::asio::signal_set signals_;
  // Start-up's waits between replica checks; a signal cancels it.
  boost::asio::steady_timer startup_timer_;
  std::unique_ptr<telemetry::MetricsListener> metrics_listener_;
  std::optional<config::SocketAddress> metrics_address_;
  // Step 4.
  std::unique_ptr<auth::Authenticator> authenticator_;
  std::unique_ptr<auth::JwksRefresher> jwks_refresher_;
  // ATTACH.md: with [attachments], the storage target's signer (its credential thread runs from
  // step 4 to Stop).
  std::unique_ptr<attach::UploadSigner> upload_signer_;
  std::vector<api::PublicSigningKey> startup_keys_;
  // Step 5.
  std::unique_ptr<store::Store> store_;
  // Step 6.
  std::optional<xmtp::backend::v1::GetConfigurationResponse> public_config_;
  // Step 7.
  std::unique_ptr<store::DbPool> db_pool_;
  std::unique_ptr<fanout::Streams> streams_;
  // PUSH.md 8: only when a channel is configured. Its drain runs on a thread of its own (it blocks
  // until the lock is released), joined by Stop().
  std::unique_ptr<push::Dispatcher> push_dispatcher_;
  std::thread push_drain_;
  // Issue 35: only with retention.prune. A drain halts it; Stop() joins it.
  std::unique_ptr<PrunePass> prune_pass_;
  std::unique_ptr<api::CpuPool> cpu_pool_;
  std::unique_ptr<api::ScwVerifier> scw_verifier_;
  std::unique_ptr<api::StoreFailureLog> store_failures_;
  std::unique_ptr<api::Quotas> quotas_;  // issue 32: only when [quotas] sets a rate
  api::ApiContext api_context_;
  rpc::Router router_;
  std::unique_ptr<HealthState> health_;
  rpc::Admission admission_;
  std::unique_ptr<telemetry::CompletionBudget> reset_lines_;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::vector<net::Worker> net_workers_;
  // Step 8.
  std::optional<config::SocketAddress> listen_address_;
  std::unique_ptr<net::Listener> listener_;
  std::vector<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> guards_;
  std::mutex stopped_mu_;
  std::condition_variable stopped_cv_;
  size_t running_workers_ = 0;  // guarded by stopped_mu_
  std::unique_ptr<MemoryRelease> memory_release_;
  boost::asio::steady_timer drain_timer_;

  // main_io_ only.
  bool serving_ = false;
  bool start_cancelled_ = false;
  bool drain_started_ = false;
  bool finished_ = false;
  bool key_set_stale_ = false;
};

}  // namespace xb::server
