#include "telemetry/otlp_exporter.h"

#include <array>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/http/span_body.hpp>
#include <boost/beast/ssl.hpp>
#include <optional>
#include <span>
#include <type_traits>
#include <utility>

#include "base/thread_name.h"
#include "base/url.h"
#include "net/tls_client.h"
#include "telemetry/otlp_grpc.h"
#include "telemetry/spliced_send.h"

namespace xb::telemetry {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

namespace {

using Clock = std::chrono::steady_clock;

// Writes one HTTP POST of `body` to `path` over `stream` (connected). Errors go to `ec`.
// Over plain TCP the body goes through `pipe` (spliced_send.h), and `body` must then stay as it is
// until its answer was read with a success or the connection was aborted.
template <typename Stream>
asio::awaitable<void> WriteRequest(Stream& stream, SplicePipe& pipe, const std::string& host,
                                   const std::string& path, std::string_view body,
                                   boost::system::error_code& ec) {
  // The body is the encoder's buffer, sent in place (no per-batch copy).
  http::request<http::span_body<const char>> request{http::verb::post, path, 11};
  request.set(http::field::host, host);
  request.set(http::field::content_type, "application/x-protobuf");
  request.set(http::field::user_agent, "xmtp-backend");
  request.body() = http::span_body<const char>::value_type(body.data(), body.size());
  request.prepare_payload();
  if constexpr (std::is_same_v<Stream, beast::tcp_stream>) {
    http::request_serializer<http::span_body<const char>> serializer(request);
    co_await http::async_write_header(stream, serializer,
                                      asio::redirect_error(asio::use_awaitable, ec));
    if (!ec) {
      co_await pipe.Send(stream.socket(), body, ec);
    }
  } else {
    co_await http::async_write(stream, request, asio::redirect_error(asio::use_awaitable, ec));
  }
}

// Reads the answer to the oldest unanswered request on `stream`, with `buffer` (which keeps what
// the collector sent past it, for the next answer). Returns its status (0 on an error, in `ec`);
// `keep_alive` tells whether the collector keeps the connection open.
template <typename Stream>
asio::awaitable<unsigned> ReadAnswer(Stream& stream, beast::flat_buffer& buffer,
                                     boost::system::error_code& ec, bool& keep_alive) {
  http::response<http::string_body> response;
  co_await http::async_read(stream, buffer, response,
                            asio::redirect_error(asio::use_awaitable, ec));
  if (ec) {
    co_return 0;
  }
  keep_alive = response.keep_alive();
  co_return response.result_int();
}

}  // namespace

// The exporter thread's connection to the collector, kept from batch to batch (HTTP/1.1
// keep-alive): a batch costs one write and one read, not a resolve, a connect (and a TLS
// handshake) and a close. The io_context is declared first so that it outlives the streams.
struct OtlpExporter::Session {
  asio::io_context io{1};
  std::shared_ptr<asio::ssl::context> tls_context;  // net/tls_client.h
  std::optional<beast::ssl_stream<beast::tcp_stream>> tls;
  std::optional<beast::tcp_stream> plain;
  beast::flat_buffer buffer;
  SplicePipe pipe;  // plain TCP bodies

