#include "telemetry/metrics_listener.h"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <chrono>
#include <string>
#include <unordered_set>
#include <utility>

namespace xb::telemetry {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using Strand = asio::strand<asio::io_context::executor_type>;

constexpr auto kUseTuple = asio::as_tuple(asio::use_awaitable);

// A scraper reads /metrics every few seconds; a connection idle longer than this is closed, and
// a peer that trickles its request never holds the connection longer either.
constexpr std::chrono::seconds kReadTimeout{30};
constexpr std::chrono::seconds kWriteTimeout{30};
constexpr uint32_t kMaxHeaderBytes = 8 * 1024;
constexpr uint64_t kMaxBodyBytes = 4 * 1024;
// Prometheus holds one connection per scraper; more than this many at once is not a scraper, and
// the surplus is closed at once so that idle connections cannot pile up (every queue is bounded).
constexpr size_t kMaxConnections = 64;
// After an accept error such as EMFILE, wait before accepting again instead of spinning.
constexpr std::chrono::milliseconds kAcceptRetryDelay{100};

// "host:port", bracketing an IPv6 literal, for error messages (OPS-022).
std::string FormatAddress(std::string_view host, uint16_t port) {
  std::string out;
  const bool bracket = host.find(':') != std::string_view::npos && !host.starts_with('[');
  if (bracket) {
    out.push_back('[');
  }
  out.append(host);
  if (bracket) {
    out.push_back(']');
  }
  out.push_back(':');
  out.append(std::to_string(port));
  return out;
}

using Request = http::request<http::string_body>;
using Response = http::response<http::string_body>;

Response Respond(const Request& req, const Metrics& metrics) {
  const std::string_view target(req.target().data(), req.target().size());
  const std::string_view path = target.substr(0, target.find('?'));  // a scraper may add params
  Response res;
  res.version(req.version());
  res.keep_alive(req.keep_alive());
  if (path != "/metrics") {
    res.result(http::status::not_found);
    res.set(http::field::content_type, "text/plain; charset=utf-8");
    res.body() = "not found\n";
  } else if (req.method() != http::verb::get) {
    res.result(http::status::method_not_allowed);
    res.set(http::field::allow, "GET");
    res.set(http::field::content_type, "text/plain; charset=utf-8");
    res.body() = "method not allowed\n";
  } else {
    res.result(http::status::ok);
    res.set(http::field::content_type,
            beast::string_view(kExpositionContentType.data(), kExpositionContentType.size()));
    res.body() = metrics.Exposition();
  }
  res.prepare_payload();
  return res;
}

// The answer to a request that could not be parsed; the connection closes after it.
Response RespondToParseError(const beast::error_code& ec) {
  Response res;
  if (ec == http::error::header_limit) {
    res.result(http::status::request_header_fields_too_large);
  } else if (ec == http::error::body_limit || ec == http::error::buffer_overflow) {
    res.result(http::status::payload_too_large);
  } else {
    res.result(http::status::bad_request);
  }
  res.version(11);
  res.keep_alive(false);
  res.set(http::field::content_type, "text/plain; charset=utf-8");
  res.body() = "bad request\n";
  res.prepare_payload();
  return res;
}

}  // namespace

struct MetricsListener::State {
  State(asio::io_context& io, const Metrics& m)
      : strand(asio::make_strand(io)), metrics(m), acceptor(strand) {}

  // Runs on the strand: closes the acceptor and every connection (their reads then complete with
  // operation_aborted and the coroutines end).
  void Close() {
    stopped = true;
    beast::error_code ignored;
    acceptor.close(ignored);
    for (beast::tcp_stream* stream : connections) {
      stream->close();
    }
  }

  // Const after construction.
  Strand strand;
  const Metrics& metrics;

  // Touched only on the strand once Create has returned.
  tcp::acceptor acceptor;
  bool stopped = false;
  std::unordered_set<beast::tcp_stream*> connections;
};

