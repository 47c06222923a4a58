#include "telemetry/otlp_exporter.h"

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
#include <span>
#include <utility>

namespace xb::telemetry {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

namespace {

using Clock = std::chrono::steady_clock;

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) {
    return false;
  }
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

// One HTTP POST over `stream` (connected). Errors go to `ec`.
template <typename Stream>
asio::awaitable<unsigned> Exchange(Stream& stream, const OtlpExporter::Target& target,
                                   std::string_view body, boost::system::error_code& ec) {
  // The body is the encoder's buffer, sent in place (no per-batch copy).
  http::request<http::span_body<const char>> request{http::verb::post, target.path, 11};
  request.set(http::field::host, target.host);
  request.set(http::field::content_type, "application/x-protobuf");
  request.set(http::field::user_agent, "xmtp-backend");
  request.body() = http::span_body<const char>::value_type(body.data(), body.size());
  request.prepare_payload();
  co_await http::async_write(stream, request, asio::redirect_error(asio::use_awaitable, ec));
  if (ec) {
    co_return 0;
  }
  beast::flat_buffer buffer;
  http::response<http::string_body> response;
  co_await http::async_read(stream, buffer, response,
                            asio::redirect_error(asio::use_awaitable, ec));
  if (ec) {
    co_return 0;
  }
  co_return response.result_int();
}

}  // namespace

Result<OtlpExporter::Target> ParseOtlpEndpoint(std::string_view endpoint) {
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
  if (!p.ends_with("/v1/traces")) {
    p += "/v1/traces";
  }
  target.path = std::move(p);
  return target;
}

Result<std::unique_ptr<OtlpExporter>> OtlpExporter::Create(OtlpExporterOptions options,
                                                           Metrics& metrics) {
  auto target = ParseOtlpEndpoint(options.endpoint);
  if (!target.ok()) {
    return target.status();
  }
  return std::unique_ptr<OtlpExporter>(
      new OtlpExporter(std::move(options), std::move(target).value(), metrics));
}

OtlpExporter::OtlpExporter(OtlpExporterOptions options, Target target, Metrics& metrics)
    : options_(std::move(options)), target_(std::move(target)), metrics_(metrics) {
  queue_.reserve(options_.max_queue);
}

OtlpExporter::~OtlpExporter() { Shutdown(Clock::now()); }

void OtlpExporter::Start() {
  XB_CHECK(!thread_.joinable());
  thread_ = std::thread([this] { Run(); });
}

void OtlpExporter::Shutdown(Clock::time_point deadline) {
  {
    std::lock_guard lock(mu_);
    if (stopping_) {
      deadline_ = std::min(deadline_, deadline);
    } else {
      stopping_ = true;
      deadline_ = deadline;
    }
  }
  cv_.notify_all();
  if (thread_.joinable()) {
    thread_.join();
  }
}

void OtlpExporter::Submit(SpanData&& span) {
  {
    std::lock_guard lock(mu_);
    if (stopping_) {  // spans ending during or after the shutdown flush are not exported
      ++dropped_;
      return;
    }
    if (queue_.size() >= options_.max_queue) {
      ++dropped_;
      return;
    }
    queue_.push_back(std::move(span));
    if (queue_.size() < options_.max_batch) {
      return;
    }
  }
  cv_.notify_one();
}

uint64_t OtlpExporter::dropped() const {
  std::lock_guard lock(mu_);
  return dropped_;
}

uint64_t OtlpExporter::exported_batches() const {
  std::lock_guard lock(mu_);
  return exported_batches_;
}

void OtlpExporter::Run() {
  std::vector<SpanData> batch;
  batch.reserve(options_.max_queue);
  OtlpEncoder encoder(options_.resource);
  while (true) {
    Clock::time_point deadline;
    bool stopping = false;
    {
      std::unique_lock lock(mu_);
      cv_.wait_for(lock, options_.interval,
                   [&] { return stopping_ || queue_.size() >= options_.max_batch; });
      stopping = stopping_;
      deadline = deadline_;
      if (queue_.empty()) {
        if (stopping) {
          return;
        }
        continue;
      }
      batch.swap(queue_);  // queue_ keeps batch's (reserved) storage
      queue_.reserve(options_.max_queue);
    }
    for (size_t i = 0; i < batch.size(); i += options_.max_batch) {
      const size_t n = std::min(options_.max_batch, batch.size() - i);
      const auto now = Clock::now();
      Clock::time_point until = now + options_.request_timeout;
      if (stopping) {
        until = std::min(until, deadline);
      }
      if (now >= until) {
        std::lock_guard lock(mu_);
        dropped_ += batch.size() - i;
        break;
      }
      const std::string_view body = encoder.Encode(std::span<const SpanData>(batch.data() + i, n));
      if (Post(body, until)) {
        std::lock_guard lock(mu_);
        ++exported_batches_;
      } else {
        metrics_.ExportFailure();  // implements: OPS-015 (a failed batch is counted)
      }
    }
    batch.clear();
  }
}

bool OtlpExporter::Post(std::string_view body, Clock::time_point deadline) {
  asio::io_context io{1};
  bool ok = false;
  const auto budget = deadline - Clock::now();
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        boost::system::error_code ec;
        asio::ip::tcp::resolver resolver(io);
        auto endpoints = co_await resolver.async_resolve(
            target_.host, target_.port, asio::redirect_error(asio::use_awaitable, ec));
        if (ec) {
          co_return;
        }
        unsigned status = 0;
        if (target_.tls) {
          asio::ssl::context tls(asio::ssl::context::tls_client);
          tls.set_default_verify_paths(ec);
          tls.set_verify_mode(asio::ssl::verify_peer, ec);
          beast::ssl_stream<beast::tcp_stream> stream(io, tls);
          if (!SSL_set_tlsext_host_name(stream.native_handle(), target_.host.c_str())) {
            co_return;
          }
          stream.set_verify_callback(asio::ssl::host_name_verification(target_.host), ec);
          beast::get_lowest_layer(stream).expires_after(budget);
          co_await beast::get_lowest_layer(stream).async_connect(
              endpoints, asio::redirect_error(asio::use_awaitable, ec));
          if (ec) {
            co_return;
          }
          co_await stream.async_handshake(asio::ssl::stream_base::client,
                                          asio::redirect_error(asio::use_awaitable, ec));
          if (ec) {
            co_return;
          }
          status = co_await Exchange(stream, target_, body, ec);
        } else {
          beast::tcp_stream stream(io);
          stream.expires_after(budget);
          co_await stream.async_connect(endpoints, asio::redirect_error(asio::use_awaitable, ec));
          if (ec) {
            co_return;
          }
          status = co_await Exchange(stream, target_, body, ec);
        }
        ok = !ec && status >= 200 && status < 300;
      },
      asio::detached);
  // The resolver has no expiry of its own: run_until bounds the whole exchange.
  io.run_until(deadline);
  return ok;
}

}  // namespace xb::telemetry
