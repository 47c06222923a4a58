#include "server/server.h"

#include <sched.h>
#include <sys/resource.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "api/configuration_service.h"
#include "api/envelope_codec.h"
#include "api/identity_service.h"
#include "api/publish_service.h"
#include "api/query_service.h"
#include "api/scw_verifier.h"
#include "api/store_status.h"
#include "api/stream_service.h"
#include "auth/authenticator.h"
#include "auth/jwks_refresher.h"
#include "base/thread_name.h"
#include "config/load.h"
#include "config/socket_address.h"
#include "fanout/fetch_permits.h"
#include "fanout/history_cache.h"
#include "fanout/registry.h"
#include "fanout/stream_session.h"
#include "fanout/tailer.h"
#include "fanout/wave_buffers.h"
#include "net/listener.h"
#include "net/tls_stream.h"
#include "rpc/dispatcher.h"
#include "server/health.h"
#include "server/health_service.h"
#include "server/memory_release.h"
#include "server/net_observer.h"
#include "server/version.h"
#include "store/db_pool.h"
#include "store/open.h"
#include "telemetry/completion_budget.h"
#include "telemetry/logger.h"
#include "telemetry/metrics.h"
#include "telemetry/metrics_listener.h"
#include "telemetry/otlp_exporter.h"
#include "telemetry/tracer.h"

namespace xb::server {

namespace asio = boost::asio;

namespace {

// Transport ceiling (API-282): an HTTP/1.1 body may carry a base64 (text mode) request message.
constexpr uint64_t kMaxHttp1BodyBytes = 26214400ULL / 3 * 4 + 4096;
constexpr auto kTelemetryFlushBound = std::chrono::seconds(5);
// Publish requests whose signature checks may wait for the CPU pool at once; one more is answered
// UNAVAILABLE (api/cpu_pool.h). Each job is one request's whole batch of checks.
constexpr size_t kCpuPoolMaxQueuedJobs = 4096;
// Encoded catch-up rows kept for other streams reading the same history (fanout/history_cache.h):
// about 28,000 envelopes of 1 KiB.
constexpr size_t kHistoryCacheBytes = 32u << 20;

size_t WorkerCount() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    const int n = CPU_COUNT(&set);
    if (n > 0) {
      return static_cast<size_t>(n);
    }
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

void Fail(const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); }

// Raises the soft open-file limit to the hard one: the usual soft default (1,024) is far below
// what server.max_connections asks for, and the hard limit is what the operator granted. Returns
// the soft limit in force afterwards (UINT64_MAX when unlimited, 0 when unknown).
uint64_t RaiseOpenFileLimit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) {
    return 0;
  }
  if (limit.rlim_cur < limit.rlim_max) {
    rlimit raised = limit;
    raised.rlim_cur = limit.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) {
      limit = raised;
    }
  }
  return limit.rlim_cur == RLIM_INFINITY ? UINT64_MAX : static_cast<uint64_t>(limit.rlim_cur);
}

// Descriptors the process needs besides client connections: each thread's io_context, the
// listeners, outbound clients, and up to three per pooled database connection (SQLite's database,
// WAL and shared-memory files; a PostgreSQL socket).
uint64_t ReservedDescriptors(const config::Config& config) {
  return 128 + 3 * config.database.max_connections;
}

// The dispatcher's auth step (AUTH-001); empty while auth is off (AUTH-003).
rpc::Authenticate MakeAuthenticate(auth::Authenticator* authenticator) {
  if (authenticator == nullptr) {
    return {};
  }
  return [authenticator](std::string_view path, const std::string* authorization,
                         std::string_view request_id) {
    return authenticator->Admit(path, authorization, request_id);
  };
}

// Each worker serves its connections from an equal share of the process's response memory (a
// connection lives on one worker, so its calls never wait on another thread's releases).
rpc::ResponseBudget::Limits WorkerResponseBudget(const config::LimitsConfig& limits,
                                                 size_t workers) {
  return rpc::ResponseBudget::Limits{
      .worker_bytes = std::max<uint64_t>(1, limits.max_response_memory_bytes / workers),
      .connection_bytes = limits.max_connection_response_bytes,
      .max_wait = std::chrono::seconds(10),
  };
}

