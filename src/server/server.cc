#include "server/server.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <chrono>
#include <cstdio>

#include "api/attachment_service.h"
#include "api/envelope_codec.h"
#include "api/identity_service.h"
#include "api/notification_service.h"
#include "api/publish_service.h"
#include "api/query_service.h"
#include "api/stream_service.h"
#include "api/v3/identity_api.h"
#include "api/v3/mls_api.h"
#include "api/v3/mls_streams.h"
#include "api/v3/mls_subscribe.h"
#include "base/thread_name.h"
#include "config/config_error.h"
#include "config/load.h"
#include "net/tls_stream.h"
#include "server/health_service.h"
#include "server/process_resources.h"
#include "server/push_channels.h"
#include "server/version.h"
#include "store/open.h"
#include "store/read_database_wait.h"

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

void Fail(const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); }

telemetry::LoggerOptions LoggerOptionsOf(const config::Config& config) {
  return telemetry::LoggerOptions{
      .level = static_cast<telemetry::LogLevel>(config.server.log_level),
      .format = config.server.log_format == config::LogFormat::kJson ? telemetry::LogFormat::kJson
                                                                     : telemetry::LogFormat::kText,
      .sink = {},
      .clock = {},
  };
}

// The dispatcher's auth step (AUTH-001); empty while auth is off (AUTH-003).
rpc::Authenticate MakeAuthenticate(auth::Authenticator* authenticator) {
  if (authenticator == nullptr) {
    return {};
  }
  return [authenticator](std::string_view path, const std::string* authorization,
                         std::string_view request_id) -> Result<rpc::Principal> {
    XB_TRY(auth::Admitted admitted, authenticator->Admit(path, authorization, request_id));
    return rpc::Principal{.api_key_name = admitted.api_key_name,
                          .jwt_subject = std::move(admitted.jwt_subject)};
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

net::ConnectionLimits ConnectionLimitsOf(const config::Config& config) {
  return net::ConnectionLimits{
      .handshake_timeout = std::chrono::milliseconds(config.server.handshake_timeout_ms),
      .header_read_timeout = std::chrono::milliseconds(config.server.header_read_timeout_ms),
      .idle_timeout = std::chrono::milliseconds(config.server.idle_timeout_ms),
      .max_header_list_bytes = config.limits.max_header_list_bytes,
      .max_control_frames_per_second = config.limits.max_control_frames_per_second,
      .max_control_frame_burst = config.limits.max_control_frame_burst,
  };
}

}  // namespace

// One io_context and thread per core; a connection lives on one of them (ARCHITECTURE.md 2).
struct Server::Worker {
  asio::io_context io{1};
  std::unique_ptr<rpc::Dispatcher> dispatcher;
  net::ConnectionSet connections;
  std::thread thread;
};

int Run(const config::Config& config, RunOptions options) {
  Server server(config, std::move(options));
  return server.Run();
}

Server::Server(const config::Config& config, RunOptions options)
    : config_(config),
      options_(std::move(options)),
      logger_(LoggerOptionsOf(config)),
      metrics_(kVersion),
      systemd_(SdNotifier::FromEnvironment()),
      net_observer_(metrics_, logger_),
      signals_(main_io_, SIGTERM, SIGINT),
      startup_timer_(main_io_),
      drain_timer_(main_io_) {
  signals_.async_wait([this](const boost::system::error_code& ec, int) { OnSignal(ec); });
}

Server::~Server() {
  // A start-up that failed or was stopped never reached Stop(): the logger must not export into
  // an exporter that is about to go.
  logger_.SetRecordSink(nullptr);
}

int Server::Run() {
  std::optional<StartOutcome> outcome;
  asio::co_spawn(main_io_, Start(), [&](std::exception_ptr error, StartOutcome started) {
    outcome = error ? StartOutcome::kFailed : started;
    if (outcome != StartOutcome::kServing) {
      main_io_.stop();
    }
  });
  main_io_.run();
  if (outcome == StartOutcome::kStoppedBeforeServing) {
    logger_.Info("stopped before serving");
    return 0;
  }
  if (outcome != StartOutcome::kServing) {
    return 1;
  }
  Stop();
  return key_set_stale_ ? 1 : 0;
}

asio::awaitable<Server::StartOutcome> Server::Start() {
  if (!StartTelemetry() || !LoadAuth() || !CheckProviderCredentials()) {
    co_return StartOutcome::kFailed;
  }
  const StepOutcome database = co_await OpenDatabase();
  if (database != StepOutcome::kDone) {
    co_return database == StepOutcome::kStopped ? StartOutcome::kStoppedBeforeServing
                                                : StartOutcome::kFailed;
  }
  if (!BuildPublicConfiguration()) {
    co_return StartOutcome::kFailed;
  }
  const bool recovered = co_await RecoverStreams();
  if (!recovered) {
    co_return StartOutcome::kStoppedBeforeServing;
  }
  StartBackgroundTasks();
  StartPushDispatcher();
  StartPrunePass();
  BuildRouter();
  BuildWorkers();
  if (!BindListener()) {
    co_return StartOutcome::kFailed;
  }
  ReportServing();
  co_return StartOutcome::kServing;
}

// Step 3: traces and logs to OTLP when configured, then the metrics listener, before anything can
// report readiness (OPS-022).
bool Server::StartTelemetry() {
  // A full descriptor table is survivable (the listener backs off, issue 28), but refusing over
  // server.max_connections is the clean way to be full: say so when the limit is the lower one.
  // Not a startup refusal: the reserve is an estimate and the operator's number is honoured.
  if (const uint64_t open_files = RaiseOpenFileLimit();
      open_files != 0 &&
      config_.server.max_connections + ReservedDescriptors(config_) > open_files) {
    logger_.Warn(
        "open-file limit is below server.max_connections plus the server's own needs",
        {telemetry::Field::Key("server.max_connections"), telemetry::Field::Count(open_files)});
  }
  if (!StartOtlpExporter()) {
    return false;
  }
  tracer_ = std::make_unique<telemetry::Tracer>(
      metrics_, telemetry::TracerOptions{.sample_ratio = config_.telemetry.sample_ratio,
                                         .sink = exporter_.get()});
  return BindMetricsListener();
}

// Traces (OPS section 5): exported only when an OTLP endpoint resolved (OPS-022; checked with the
// configuration, so Create fails only on what the check let through).
bool Server::StartOtlpExporter() {
  if (!config_.telemetry.otlp_endpoint) {
    return true;
  }
  // implements: OPS-013 — the resource of every exported span.
  telemetry::ResourceAttributes resource = {
      {"service.name", config_.telemetry.service_name},
      {"service.version", std::string(kVersion)},
      {"xmtp.backend.identifier", config_.server.identifier},
  };
  for (const auto& [key, value] : config_.telemetry.resource_attributes) {
    resource.emplace_back(key, value);
  }
  auto created = telemetry::OtlpExporter::Create(
      telemetry::OtlpExporterOptions{
          .endpoint = *config_.telemetry.otlp_endpoint,
          .protocol = config_.telemetry.otlp_protocol == config::OtlpProtocol::kHttpProtobuf
                          ? telemetry::OtlpProtocol::kHttpProtobuf
                          : telemetry::OtlpProtocol::kGrpc,
          .resource = std::move(resource)},
      metrics_);
  if (!created.ok()) {
    Fail("configuration is invalid: telemetry.otlp_endpoint or OTEL_EXPORTER_OTLP_ENDPOINT (" +
         created.status().message() + ")");
    return false;
  }
  exporter_ = std::move(created).value();
  exporter_->Start();
  if (config_.telemetry.otlp_logs) {
    // CONF telemetry.otlp_logs: every line written from here on is also exported. The exporter
    // outlives every thread that logs (declared before them).
    logger_.SetRecordSink(exporter_.get());
  }
  return true;
}

bool Server::BindMetricsListener() {
  if (config_.telemetry.metrics_listen.empty()) {
    return true;
  }
  auto address = config::ParseSocketAddress(config_.telemetry.metrics_listen);
  if (!address.ok()) {
    Fail(address.status().message());
    return false;
  }
  auto created =
      telemetry::MetricsListener::Create(main_io_, address->host, address->port, metrics_);
  if (!created.ok()) {
    Fail("configuration is invalid: telemetry.metrics_listen (" + created.status().message() + ")");
    return false;
  }
  metrics_address_ = std::move(address).value();
  metrics_listener_ = std::move(created).value();
  return true;
}

// Step 4: the auth key set, before the gRPC listener is bound (OPS-005, AUTH-017). Off: nothing is
// loaded or fetched (CONF-066).
bool Server::LoadAuth() {
  if (!config_.auth.enabled) {
    return true;
  }
  auto created = auth::Authenticator::Create(
      config_.auth, auth::AuthenticatorOptions{.identifier = config_.server.identifier,
                                               .metrics = &metrics_,
                                               .logger = &logger_,
                                               .now_seconds = {},
                                               .cache_entries = 16384});
  if (!created.ok()) {
    Fail(created.status().message());
    return false;
  }
  authenticator_ = std::move(created).value();
  if (config_.auth.jwks_url) {
    auto refresher = auth::JwksRefresher::Create(auth::JwksRefresherOptions{
        .url = *config_.auth.jwks_url,
        .refresh = std::chrono::seconds(config_.auth.jwks_refresh_seconds),
        .max_stale = std::chrono::seconds(config_.auth.jwks_max_stale_seconds),
        .authenticator = authenticator_.get(),
        .metrics = &metrics_,
        .logger = &logger_,
    });
    if (!refresher.ok()) {
      Fail("configuration is invalid: auth.jwks_url (" + refresher.status().message() + ")");
      return false;
    }
    jwks_refresher_ = std::move(refresher).value();
    if (Status loaded = jwks_refresher_->LoadAtStartup(); !loaded.ok()) {
      Fail(loaded.message());
      return false;
    }
  }
  // CONF-068: the keys loaded at startup, in order (a JWKS entry without kid publishes "").
  for (const auth::Key& key : authenticator_->key_set()->keys) {
    startup_keys_.push_back(api::PublicSigningKey{.kid = key.kid.value_or(""),
                                                  .alg = std::string(auth::AlgName(key.alg))});
  }
  return true;
}

// Step 4: provider credentials load at start-up only (PUSH.md 12); the APNs key must sign.
bool Server::CheckProviderCredentials() {
  if (config_.push) {
    if (Status checked = CheckPushCredentials(*config_.push); !checked.ok()) {
      Fail(checked.message());
      return false;
    }
  }
  if (config_.attachments) {
    // ATCH-073: the credential source is made now; what it answers is asked at the first upload.
    auto signer = attach::UploadSigner::Create(
        config_.attachments->s3,
        attach::UploadSignerOptions{.env = config::ProcessEnv(),
                                    .static_hosts = options_.provider_hosts});
    if (!signer.ok()) {
      Fail(config::ConfigError("attachments.target.S3.credentials", signer.error()).message());
      return false;
    }
    upload_signer_ = std::move(signer).value();
  }
  return true;
}

// Step 5: the store — migrations applied, replica caught up — and OPS-020 against its clock.
// [design] Start-up waits (connect, migrations, replica catch-up) are bounded by one minute; the
// orchestrator's startup probe is the outer bound.
asio::awaitable<Server::StepOutcome> Server::OpenDatabase() {
  const store::Clock::time_point deadline = store::Clock::now() + std::chrono::minutes(1);
  auto opened = store::OpenStore(
      config_, store::OpenOptions{
                   .deadline = deadline,
                   .warning_sink = [this](std::string_view) { logger_.Warn("database warning"); },
                   .on_released_open_transaction =
                       [this] { metrics_.db().released_open_transactions.Inc(); }});
  if (!opened.ok()) {
    Fail(opened.status().message());
    co_return StepOutcome::kFailed;
  }
  store_ = std::move(opened).value();
  // Awaited, so a termination signal meanwhile ends start-up (OnSignal cancels the timer).
  const Status caught_up = co_await store::WaitForReadDatabase(
      *store_, startup_timer_, config_.streams.poll_interval, deadline);
  if (!caught_up.ok()) {
    if (caught_up.code() == StatusCode::kCancelled) {
      co_return StepOutcome::kStopped;
    }
    Fail(caught_up.message());
    co_return StepOutcome::kFailed;
  }
  auto clock = store_->ClockNs();
  if (!clock.ok()) {
    Fail("configuration is invalid: database.url (the store clock cannot be read)");
    co_return StepOutcome::kFailed;
  }
  // implements: OPS-020 (startup)
  if (Status fits = config::CheckRetentionFitsClock(config_.retention, clock.value()); !fits.ok()) {
    Fail(fits.message());
    co_return StepOutcome::kFailed;
  }
  // PUSH.md 12: store clock now + push.recipient_ttl_seconds fits int64 ns.
  if (config_.push) {
    if (Status fits = config::CheckPushTtlFitsClock(*config_.push, clock.value()); !fits.ok()) {
      Fail(fits.message());
      co_return StepOutcome::kFailed;
    }
  }
  co_return StepOutcome::kDone;
}

// Step 6: the public configuration (CONF-009), with the startup key set (CONF-068).
bool Server::BuildPublicConfiguration() {
  auto built = api::BuildPublicConfiguration(config_, startup_keys_, kVersion);
  if (!built.ok()) {
    Fail(built.status().message());
    return false;
  }
  public_config_ = std::move(built).value();
  return true;
}

// Step 7: the first stream recovery generation (STORE.md 5.2: boundary on the primary, the read
// database shows it, tailer ready) before the port is bound (OPS-005). It has no bound of its own
// (the orchestrator's startup probe is the outer one), so a termination signal meanwhile ends the
// process cleanly (OnSignal).
asio::awaitable<bool> Server::RecoverStreams() {
  db_pool_ = std::make_unique<store::DbPool>(std::max<size_t>(1, config_.database.max_connections));
  // Catch-up reads of all streams together use at most half the pooled connections.
  const size_t fetch_permits = std::max<size_t>(1, config_.database.max_connections / 2);
  streams_ = std::make_unique<fanout::Streams>(
      *store_, *db_pool_, metrics_, logger_, tracer_.get(), api::EncodeServerEnvelope,
      fanout::StreamsOptions{
          .poll_interval = config_.streams.poll_interval,
          .max_gap_ranges = config_.streams.max_gap_ranges,
          .fetch_permits = fetch_permits,
          // One kept wave buffer per permit, each up to the largest wave a stream reads from the
          // store (Store::CatchUpWaveBytes, plus an envelope past it).
          .wave_buffer_bytes =
              store_->CatchUpWaveBytes() + 2 * config_.limits.max_envelope_bytes + (1u << 20),
          .history_cache_bytes = kHistoryCacheBytes,
      });
  streams_->Start(main_io_.get_executor());
  if (start_cancelled_) {
    co_return false;
  }
  const bool ready = co_await streams_->WaitReady();
  co_return ready;
}

// Step 7: the pools and what every handler shares.
void Server::StartBackgroundTasks() {
  // One CPU thread per core, like the I/O threads: signature checks are pure CPU (ARCHITECTURE.md
  // section 2). The admission bound keeps the queue finite under a flood of publishes.
  cpu_pool_ = std::make_unique<api::CpuPool>(WorkerCount(), kCpuPoolMaxQueuedJobs);
  // Smart-contract-wallet verdicts over [chains], cache bounded by
  // validation.max_scw_cache_entries.
  scw_verifier_ = std::make_unique<api::ScwVerifier>(
      api::ScwVerifierOptions{.chains = config_.chains,
                              .max_cache_entries = config_.validation.max_scw_cache_entries,
                              .rpc_timeout = std::chrono::milliseconds(5000),
                              .validator_bytecode = {}},
      &metrics_);
  // Issue 28: the causes of store failures, logged once per cause per interval.
  store_failures_ =
      std::make_unique<api::StoreFailureLog>(logger_, metrics_, api::StoreFailureLog::Options{});
  // Issue 32: per-caller quotas, off unless [quotas] sets a rate.
  if (auto quotas = std::make_unique<api::Quotas>(config_.quotas); quotas->enabled()) {
    quotas_ = std::move(quotas);
  }
  api_context_ = api::ApiContext{
      .store = store_.get(),
      .db = db_pool_.get(),
      .cpu = cpu_pool_.get(),
      .scw = scw_verifier_.get(),
      .metrics = &metrics_,
      .limits = config_.limits,
      .retention = config_.retention,
      .max_publish_duration_ms = config_.publishing.max_publish_duration_ms,
      .streams = streams_.get(),
      .stream_settings = config_.streams,
      .push = config_.push,
      .uploads = upload_signer_.get(),
      .max_upload_bytes = config_.attachments ? config_.attachments->max_upload_bytes : 0,
      .quotas = quotas_.get(),
      .store_failures = store_failures_.get(),
      .tracer = tracer_.get(),
      .before_identity_commit = options_.before_identity_commit,
  };
}

// PUSH.md 8.1: an instance runs the dispatcher only when at least one channel is configured;
// otherwise xmtp_push_dispatcher stays 0 and no retention pass runs.
bool Server::PushChannelConfigured() const {
  return config_.push && (config_.push->apns || config_.push->fcm || config_.push->http);
}

void Server::StartPushDispatcher() {
  if (!PushChannelConfigured()) {
    return;
  }
  push_dispatcher_ = std::make_unique<push::Dispatcher>(
      *store_, MakeChannelFactory(*config_.push, options_.provider_hosts, logger_), metrics_,
      logger_, [streams = streams_.get()] { streams->RequestBoundaryAdvance(); },
      push::DispatcherOptions{.poll_interval = config_.streams.poll_interval,
                              .max_attempts = static_cast<uint32_t>(config_.push->max_attempts),
                              .recipient_ttl_seconds = config_.push->recipient_ttl_seconds});
  push_dispatcher_->Start();
  // A commit or a boundary advance wakes the holder at once (it loads up to the boundary), so a
  // push need not wait for the next tick; the tick still runs every poll interval. A commit also
  // asks for a boundary advance: where the stored boundary trails commits (PostgreSQL) the push
  // waits for it, and need not wait for the dispatcher's tick to ask (PUSH.md 8.2 step 4).
  streams_->SetProgressObserver(
      [d = push_dispatcher_.get(), streams = streams_.get()](fanout::Streams::Progress progress) {
        d->Wake();
        if (progress == fanout::Streams::Progress::kCommit) {
          streams->RequestBoundaryAdvance();
        }
      });
}

// STORE.md 9.2 (issue 35): the pruning pass, off unless retention.prune.
void Server::StartPrunePass() {
  if (!config_.retention.prune) {
    return;
  }
  prune_pass_ = std::make_unique<PrunePass>(
      *store_, metrics_, logger_, tracer_.get(),
      [streams = streams_.get()] { streams->RequestBoundaryAdvance(); },
      PrunePassOptions{.interval = std::chrono::seconds(config_.retention.prune_interval_seconds),
                       .batch = static_cast<uint32_t>(config_.retention.prune_batch),
                       .hold_at_push_cursor = PushChannelConfigured()});
  prune_pass_->Start();
}

void Server::BuildRouter() {
  api::AddConfigurationService(router_, std::move(*public_config_));
  public_config_.reset();
  api::AddQueryService(router_, api_context_);
  api::AddPublishService(router_, api_context_);
  api::AddIdentityService(router_, api_context_);
  api::AddStreamService(router_, api_context_);
  api::AddNotificationService(router_, api_context_);
  api::AddAttachmentService(router_, api_context_);
  api::v3::AddIdentityApi(router_, api_context_);
  api::v3::AddMlsApi(router_, api_context_);
  api::v3::AddMlsStreams(router_, api_context_);
  api::v3::AddMlsSubscribe(router_, api_context_);
  if (options_.extra_handlers) {
    options_.extra_handlers(router_);
  }
  std::vector<std::string> services = router_.Services();
  std::erase_if(services, [](const std::string& s) { return s.starts_with("grpc.health."); });
  std::erase_if(services, [](const std::string& s) { return !s.starts_with("xmtp.backend.v1."); });
  health_ = std::make_unique<HealthState>(services, metrics_);
  AddHealthService(router_, *health_);
}

void Server::BuildWorkers() {
  // Issue 28: completion lines of requests reset before any response byte, bounded per interval.
  reset_lines_ = std::make_unique<telemetry::CompletionBudget>(
      logger_, metrics_,
      telemetry::CompletionBudget::Options{.identifier = config_.server.identifier});
  const size_t worker_count = WorkerCount();
  for (size_t i = 0; i < worker_count; ++i) {
    auto w = std::make_unique<Worker>();
    w->dispatcher = std::make_unique<rpc::Dispatcher>(
        router_, admission_, metrics_, logger_,
        rpc::DispatcherOptions{
            .max_request_bytes = config_.limits.max_request_bytes,
            .identifier = config_.server.identifier,
            .request_logger = config_.server.request_logger,
            .reset_lines = reset_lines_.get(),
            .tracer = tracer_.get(),
            .authenticate = MakeAuthenticate(authenticator_.get()),
            .response_budget = WorkerResponseBudget(config_.limits, worker_count),
            .stalled_write_timeout =
                std::chrono::milliseconds(config_.server.stalled_write_timeout_ms)});
    net_workers_.push_back(
        net::Worker{.io = &w->io, .factory = w->dispatcher.get(), .connections = &w->connections});
    workers_.push_back(std::move(w));
  }
}

// Step 8: bind the gRPC port only now (OPS-005).
bool Server::BindListener() {
  auto address = config::ParseSocketAddress(config_.server.listen);
  if (!address.ok()) {
    Fail(address.status().message());
    return false;
  }
  listen_address_ = std::move(address).value();
  std::shared_ptr<asio::ssl::context> tls;
  if (config_.server.tls) {
    auto context =
        net::MakeServerTlsContext(config_.server.tls->cert_file, config_.server.tls->key_file);
    if (!context.ok()) {
      Fail(context.status().message());
      return false;
    }
    tls = std::move(context).value();
  }
  auto listener = net::Listener::Create(
      main_io_, net_workers_, listen_address_->host, listen_address_->port,
      net::ListenerOptions{.max_http2_streams = config_.limits.max_http2_streams,
                           .max_http1_body_bytes = kMaxHttp1BodyBytes,
                           .tls = tls,
                           .max_connections = config_.server.max_connections,
                           .proxy_protocol = config_.server.proxy_protocol,
                           .limits = ConnectionLimitsOf(config_),
                           .observer = &net_observer_});
  if (!listener.ok()) {
    Fail("configuration is invalid: server.listen (" + listener.status().message() + ")");
    return false;
  }
  listener_ = std::move(listener).value();
  return true;
}

// Step 8: the I/O threads run, the listener accepts, readiness says SERVING (OPS-005).
void Server::ReportServing() {
  running_workers_ = workers_.size();
  for (auto& w : workers_) {
    guards_.push_back(asio::make_work_guard(w->io));
    w->thread = std::thread([this, &io = w->io] {
      NameThisThread("xb-io");
      io.run();
      std::lock_guard lock(stopped_mu_);
      --running_workers_;
      stopped_cv_.notify_all();
    });
    asio::post(w->io,
               [d = w->dispatcher.get(), &io = w->io] { d->StartStallSweep(io.get_executor()); });
  }
  listener_->Start();
  reset_lines_->Start(main_io_.get_executor());
  health_->Set(true);
  serving_ = true;
  if (metrics_listener_) {
    logger_.Info("metrics listening",
                 {telemetry::Field::Address(metrics_address_->host + ":" +
                                            std::to_string(metrics_listener_->port()))});
  }
  const std::string serving_on = listen_address_->host + ":" + std::to_string(listener_->port());
  logger_.Info("serving", {telemetry::Field::Address(serving_on)});
  // Type=notify: systemd counts the unit started only now, with the port accepting and health
  // SERVING (OPS-005); STATUS= is what `systemctl status` shows.
  NotifySystemd("READY=1\nSTATUS=serving on " + serving_on);
  // Freed memory goes back to the system (issue 28): checked every few seconds, trimmed when the
  // allocator holds more than 64 MiB free.
  memory_release_ = std::make_unique<MemoryRelease>(main_io_.get_executor(),
                                                    std::chrono::seconds(2), size_t{64} << 20);
  memory_release_->Start();
  admission_.SetOnIdle([this] { asio::post(main_io_, [this] { Finish(); }); });
  // implements: AUTH-019 — a stale key set drains exactly as SIGTERM does, then exits non-zero.
  if (jwks_refresher_) {
    jwks_refresher_->Start([this] {
      asio::post(main_io_, [this] {
        key_set_stale_ = true;
        Drain();
      });
    });
  }
}

void Server::NotifySystemd(const std::string& state) {
  if (Status sent = systemd_.Send(state); !sent.ok()) {
    logger_.Warn("systemd notification failed", {telemetry::Field::Error(sent)});
  }
}

void Server::OnSignal(const boost::system::error_code& ec) {
  if (ec) {
    return;
  }
  if (!serving_) {
    start_cancelled_ = true;
    startup_timer_.cancel();
    if (streams_) {
      streams_->CancelWait();
    }
    return;
  }
  Drain();
}

void Server::Drain() {
  if (drain_started_) {
    return;
  }
  drain_started_ = true;
  // systemd: the unit is stopping (also when a stale key set began it), and may take the drain
  // deadline + 5 s to exit.
  NotifySystemd(StoppingState(config_.server.max_drain_duration_ms));
  // implements: OPS-007
  health_->Set(false);
  admission_.BeginDrain();
  if (prune_pass_) {
    prune_pass_->Halt();  // STORE.md 9.2: a drain stops the pass at once
  }
  listener_->NotifyShutdown();
  streams_->Shutdown(fanout::Ending{
      Status(StatusCode::kUnavailable, "the server is shutting down; reconnect elsewhere"),
      telemetry::StreamEndReason::kShutdown});
  for (auto& w : workers_) {
    asio::post(w->io, [d = w->dispatcher.get()] { d->EndStreams(); });
  }
  // implements: OPS-008
  const auto drain_deadline = std::chrono::steady_clock::now() +
                              std::chrono::milliseconds(config_.server.max_drain_duration_ms);
  if (push_dispatcher_) {
    // PUSH.md 8.6: the dispatcher's attempts share the drain deadline.
    push_drain_ =
        std::thread([d = push_dispatcher_.get(), drain_deadline] { d->Drain(drain_deadline); });
  }
  drain_timer_.expires_at(drain_deadline);
  drain_timer_.async_wait([this](boost::system::error_code timer_ec) {
    if (!timer_ec) {
      Finish();
    }
  });
  if (admission_.live_unary() == 0) {
    asio::post(main_io_, [this] { Finish(); });
  }
}

// Drain (OPS-007, OPS-008): after NOT_SERVING, closed admission and ended streams, unary calls
// had the drain deadline; whatever is left ends UNAVAILABLE and the main loop returns.
void Server::Finish() {
  if (finished_) {
    return;
  }
  finished_ = true;
  drain_timer_.cancel();
  reset_lines_->Stop();
  for (auto& w : workers_) {
    asio::post(w->io, [d = w->dispatcher.get()] { d->EndAll(); });
  }
  listener_->CloseAll();
  if (metrics_listener_) {
    metrics_listener_->Stop();
  }
  memory_release_->Stop();
  signals_.cancel();
}

void Server::Stop() {
  if (jwks_refresher_) {
    jwks_refresher_->Stop();
  }
  // implements: OPS-008 — every call has its answer now (drain deadline or idle), so the pool jobs
  // not started yet serve nobody: they are dropped and the exit does not wait for them. The running
  // ones finish here, while the workers whose executors they post to still exist (a job that
  // posted to a destroyed worker crashed the exit).
  if (push_drain_.joinable()) {
    push_drain_.join();
  }
  if (prune_pass_) {
    prune_pass_->Stop();  // the batch in flight, one short transaction, ends first
  }
  if (push_dispatcher_) {
    streams_->SetProgressObserver(nullptr);
    push_dispatcher_->Stop();
  }
  db_pool_->Stop();
  cpu_pool_->Stop();
  if (upload_signer_) {
    upload_signer_->Stop();  // uploads waiting for credentials answer before the workers go
  }
  // Workers finish writing what is queued (trailers of the calls ended above), then stop; a worker
  // that cannot finish within the telemetry flush bound is abandoned. The same bound then covers
  // the trace flush (OPS-008: exit within the drain deadline + 5 s).
  const auto flush_deadline = std::chrono::steady_clock::now() + kTelemetryFlushBound;
  JoinWorkers(flush_deadline);
  reset_lines_->Summarize();  // the requests completed since the last summary
  FlushTelemetry(flush_deadline);
  logger_.Info("stopped");
}

void Server::JoinWorkers(std::chrono::steady_clock::time_point deadline) {
  guards_.clear();
  {
    std::unique_lock lock(stopped_mu_);
    stopped_cv_.wait_until(lock, deadline, [&] { return running_workers_ == 0; });
  }
  for (auto& w : workers_) {
    w->io.stop();
    w->thread.join();
  }
}

void Server::FlushTelemetry(std::chrono::steady_clock::time_point deadline) {
  if (!exporter_) {
    return;
  }
  logger_.SetRecordSink(nullptr);  // what is logged from here on cannot be flushed
  exporter_->Shutdown(deadline);
  if (const uint64_t dropped = exporter_->dropped(); dropped > 0) {
    logger_.Warn("trace spans dropped", {telemetry::Field::Count(dropped)});
  }
  if (const uint64_t dropped = exporter_->dropped_logs(); dropped > 0) {
    logger_.Warn("log records dropped", {telemetry::Field::Count(dropped)});
  }
}

}  // namespace xb::server