namespace {

using State = MetricsListener::State;

asio::awaitable<void> ServeConnection(std::shared_ptr<State> state, tcp::socket socket) {
  beast::tcp_stream stream(std::move(socket));
  state->connections.insert(&stream);
  struct Unregister {
    State* state;
    beast::tcp_stream* stream;
    ~Unregister() { state->connections.erase(stream); }
  } unregister{state.get(), &stream};

  beast::flat_buffer buffer(kMaxHeaderBytes + kMaxBodyBytes);
  while (!state->stopped) {
    http::request_parser<http::string_body> parser;
    parser.header_limit(kMaxHeaderBytes);
    parser.body_limit(kMaxBodyBytes);
    stream.expires_after(kReadTimeout);
    auto [read_ec, bytes_read] = co_await http::async_read(stream, buffer, parser, kUseTuple);
    if (read_ec) {
      if (read_ec == http::error::end_of_stream || read_ec == beast::error::timeout ||
          read_ec == asio::error::operation_aborted || state->stopped ||
          read_ec.category() != http::make_error_code(http::error::bad_target).category()) {
        break;  // the peer left, went idle, or we are stopping: nothing to answer
      }
      Response res = RespondToParseError(read_ec);
      stream.expires_after(kWriteTimeout);
      co_await http::async_write(stream, res, kUseTuple);
      break;
    }
    Response res = Respond(parser.get(), state->metrics);
    stream.expires_after(kWriteTimeout);
    auto [write_ec, bytes_written] = co_await http::async_write(stream, res, kUseTuple);
    if (write_ec || !res.keep_alive()) {
      break;
    }
  }
  beast::error_code ignored;
  stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
  stream.close();
}

asio::awaitable<void> AcceptLoop(std::shared_ptr<State> state) {
  asio::steady_timer backoff(state->strand);
  while (!state->stopped) {
    // The accepted socket takes the strand, so its connection runs there too.
    auto [ec, socket] = co_await state->acceptor.async_accept(state->strand, kUseTuple);
    if (state->stopped || ec == asio::error::operation_aborted) {
      co_return;
    }
    if (ec) {  // EMFILE, ECONNABORTED, ...: transient; keep serving
      backoff.expires_after(kAcceptRetryDelay);
      co_await backoff.async_wait(kUseTuple);
      continue;
    }
    if (state->connections.size() >= kMaxConnections) {
      beast::error_code ignored;
      socket.close(ignored);
      continue;
    }
    asio::co_spawn(state->strand, ServeConnection(state, std::move(socket)), asio::detached);
  }
}

}  // namespace

Result<std::unique_ptr<MetricsListener>> MetricsListener::Create(asio::io_context& io,
                                                                 std::string_view host,
                                                                 uint16_t port,
                                                                 const Metrics& metrics) {
  const std::string address = FormatAddress(host, port);
  std::string bare(host);
  if (bare.size() >= 2 && bare.front() == '[' && bare.back() == ']') {
    bare = bare.substr(1, bare.size() - 2);
  }

  beast::error_code ec;
  tcp::endpoint endpoint;
  const asio::ip::address ip = asio::ip::make_address(bare, ec);
  if (!ec) {
    endpoint = tcp::endpoint(ip, port);
  } else {
    tcp::resolver resolver(io);
    const auto results = resolver.resolve(bare, std::to_string(port), ec);
    if (ec || results.empty()) {
      return Unavailable("cannot resolve the metrics listen address " + address + ": " +
                         (ec ? ec.message() : std::string("no address")));
    }
    endpoint = results.begin()->endpoint();
  }

  auto state = std::make_shared<State>(io, metrics);
  auto fail = [&address](const beast::error_code& e) {
    return Unavailable("cannot bind the metrics listener to " + address + ": " + e.message());
  };
  if (state->acceptor.open(endpoint.protocol(), ec); ec) {
    return fail(ec);
  }
  if (state->acceptor.set_option(asio::socket_base::reuse_address(true), ec); ec) {
    return fail(ec);
  }
  if (state->acceptor.bind(endpoint, ec); ec) {
    return fail(ec);
  }
  if (state->acceptor.listen(asio::socket_base::max_listen_connections, ec); ec) {
    return fail(ec);
  }
  const tcp::endpoint bound = state->acceptor.local_endpoint(ec);
  if (ec) {
    return fail(ec);
  }

  asio::co_spawn(state->strand, AcceptLoop(state), asio::detached);
  return std::unique_ptr<MetricsListener>(new MetricsListener(std::move(state), bound.port()));
}

MetricsListener::MetricsListener(std::shared_ptr<State> state, uint16_t port)
    : state_(std::move(state)), port_(port) {}

MetricsListener::~MetricsListener() { Stop(); }

void MetricsListener::Stop() {
  asio::dispatch(state_->strand, [state = state_] { state->Close(); });
}

}  // namespace xb::telemetry