// One io_context and thread per core; a connection lives on one of them (ARCHITECTURE.md 2).
struct Worker {
  asio::io_context io{1};
  std::unique_ptr<rpc::Dispatcher> dispatcher;
  net::ConnectionSet connections;
  std::thread thread;
};

}  // namespace

int Run(const config::Config& config, RunOptions options) {
  telemetry::Logger logger(telemetry::LoggerOptions{
      .level = static_cast<telemetry::LogLevel>(config.server.log_level),
      .format = config.server.log_format == config::LogFormat::kJson ? telemetry::LogFormat::kJson
                                                                     : telemetry::LogFormat::kText,
      .sink = {},
      .clock = {},
  });
  telemetry::Metrics metrics(kVersion);
  // Before every io_context: connections report to it until their frames are destroyed.
  NetObserver net_observer(metrics, logger);
  // A full descriptor table is survivable (the listener backs off, issue 28), but refusing over
  // server.max_connections is the clean way to be full: say so when the limit is the lower one.
  // Not a startup refusal: the reserve is an estimate and the operator's number is honoured.
  if (const uint64_t open_files = RaiseOpenFileLimit();
      open_files != 0 && config.server.max_connections + ReservedDescriptors(config) > open_files) {
    logger.Warn(
        "open-file limit is below server.max_connections plus the server's own needs",
        {telemetry::Field::Key("server.max_connections"), telemetry::Field::Count(open_files)});
  }

  // Traces (OPS section 5): exported only when an OTLP endpoint resolved (OPS-022; checked with
  // the configuration, so Create fails only on what the check let through). Declared before
  // everything that starts spans, so it is destroyed after all of them.
  std::unique_ptr<telemetry::OtlpExporter> exporter;
  if (config.telemetry.otlp_endpoint) {
    // implements: OPS-013 — the resource of every exported span.
    telemetry::ResourceAttributes resource = {
        {"service.name", config.telemetry.service_name},
        {"service.version", std::string(kVersion)},
        {"xmtp.backend.identifier", config.server.identifier},
    };
    for (const auto& [key, value] : config.telemetry.resource_attributes) {
      resource.emplace_back(key, value);
    }
    auto created = telemetry::OtlpExporter::Create(
        telemetry::OtlpExporterOptions{.endpoint = *config.telemetry.otlp_endpoint,
                                       .resource = std::move(resource)},
        metrics);
    if (!created.ok()) {
      Fail("configuration is invalid: telemetry.otlp_endpoint or OTEL_EXPORTER_OTLP_ENDPOINT (" +
           created.status().message() + ")");
      return 1;
    }
    exporter = std::move(created).value();
    exporter->Start();
    if (config.telemetry.otlp_logs) {
      // CONF telemetry.otlp_logs: every line written from here on is also exported. The
      // exporter outlives every thread that logs (declared before them).
      logger.SetRecordSink(exporter.get());
    }
  }
  telemetry::Tracer tracer(metrics,
                           telemetry::TracerOptions{.sample_ratio = config.telemetry.sample_ratio,
                                                    .sink = exporter.get()});
  asio::io_context main_io{1};
  // Installed first: a SIGTERM that arrives once anything could have seen this process begins a
  // drain rather than killing it.
  asio::signal_set signals(main_io, SIGTERM, SIGINT);

  // Step 3: the metrics listener, before anything can report readiness (OPS-022).
  std::unique_ptr<telemetry::MetricsListener> metrics_listener;
  if (!config.telemetry.metrics_listen.empty()) {
    auto address = config::ParseSocketAddress(config.telemetry.metrics_listen);
    if (!address.ok()) {
      Fail(address.status().message());
      return 1;
    }
    auto created =
        telemetry::MetricsListener::Create(main_io, address->host, address->port, metrics);
    if (!created.ok()) {
      Fail("configuration is invalid: telemetry.metrics_listen (" + created.status().message() +
           ")");
      return 1;
    }
    metrics_listener = std::move(created).value();
  }

  // Step 4: the auth key set, before the gRPC listener is bound (OPS-005, AUTH-017). Off: nothing
  // is loaded or fetched (CONF-066).
  std::unique_ptr<auth::Authenticator> authenticator;
  std::unique_ptr<auth::JwksRefresher> jwks_refresher;
  std::vector<api::PublicSigningKey> startup_keys;
  if (config.auth.enabled) {
    auto created = auth::Authenticator::Create(
        config.auth, auth::AuthenticatorOptions{.identifier = config.server.identifier,
                                                .metrics = &metrics,
                                                .logger = &logger,
                                                .now_seconds = {},
                                                .cache_entries = 16384});
    if (!created.ok()) {
      Fail(created.status().message());
      return 1;
    }
    authenticator = std::move(created).value();
    if (config.auth.jwks_url) {
      auto refresher = auth::JwksRefresher::Create(auth::JwksRefresherOptions{
          .url = *config.auth.jwks_url,
          .refresh = std::chrono::seconds(config.auth.jwks_refresh_seconds),
          .max_stale = std::chrono::seconds(config.auth.jwks_max_stale_seconds),
          .authenticator = authenticator.get(),
          .metrics = &metrics,
          .logger = &logger,
      });
      if (!refresher.ok()) {
        Fail("configuration is invalid: auth.jwks_url (" + refresher.status().message() + ")");
        return 1;
      }
      jwks_refresher = std::move(refresher).value();
      Status loaded = jwks_refresher->LoadAtStartup();
      if (!loaded.ok()) {
        Fail(loaded.message());
        return 1;
      }
    }
    // CONF-068: the keys loaded at startup, in order (a JWKS entry without kid publishes "").
    for (const auth::Key& key : authenticator->key_set()->keys) {
      startup_keys.push_back(api::PublicSigningKey{.kid = key.kid.value_or(""),
                                                   .alg = std::string(auth::AlgName(key.alg))});
    }
  }

  // Step 5: the store — migrations applied, replica caught up — and OPS-020 against its clock.
  // [design] Start-up waits (connect, migrations, replica catch-up) are bounded by one minute;
  // the orchestrator's startup probe is the outer bound.
  auto opened = store::OpenStore(
      config, store::OpenOptions{
                  .deadline = store::Clock::now() + std::chrono::minutes(1),
                  .warning_sink = [&logger](std::string_view) { logger.Warn("database warning"); },
                  .on_released_open_transaction =
                      [&metrics] { metrics.db().released_open_transactions.Inc(); }});
  if (!opened.ok()) {
    Fail(opened.status().message());
    return 1;
  }
  std::unique_ptr<store::Store> store = std::move(opened).value();
  {
    auto clock = store->ClockNs();
    if (!clock.ok()) {
      Fail("configuration is invalid: database.url (the store clock cannot be read)");
      return 1;
    }
    // implements: OPS-020 (startup)
    Status fits = config::CheckRetentionFitsClock(config.retention, clock.value());
    if (!fits.ok()) {
      Fail(fits.message());
      return 1;
    }
  }
  // Step 5: the first stream recovery generation (STORE.md 5.2: boundary on the primary, the read
  // database shows it, tailer ready) before the port is bound (OPS-005).
  fanout::Registry registry(metrics);
  fanout::Tailer tailer(*store, registry, metrics, logger, api::EncodeServerEnvelope,
                        fanout::TailerOptions{.poll_interval = std::chrono::milliseconds(
                                                  config.streams.poll_interval_ms),
                                              .max_gap_ranges = config.streams.max_gap_ranges,
                                              .commit_wake_gap = store->CommitWakeGap(),
                                              .tracer = &tracer});
  store->SetCommitListener([&tailer](int64_t last_id) { tailer.OnCommit(last_id); },
                           [&registry] { return registry.has_registrations(); });
  // The tailer and the commit listener stop before the store closes, on every return path.
  struct StopTailer {
    fanout::Tailer& tailer;
    store::Store& store;
    ~StopTailer() {
      tailer.Stop();
      store.SetCommitListener(nullptr);
    }
  } stop_tailer{tailer, *store};
  tailer.Start();
  // The first generation has no bound of its own (STORE.md 5.2: the orchestrator's startup probe
  // is the outer one), so a termination signal meanwhile ends the process cleanly.
  bool stopped_during_startup = false;
  signals.async_wait([&](boost::system::error_code ec, int) {
    if (!ec) {
      stopped_during_startup = true;
    }
  });
  while (!tailer.WaitReadyFor(std::chrono::milliseconds(100))) {
    main_io.poll();
    main_io.restart();
    if (stopped_during_startup) {
      logger.Info("stopped before serving");
      return 0;
    }
  }
  signals.cancel();  // queued signals stay pending for the drain handler below
  main_io.poll();
  main_io.restart();
  // Catch-up reads of all streams together use at most half the pooled connections.
  const size_t fetch_permit_count = std::max<size_t>(1, config.database.max_connections / 2);
  fanout::FetchPermits fetch_permits(fetch_permit_count);
  // One kept wave buffer per permit, each up to the largest wave a stream reads from the store
  // (Store::CatchUpWaveBytes, plus an envelope past it): at most fetch_permit_count x ~7 MiB.
  fanout::WaveBuffers wave_buffers(
      fetch_permit_count,
      store->CatchUpWaveBytes() + 2 * config.limits.max_envelope_bytes + (1u << 20));
  // Catch-up rows recently read, shared by the streams catching up on the same topics.
  fanout::HistoryCache history_cache(kHistoryCacheBytes);
  store::DbPool db_pool(std::max<size_t>(1, config.database.max_connections));
  // One CPU thread per core, like the I/O threads: signature checks are pure CPU (ARCHITECTURE.md
  // section 2). The admission bound keeps the queue finite under a flood of publishes.
  api::CpuPool cpu_pool(WorkerCount(), kCpuPoolMaxQueuedJobs);
  // Smart-contract-wallet verdicts over [chains], cache bounded by
  // validation.max_scw_cache_entries.
  api::ScwVerifier scw_verifier(
      api::ScwVerifierOptions{.chains = config.chains,
                              .max_cache_entries = config.validation.max_scw_cache_entries,
                              .rpc_timeout = std::chrono::milliseconds(5000),
                              .validator_bytecode = {}},
      &metrics);
  // Issue 28: the causes of store failures, logged once per cause per interval.
  api::StoreFailureLog store_failures(logger, metrics, api::StoreFailureLog::Options{});
  api::ApiContext api_context{
      .store = store.get(),
      .db = &db_pool,
      .cpu = &cpu_pool,
      .scw = &scw_verifier,
      .metrics = &metrics,
      .limits = config.limits,
      .retention = config.retention,
      .max_publish_duration_ms = config.publishing.max_publish_duration_ms,
      .registry = &registry,
      .fetch_permits = &fetch_permits,
      .wave_buffers = &wave_buffers,
      .history = &history_cache,
      .streams = config.streams,
      .store_failures = &store_failures,
      .tracer = &tracer,
      .before_identity_commit = options.before_identity_commit,
  };

  // Step 6: the public configuration (CONF-009), with the startup key set (CONF-068).
  auto public_config = api::BuildPublicConfiguration(config, startup_keys, kVersion);
  if (!public_config.ok()) {
    Fail(public_config.status().message());
    return 1;
  }

  rpc::Router router;
  api::AddConfigurationService(router, std::move(public_config).value());
  api::AddQueryService(router, api_context);
  api::AddPublishService(router, api_context);
  api::AddIdentityService(router, api_context);
  api::AddStreamService(router, api_context);
  if (options.extra_handlers) {
    options.extra_handlers(router);
  }
  std::vector<std::string> services = router.Services();
  std::erase_if(services, [](const std::string& s) { return s.starts_with("grpc.health."); });
  std::erase_if(services, [](const std::string& s) { return !s.starts_with("xmtp.backend.v1."); });
  HealthState health(services, metrics);
  AddHealthService(router, health);

  rpc::Admission admission;
  // Issue 28: completion lines of requests reset before any response byte, bounded per interval.
  telemetry::CompletionBudget reset_lines(
      logger, metrics,
      telemetry::CompletionBudget::Options{.identifier = config.server.identifier});
  std::vector<std::unique_ptr<Worker>> workers;
  const size_t worker_count = WorkerCount();
  std::vector<net::Worker> net_workers;
  for (size_t i = 0; i < worker_count; ++i) {
    auto w = std::make_unique<Worker>();
    w->dispatcher = std::make_unique<rpc::Dispatcher>(
        router, admission, metrics, logger,
        rpc::DispatcherOptions{.max_request_bytes = config.limits.max_request_bytes,
                               .identifier = config.server.identifier,
                               .request_logger = config.server.request_logger,
                               .reset_lines = &reset_lines,
                               .tracer = &tracer,
                               .authenticate = MakeAuthenticate(authenticator.get()),
                               .response_budget = WorkerResponseBudget(config.limits, worker_count),
                               .stalled_write_timeout = std::chrono::milliseconds(
                                   config.server.stalled_write_timeout_ms)});
    net_workers.push_back(
        net::Worker{.io = &w->io, .factory = w->dispatcher.get(), .connections = &w->connections});
    workers.push_back(std::move(w));
  }

  // Step 8: bind the gRPC port only now, then report SERVING (OPS-005).
  auto listen_address = config::ParseSocketAddress(config.server.listen);
  if (!listen_address.ok()) {
    Fail(listen_address.status().message());
    return 1;
  }
  std::shared_ptr<asio::ssl::context> tls;
  if (config.server.tls) {
    auto context =
        net::MakeServerTlsContext(config.server.tls->cert_file, config.server.tls->key_file);
    if (!context.ok()) {
      Fail(context.status().message());
      return 1;
    }
    tls = std::move(context).value();
  }
  auto listener = net::Listener::Create(
      main_io, net_workers, listen_address->host, listen_address->port,
      net::ListenerOptions{
          .max_http2_streams = config.limits.max_http2_streams,
          .max_http1_body_bytes = kMaxHttp1BodyBytes,
          .tls = tls,
          .max_connections = config.server.max_connections,
          .limits =
              net::ConnectionLimits{
                  .handshake_timeout =
                      std::chrono::milliseconds(config.server.handshake_timeout_ms),
                  .header_read_timeout =
                      std::chrono::milliseconds(config.server.header_read_timeout_ms),
                  .idle_timeout = std::chrono::milliseconds(config.server.idle_timeout_ms),
                  .max_header_list_bytes = config.limits.max_header_list_bytes,
                  .max_control_frames_per_second = config.limits.max_control_frames_per_second,
                  .max_control_frame_burst = config.limits.max_control_frame_burst,
              },
          .observer = &net_observer});
  if (!listener.ok()) {
    Fail("configuration is invalid: server.listen (" + listener.status().message() + ")");
    return 1;
  }

  std::vector<asio::executor_work_guard<asio::io_context::executor_type>> guards;
  std::mutex stopped_mu;
  std::condition_variable stopped_cv;
  size_t running = workers.size();  // guarded by stopped_mu
  for (auto& w : workers) {
    guards.push_back(asio::make_work_guard(w->io));
    w->thread = std::thread([&io = w->io, &stopped_mu, &stopped_cv, &running] {
      NameThisThread("xb-io");
      io.run();
      std::lock_guard lock(stopped_mu);
      --running;
      stopped_cv.notify_all();
    });
  }
  for (auto& w : workers) {
    asio::post(w->io,
               [d = w->dispatcher.get(), &io = w->io] { d->StartStallSweep(io.get_executor()); });
  }
  (*listener)->Start();
  reset_lines.Start(main_io.get_executor());
  health.Set(true);
  if (metrics_listener) {
    auto metrics_address = config::ParseSocketAddress(config.telemetry.metrics_listen);
    const std::string bound_metrics =
        metrics_address->host + ":" + std::to_string(metrics_listener->port());
    logger.Info("metrics listening", {telemetry::Field::Address(bound_metrics)});
  }
  const std::string bound = listen_address->host + ":" + std::to_string((*listener)->port());
  logger.Info("serving", {telemetry::Field::Address(bound)});

  // Drain (OPS-007, OPS-008): NOT_SERVING, admission closed, streams ended at once, unary calls
  // get the drain deadline, then whatever is left ends UNAVAILABLE and the process exits.
  // Freed memory goes back to the system (issue 28): checked every few seconds, trimmed when the
  // allocator holds more than 64 MiB free.
  MemoryRelease memory_release(main_io.get_executor(), std::chrono::seconds(2), size_t{64} << 20);
  memory_release.Start();
  asio::steady_timer drain_timer(main_io);
  bool stopping = false;
  auto finish = [&] {
    if (stopping) {
      return;
    }
    stopping = true;
    drain_timer.cancel();
    reset_lines.Stop();
    for (auto& w : workers) {
      asio::post(w->io, [d = w->dispatcher.get()] { d->EndAll(); });
    }
    (*listener)->CloseAll();
    if (metrics_listener) {
      metrics_listener->Stop();
    }
    memory_release.Stop();
    signals.cancel();
  };
  admission.SetOnIdle([&] { asio::post(main_io, finish); });
  bool drain_started = false;
  auto begin_drain = [&] {
    if (drain_started) {
      return;
    }
    drain_started = true;
    // implements: OPS-007
    health.Set(false);
    admission.BeginDrain();
    registry.Shutdown(fanout::Ending{
        Status(StatusCode::kUnavailable, "the server is shutting down; reconnect elsewhere"),
        telemetry::StreamEndReason::kShutdown});
    for (auto& w : workers) {
      asio::post(w->io, [d = w->dispatcher.get()] { d->EndStreams(); });
    }
    // implements: OPS-008
    drain_timer.expires_after(std::chrono::milliseconds(config.server.max_drain_duration_ms));
    drain_timer.async_wait([&](boost::system::error_code timer_ec) {
      if (!timer_ec) {
        finish();
      }
    });
    if (admission.live_unary() == 0) {
      asio::post(main_io, finish);
    }
  };
  signals.async_wait([&](boost::system::error_code ec, int) {
    if (!ec) {
      begin_drain();
    }
  });
  // implements: AUTH-019 — a stale key set drains exactly as SIGTERM does, then exits non-zero.
  bool key_set_stale = false;
  if (jwks_refresher) {
    jwks_refresher->Start([&] {
      asio::post(main_io, [&] {
        key_set_stale = true;
        begin_drain();
      });
    });
  }
  main_io.run();
  if (jwks_refresher) {
    jwks_refresher->Stop();
  }
  // implements: OPS-008 — every call has its answer now (drain deadline or idle), so the pool jobs
  // not started yet serve nobody: they are dropped and the exit does not wait for them. The running
  // ones finish here, while the workers whose executors they post to still exist (a job that
  // posted to a destroyed worker crashed the exit).
  db_pool.Stop();
  cpu_pool.Stop();

  // Workers finish writing what is queued (trailers of the calls ended above), then stop; a
  // worker that cannot finish within the telemetry flush bound is abandoned.
  // The same bound then covers the trace flush (OPS-008: exit within the drain deadline + 5 s).
  const auto flush_deadline = std::chrono::steady_clock::now() + kTelemetryFlushBound;
  guards.clear();
  {
    std::unique_lock lock(stopped_mu);
    stopped_cv.wait_until(lock, flush_deadline, [&] { return running == 0; });
  }
  for (auto& w : workers) {
    w->io.stop();
    w->thread.join();
  }
  reset_lines.Summarize();  // the requests completed since the last summary
  if (exporter) {
    logger.SetRecordSink(nullptr);  // what is logged from here on cannot be flushed
    exporter->Shutdown(flush_deadline);
    if (const uint64_t dropped = exporter->dropped(); dropped > 0) {
      logger.Warn("trace spans dropped", {telemetry::Field::Count(dropped)});
    }
    if (const uint64_t dropped = exporter->dropped_logs(); dropped > 0) {
      logger.Warn("log records dropped", {telemetry::Field::Count(dropped)});
    }
  }
  logger.Info("stopped");
  return key_set_stale ? 1 : 0;
}

}  // namespace xb::server