  bool open() const { return tls.has_value() || plain.has_value(); }
  // The time the next operations on the (open) connection have.
  void ExpiresAfter(Clock::duration budget) {
    if (tls) {
      beast::get_lowest_layer(*tls).expires_after(budget);
    } else {
      plain->expires_after(budget);
    }
  }
  asio::awaitable<void> Write(const std::string& host, const std::string& path,
                              std::string_view body, boost::system::error_code& ec) {
    if (tls) {
      co_await WriteRequest(*tls, pipe, host, path, body, ec);
    } else {
      co_await WriteRequest(*plain, pipe, host, path, body, ec);
    }
  }
  // Reads the answer to the oldest unanswered request: true when it is a 2xx. A failed read
  // leaves `ec` set and the connection as it is. The connection is closed after an answer the
  // collector will not keep it open for, and aborted after an error answer (the collector may
  // not have read the whole body).
  asio::awaitable<bool> Answer(boost::system::error_code& ec) {
    bool keep_alive = false;
    const unsigned status = tls ? co_await ReadAnswer(*tls, buffer, ec, keep_alive)
                                : co_await ReadAnswer(*plain, buffer, ec, keep_alive);
    if (ec) {
      co_return false;
    }
    const bool ok = status >= 200 && status < 300;
    if (!ok || !keep_alive) {
      Close(/*abort=*/!ok);
    }
    co_return ok;
  }
  // Drops the connection at once, and with it what it still queues of a body (see Close).
  void Drop() {
    if (plain) {
      Abort(plain->socket());
    }
  }
  // `abort`: an exchange did not end with a success, so a spliced body may still be queued; the
  // kernel drops it (RST), and the batch's buffer may be reused.
  void Close(bool abort = false) {
    boost::system::error_code ignored;
    if (tls) {
      beast::get_lowest_layer(*tls).socket().close(ignored);
    }
    if (plain) {
      if (abort) {
        Abort(plain->socket());
      }
      plain->socket().close(ignored);
    }
    tls.reset();
    plain.reset();
    buffer.clear();
  }
};

namespace {

// Resolves, connects and (for https) shakes hands; false on any failure.
asio::awaitable<bool> Connect(OtlpExporter::Session& s, const OtlpExporter::Target& target,
                              Clock::duration budget) {
  boost::system::error_code ec;
  asio::ip::tcp::resolver resolver(s.io);
  auto endpoints = co_await resolver.async_resolve(target.host, target.port,
                                                   asio::redirect_error(asio::use_awaitable, ec));
  if (ec) {
    co_return false;
  }
  if (!target.tls) {
    s.plain.emplace(s.io);
    s.plain->expires_after(budget);
    co_await s.plain->async_connect(endpoints, asio::redirect_error(asio::use_awaitable, ec));
    co_return !ec;
  }
  if (!s.tls_context) {
    auto context = net::MakeClientTlsContext({});  // the system roots, as net/http_client
    if (!context.ok()) {
      co_return false;
    }
    s.tls_context = std::move(context).value();
  }
  s.tls.emplace(s.io, *s.tls_context);
  if (!net::SetTlsPeerName(s.tls->native_handle(), target.host)) {
    co_return false;
  }
  beast::get_lowest_layer(*s.tls).expires_after(budget);
  co_await beast::get_lowest_layer(*s.tls).async_connect(
      endpoints, asio::redirect_error(asio::use_awaitable, ec));
  if (ec) {
    co_return false;
  }
  co_await s.tls->async_handshake(asio::ssl::stream_base::client,
                                  asio::redirect_error(asio::use_awaitable, ec));
  co_return !ec;
}

// Runs `exchange` (a coroutine on the session's connection) until it ends or `deadline` passes.
// The resolver has no expiry of its own, so run_until bounds the whole exchange. Out of time
// mid-exchange, the connection is dropped (with what it still queues of a body), and so is the
// session, with the suspended exchange in its io_context (its frame is destroyed, never resumed).
template <typename Exchange>
void RunBounded(std::unique_ptr<OtlpExporter::Session>& session, Clock::time_point deadline,
                Exchange exchange) {
  bool done = false;
  session->io.restart();
  asio::co_spawn(
      session->io,
      [&]() -> asio::awaitable<void> {
        co_await exchange();
        done = true;
      },
      asio::detached);
  session->io.run_until(deadline);
  if (!done) {
    session->Drop();
    session.reset();
  }
}

}  // namespace

namespace {

// Where OTLP/HTTP posts for `endpoint` (its path kept as the base of /v1/traces and /v1/logs).
Result<OtlpExporter::Target> ParseHttpTarget(std::string_view endpoint) {
  OtlpExporter::Target target;
  const size_t scheme_end = endpoint.find("://");
  if (scheme_end == std::string_view::npos) {
    return InvalidArgument("not an http or https URL");
  }
  const std::string_view scheme = endpoint.substr(0, scheme_end);
  if (EqualsIgnoreCase(scheme, "https")) {
    target.tls = true;
  } else if (!EqualsIgnoreCase(scheme, "http")) {
    return InvalidArgument("not an http or https URL");
  }
  std::string_view rest = endpoint.substr(scheme_end + 3);
  const size_t path_start = rest.find_first_of("/?#");
  std::string_view authority = rest.substr(0, path_start);
  std::string_view path =
      path_start == std::string_view::npos ? std::string_view() : rest.substr(path_start);
  if (const size_t cut = path.find_first_of("?#"); cut != std::string_view::npos) {
    path = path.substr(0, cut);
  }
  if (const size_t at = authority.rfind('@'); at != std::string_view::npos) {
    authority = authority.substr(at + 1);  // userinfo is not sent
  }
  std::string_view host = authority;
  std::string_view port;
  if (!authority.empty() && authority.front() == '[') {
    const size_t close = authority.find(']');
    if (close == std::string_view::npos) {
      return InvalidArgument("the URL has no host");
    }
    host = authority.substr(1, close - 1);
    if (close + 1 < authority.size()) {
      if (authority[close + 1] != ':') {
        return InvalidArgument("the URL has no host");
      }
      port = authority.substr(close + 2);
    }
  } else if (const size_t colon = authority.rfind(':'); colon != std::string_view::npos) {
    host = authority.substr(0, colon);
    port = authority.substr(colon + 1);
  }
  if (host.empty()) {
    return InvalidArgument("the URL has no host");
  }
  target.host = std::string(host);
  target.port = port.empty() ? (target.tls ? "443" : "80") : std::string(port);
  std::string p(path);
  while (!p.empty() && p.back() == '/') {
    p.pop_back();
  }
  if (p.ends_with("/v1/traces")) {
    p.resize(p.size() - std::string_view("/v1/traces").size());
  }
  target.path = p + "/v1/traces";
  target.logs_path = p + "/v1/logs";
  return target;
}

}  // namespace

Result<OtlpExporter::Target> ParseOtlpEndpoint(std::string_view endpoint, OtlpProtocol protocol) {
  auto target = ParseHttpTarget(endpoint);
  if (!target.ok() || protocol == OtlpProtocol::kHttpProtobuf) {
    return target;
  }
  // gRPC names the service in the request path: the endpoint is an origin, nothing more.
  Result<Url> url = ParseUrl(endpoint);
  if (!url.ok() || !IsHttpUrlWithHost(*url)) {
    return InvalidArgument("not an http or https URL with a host");
  }
  if ((!url->path.empty() && url->path != "/") || url->has_query) {
    return InvalidArgument("a gRPC endpoint has no path or query");
  }
  target->grpc = true;
  target->origin = std::string(target->tls ? "https://" : "http://") + HostHeader(*url);
  target->path = std::string(kGrpcTraceExportPath);
  target->logs_path = std::string(kGrpcLogsExportPath);
  return target;
}

Result<std::unique_ptr<OtlpExporter>> OtlpExporter::Create(OtlpExporterOptions options,
                                                           Metrics& metrics) {
  auto target = ParseOtlpEndpoint(options.endpoint, options.protocol);
  if (!target.ok()) {
    return target.status();
  }
  return std::unique_ptr<OtlpExporter>(
      new OtlpExporter(std::move(options), std::move(target).value(), metrics));
}

// One thread's staged spans: encoded items in a buffer that stays in that thread's cache.
//
// The owning thread appends without a lock: it writes a span's bytes and its end past what it
// has committed, then publishes the new count with a release store (no locked instruction on the
// serving path). The exporter's sweep, under mu_, reads only committed spans, from `swept` on,
// and records how far it took them. Only the owner resets the stage or reallocates its buffer,
// and only under mu_, so the sweep never reads a buffer that moves or bytes that are rewritten.
struct OtlpExporter::Stage {
  explicit Stage(std::thread::id owner) : thread(owner) {}

  const std::thread::id thread;
  ByteBuffer buffer;                       // owner writes; reallocated only under mu_
  size_t size = 0;                         // owner only: bytes written
  size_t count = 0;                        // owner only: spans written
  std::array<size_t, kStageSpans> ends{};  // ends[i]: the offset just past span i
  std::atomic<size_t> committed{0};        // spans the sweep may read
  size_t swept = 0;                        // guarded by mu_: spans [0, swept) already moved

  // The bytes of spans [first, last).
  std::string_view Items(size_t first, size_t last) const {
    const size_t begin = first == 0 ? 0 : ends[first - 1];
    return std::string_view(buffer.data() + begin, ends[last - 1] - begin);
  }
};

namespace {

uint64_t NextExporterId() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace

OtlpExporter::OtlpExporter(OtlpExporterOptions options, Target target, Metrics& metrics)
    : options_(std::move(options)),
      target_(std::move(target)),
      metrics_(metrics),
      framing_(options_.resource),
      id_(NextExporterId()) {
  if (target_.grpc) {
    grpc_ = std::make_unique<OtlpGrpcChannel>(target_.origin);
  }
}

OtlpExporter::~OtlpExporter() { Shutdown(Clock::now()); }

void OtlpExporter::Start() {
  XB_CHECK(!thread_.joinable());
  thread_ = std::thread([this] { Run(); });
}

void OtlpExporter::Shutdown(Clock::time_point deadline) {
  {
    std::lock_guard lock(mu_);
    if (stopping_.load(std::memory_order_relaxed)) {
      deadline_ = std::min(deadline_, deadline);
    } else {
      stopping_.store(true, std::memory_order_release);
      deadline_ = deadline;
    }
  }
  cv_.notify_all();
  if (thread_.joinable()) {
    thread_.join();
  }
  // Spans staged after the exporter's last sweep (their Submit had begun before stopping_ was
  // set) are not sent: they count with the others that missed the flush, as do later moves.
  std::lock_guard lock(mu_);
  closed_ = true;
  for (const auto& stage : stages_) {
    const size_t committed = stage->committed.load(std::memory_order_acquire);
    if (committed > stage->swept) {
      dropped_.fetch_add(committed - stage->swept, std::memory_order_relaxed);
      stage->swept = committed;
    }
  }
}

OtlpExporter::Stage& OtlpExporter::ThisThreadStage() {
  struct Cached {
    uint64_t exporter = 0;  // ids start at 1
    Stage* stage = nullptr;
  };
  thread_local Cached cached;
  if (cached.exporter == id_) {
    return *cached.stage;
  }
  const std::thread::id me = std::this_thread::get_id();
  std::lock_guard lock(mu_);
  Stage* stage = nullptr;
  // A thread that moves between exporters (tests) finds the stage it had.
  for (const auto& existing : stages_) {
    if (existing->thread == me) {
      stage = existing.get();
      break;
    }
  }
  if (stage == nullptr) {
    stages_.push_back(std::make_unique<Stage>(me));
    stage = stages_.back().get();
    stage->buffer.Reserve(kStageBytes, 0, 0);
  }
  cached = Cached{id_, stage};
  return *stage;
}

bool OtlpExporter::MoveSpans(const Stage& stage, size_t first, size_t last) {
  if (closed_) {
    dropped_.fetch_add(last - first, std::memory_order_relaxed);
    return false;
  }
  // The queue's bound holds here, where spans join a batch: the ones past it are dropped.
  const size_t queued = queued_spans_.load(std::memory_order_relaxed);
  const size_t room = options_.max_queue - std::min(queued, options_.max_queue);
  if (last - first > room) {
    dropped_.fetch_add(last - first - room, std::memory_order_relaxed);
    last = first + room;
  }
  queued_spans_.store(queued + (last - first), std::memory_order_relaxed);
  bool filled = false;
  while (first < last) {
    if (filling_ == nullptr) {
      if (spare_.empty()) {
        filling_ = std::make_unique<EncodedSpans>(framing_, ByteBuffer::Pages::kHuge);
      } else {
        filling_ = std::move(spare_.back());
        spare_.pop_back();
      }
    }
    const size_t take = std::min(last - first, options_.max_batch - filling_->count());
    filling_->AppendEncoded(stage.Items(first, first + take), take);
    first += take;
    if (filling_->count() >= options_.max_batch) {
      full_.push_back(std::move(filling_));
      filled = true;
    }
  }
  filling_count_.store(filling_ == nullptr ? 0 : filling_->count(), std::memory_order_relaxed);
  return filled;
}

bool OtlpExporter::MoveStage(Stage& stage, size_t need) {
  std::lock_guard lock(mu_);
  const bool filled = stage.count > stage.swept && MoveSpans(stage, stage.swept, stage.count);
  stage.size = 0;
  stage.count = 0;
  stage.swept = 0;
  stage.committed.store(0, std::memory_order_relaxed);
  if (need > stage.buffer.capacity()) {
    stage.buffer.Reserve(need, 0, 0);
  }
  return filled;
}

void OtlpExporter::SweepStages() {
  std::lock_guard lock(mu_);
  for (const auto& stage : stages_) {
    const size_t committed = stage->committed.load(std::memory_order_acquire);
    if (committed > stage->swept) {
      MoveSpans(*stage, stage->swept, committed);  // the exporter takes full batches next
      stage->swept = committed;
    }
  }
}

void OtlpExporter::Submit(SpanData&& span) {
  // Spans ending during or after the shutdown flush are not exported; a full queue drops (the
  // staged spans count when they move: MoveSpans drops what is past the bound then).
  if (stopping_.load(std::memory_order_acquire) ||
      queued_spans_.load(std::memory_order_relaxed) >= options_.max_queue) {
    dropped_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  Stage& stage = ThisThreadStage();
  const size_t bound = SpanItemBound(span);
  bool filled = false;
  if (stage.size + bound > stage.buffer.capacity()) {
    filled = MoveStage(stage, bound);  // and makes room for a span larger than the buffer
  }
  stage.size += WriteSpanItem(span, bound, stage.buffer.data() + stage.size);
  stage.ends[stage.count++] = stage.size;
  stage.committed.store(stage.count, std::memory_order_release);
  // A stage moves when it holds kStageSpans, or sooner when that fills the batch, so a full
  // batch goes as soon as its last span ends (exactly so with one thread).
  const size_t in_batch =
      std::min(filling_count_.load(std::memory_order_relaxed), options_.max_batch);
  if (stage.count >= std::max<size_t>(1, std::min(kStageSpans, options_.max_batch - in_batch))) {
    filled = MoveStage(stage, 0) || filled;
  }
  if (filled) {
    cv_.notify_one();
  }
}

void OtlpExporter::SubmitLog(LogRecordData&& record) {
  {
    std::lock_guard lock(mu_);
    if (stopping_.load(std::memory_order_relaxed) || log_queue_.size() >= options_.max_queue) {
      ++dropped_logs_;
      return;
    }
    if (log_queue_.capacity() == 0) {
      log_queue_.reserve(options_.max_queue);  // once, on first use: no allocation per record
    }
    log_queue_.push_back(std::move(record));
    if (log_queue_.size() < options_.max_batch) {
      return;
    }
  }
  cv_.notify_one();
}

uint64_t OtlpExporter::dropped() const { return dropped_.load(std::memory_order_relaxed); }

uint64_t OtlpExporter::dropped_logs() const {
  std::lock_guard lock(mu_);
  return dropped_logs_;
}

uint64_t OtlpExporter::exported_batches() const {
  std::lock_guard lock(mu_);
  return exported_batches_;
}

void OtlpExporter::Run() {
  // Named so operators (top -H) and bench/telemetry.sh can tell the exporter's CPU apart.
  NameThisThread("xb-otlp");
  Work work;
  ByteBuffer log_body;  // log batches are encoded here, keeping its capacity
  Clock::time_point next_sweep = Clock::now() + options_.interval;
  while (true) {
    if (!TakeWork(work, next_sweep)) {
      Settle(work.stopping, work.deadline);  // a quiet exporter reads its last answer in time
      if (work.stopping) {
        return;
      }
      continue;
    }
    const uint64_t dropped = SendSpanBatches(work);
    const uint64_t dropped_logs = SendLogs(work, log_body);
    work.logs.clear();
    dropped_.fetch_add(dropped, std::memory_order_relaxed);
    std::lock_guard lock(mu_);
    dropped_logs_ += dropped_logs;
    for (auto& batch : work.batches) {
      if (batch != nullptr) {  // not the one awaiting its answer
        batch->Clear();
        spare_.push_back(std::move(batch));
      }
    }
    work.batches.clear();
  }
}

bool OtlpExporter::TakeWork(Work& work, Clock::time_point& next_sweep) {
  std::unique_lock lock(mu_);
  cv_.wait_until(lock, next_sweep, [&] {
    return stopping_.load(std::memory_order_relaxed) || !full_.empty() ||
           log_queue_.size() >= options_.max_batch;
  });
  work.stopping = stopping_.load(std::memory_order_relaxed);
  // Every interval, and at shutdown, the spans the threads have staged join the batches.
  if (work.stopping || Clock::now() >= next_sweep) {
    lock.unlock();
    SweepStages();
    lock.lock();
    next_sweep = Clock::now() + options_.interval;
  }
  work.deadline = deadline_;
  work.batches.swap(full_);  // full_ takes the empty vector, keeping its capacity
  // A partial batch goes when it has waited its interval (no batch filled meanwhile) or at
  // shutdown. Sent along with full ones, it would cost a request of its own for a few spans.
  if (filling_ != nullptr && (work.batches.empty() || work.stopping)) {
    work.batches.push_back(std::move(filling_));
    filling_count_.store(0, std::memory_order_relaxed);
  }
  size_t taken = 0;
  for (const auto& batch : work.batches) {
    taken += batch->count();
  }
  queued_spans_.store(queued_spans_.load(std::memory_order_relaxed) - taken,
                      std::memory_order_relaxed);  // written under mu_ only
  // The queue takes the previous batch's storage (cleared by Run, keeping capacity).
  work.logs.swap(log_queue_);
  return !work.batches.empty() || !work.logs.empty();
}

uint64_t OtlpExporter::SendSpanBatches(Work& work) {
  // A span batch is written and its answer left unread until the next batch is due (answers
  // come in order on the connection), the exporter next wakes with nothing to send, or it
  // stops: one wake-up per batch, not one for the batch and one for its answer. Each wake-up
  // switches a serving thread out of its core, and cost more than the span work on a loaded
  // one (docs/telemetry.md).
  uint64_t dropped = 0;
  auto& batches = work.batches;
  for (size_t i = 0; i < batches.size(); ++i) {
    Settle(work.stopping, work.deadline);
    const auto until = RequestDeadline(work.stopping, work.deadline);
    if (!until) {
      for (size_t j = i; j < batches.size(); ++j) {
        dropped += batches[j]->count();
      }
      break;
    }
    if (grpc_) {  // a whole call: counted now; the batch goes back to spare_ with the others
      Send(batches[i]->Frame(), target_.path, *until);
      continue;
    }
    bool reused = false;
    if (Post(batches[i]->Frame(), target_.path, *until, /*leave_answer=*/true, &reused)) {
      awaiting_ = std::move(batches[i]);  // kept as it is until its answer (spliced_send.h)
      awaiting_reused_ = reused;
    } else {
      CountBatch(false);
    }
  }
  return dropped;
}

uint64_t OtlpExporter::SendLogs(Work& work, ByteBuffer& log_body) {
  const auto& logs = work.logs;
  if (!logs.empty()) {
    Settle(work.stopping, work.deadline);  // log exchanges read their answers at once
  }
  for (size_t i = 0; i < logs.size(); i += options_.max_batch) {
    const auto until = RequestDeadline(work.stopping, work.deadline);
    if (!until) {
      return logs.size() - i;
    }
    const size_t n = std::min(options_.max_batch, logs.size() - i);
    Send(EncodeLogs(framing_, std::span<const LogRecordData>(logs.data() + i, n), log_body),
         target_.logs_path, *until);
  }
  return 0;
}

std::optional<Clock::time_point> OtlpExporter::RequestDeadline(bool stopping,
                                                               Clock::time_point deadline) const {
  const auto now = Clock::now();
  Clock::time_point until = now + options_.request_timeout;
  if (stopping) {
    until = std::min(until, deadline);
  }
  if (now >= until) {
    return std::nullopt;
  }
  return until;
}

void OtlpExporter::Send(std::string_view body, const std::string& path, Clock::time_point until) {
  CountBatch(Post(body, path, until));
}

void OtlpExporter::CountBatch(bool exported) {
  if (exported) {
    std::lock_guard lock(mu_);
    ++exported_batches_;
  } else {
    metrics_.ExportFailure();  // implements: OPS-015 (a failed batch is counted)
  }
}

bool OtlpExporter::Post(std::string_view body, const std::string& path, Clock::time_point deadline,
                        bool leave_answer, bool* written_on_reused) {
  if (grpc_) {
    return grpc_->Call(path, body, deadline);  // only whole calls (SendSpanBatches)
  }
  if (!session_) {
    session_ = std::make_unique<Session>();
  }
  Session& s = *session_;
  bool ok = false;
  const auto budget = deadline - Clock::now();
  RunBounded(session_, deadline, [&]() -> asio::awaitable<void> {
    // A kept connection the collector has meanwhile closed fails the exchange: that batch is sent
    // once more, on a new connection. A new connection that fails ends the attempt.
    for (int attempt = 0; attempt < 2; ++attempt) {
      const bool reused = s.open();
      if (!reused && !co_await Connect(s, target_, budget)) {
        s.Close();  // a half-made connection is not one to reuse for the next batch
        break;
      }
      s.ExpiresAfter(budget);
      boost::system::error_code ec;
      co_await s.Write(target_.host, path, body, ec);
      if (!ec && leave_answer) {
        ok = true;
        if (written_on_reused != nullptr) {
          *written_on_reused = reused;
        }
        break;
      }
      if (!ec) {
        ok = co_await s.Answer(ec);
      }
      if (!ec) {
        break;
      }
      s.Close(/*abort=*/true);
      if (!reused) {
        break;
      }
    }
  });
  return ok;
}

void OtlpExporter::Settle(bool stopping, Clock::time_point deadline) {
  if (!awaiting_) {
    return;
  }
  bool ok = false;
  const auto until = RequestDeadline(stopping, deadline);
  if (until && session_ && session_->open()) {
    Session& s = *session_;
    bool lost = false;  // the connection failed before the answer came (not: out of time)
    const auto budget = *until - Clock::now();
    RunBounded(session_, *until, [&]() -> asio::awaitable<void> {
      s.ExpiresAfter(budget);
      boost::system::error_code ec;
      ok = co_await s.Answer(ec);
      if (ec) {
        s.Close(/*abort=*/true);
        lost = true;
      }
    });
    if (lost && awaiting_reused_) {
      // A kept connection the collector closed before it took the batch: sent once more, on a
      // new connection, as Post does.
      ok = Post(awaiting_->Frame(), target_.path, *until, /*leave_answer=*/false);
    }
  } else if (session_) {
    // No time left (shutdown): the body may still be queued, and goes with the connection.
    session_->Drop();
    session_.reset();
  }
  CountBatch(ok);
  std::lock_guard lock(mu_);
  awaiting_->Clear();
  spare_.push_back(std::move(awaiting_));
}

}  // namespace xb::telemetry
