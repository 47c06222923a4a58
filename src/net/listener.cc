#include "net/listener.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cerrno>
#include <cstring>
#include <functional>
#include <optional>

#include "net/http1/connection.h"
#include "net/http2/connection.h"
#include "net/proxy_header.h"
#include "net/tcp_stream.h"
#include "net/tls_stream.h"

namespace xb::net {

namespace asio = boost::asio;
using asio::ip::tcp;
using Clock = std::chrono::steady_clock;

namespace {

constexpr std::string_view kHttp2Preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

// implements: issue 28 (4). After accept fails for want of a resource, the next try waits; the
// wait grows by half after each failure in a row up to the maximum, and a successful accept
// resets it. Connections meanwhile wait in the listen backlog.
constexpr auto kAcceptBackoffMin = std::chrono::milliseconds(100);
constexpr auto kAcceptBackoffMax = std::chrono::milliseconds(1000);
// At most one warning per interval while accept keeps failing.
constexpr auto kAcceptReportInterval = std::chrono::seconds(10);

// The resource an accept() error says is exhausted; none for any other error.
std::optional<AcceptFailure> ResourceFailure(const boost::system::error_code& ec) {
  if (ec.category() != boost::system::system_category()) {
    return std::nullopt;
  }
  switch (ec.value()) {
    case EMFILE:
    case ENFILE:
      return AcceptFailure::kDescriptors;
    case ENOBUFS:
    case ENOMEM:
      return AcceptFailure::kMemory;
    default:
      return std::nullopt;
  }
}

// Errors of one pending connection, not of the listener (accept(2), "Error handling"): that
// connection is skipped and the next one accepted at once.
bool IsPeerError(const boost::system::error_code& ec) {
  if (ec.category() != boost::system::system_category()) {
    return false;
  }
  switch (ec.value()) {
    case ECONNABORTED:
    case EPROTO:
    case EPERM:
    case EAGAIN:
    case EINTR:
    case ENETDOWN:
    case ENOPROTOOPT:
    case EHOSTDOWN:
    case ENONET:
    case EHOSTUNREACH:
    case EOPNOTSUPP:
    case ENETUNREACH:
    case ETIMEDOUT:
      return true;
    default:
      return false;
  }
}

// A connection's place under server.max_connections, held for its whole life.
class Slot {
 public:
  Slot(std::shared_ptr<std::atomic<uint64_t>> open, Observer* observer)
      : open_(std::move(open)), observer_(observer) {
    open_->fetch_add(1, std::memory_order_relaxed);
    observer_->ConnectionsOpen(1);
  }
  ~Slot() {
    if (open_ != nullptr) {
      open_->fetch_sub(1, std::memory_order_relaxed);
      observer_->ConnectionsOpen(-1);
    }
  }
  Slot(Slot&& other) noexcept : open_(std::move(other.open_)), observer_(other.observer_) {}
  Slot& operator=(Slot&&) = delete;

 private:
  std::shared_ptr<std::atomic<uint64_t>> open_;
  Observer* observer_;
};

// Closes the connection when the handshake deadline passes while it is armed: from accept through
// the PROXY header, the TLS handshake and the protocol sniff. The connection then takes the same
// deadline over for the first request head.
class HandshakeDeadline {
 public:
  // `close` ends the connection (its socket or stream); it is called only while this is alive.
  HandshakeDeadline(const asio::any_io_executor& executor, Clock::time_point at, Observer* observer,
                    std::function<void()> close)
      : state_(std::make_shared<State>(State{std::move(close), observer})), timer_(executor) {
    timer_.expires_at(at);
    timer_.async_wait([state = state_](boost::system::error_code ec) {
      if (!ec && state->close) {
        state->observer->ConnectionEnded(ConnectionEnd::kHandshakeTimeout);
        state->close();
      }
    });
  }
  // Disarms it: before the connection is handed on or destroyed.
  ~HandshakeDeadline() {
    state_->close = nullptr;
    timer_.cancel();
  }
  HandshakeDeadline(const HandshakeDeadline&) = delete;
  HandshakeDeadline& operator=(const HandshakeDeadline&) = delete;

 private:
  struct State {
    std::function<void()> close;
    Observer* observer;
  };
  std::shared_ptr<State> state_;
  asio::steady_timer timer_;
};

template <typename C>
asio::awaitable<void> RunTracked(std::shared_ptr<C> conn, ConnectionSet& set, std::string initial) {
  set.Add(conn);
  co_await conn->Run(std::move(initial));
  set.Remove(conn.get());
}

// TLS when configured, then reads until the first bytes tell HTTP/2 prior knowledge from
// HTTP/1.1, then serves.
// The socket's remote address, IPv4 mapped into IPv6 (net::PeerAddress).
PeerAddress PeerOf(const tcp::socket& socket) {
  boost::system::error_code ec;
  const tcp::endpoint remote = socket.remote_endpoint(ec);
  PeerAddress peer;
  if (ec) {
    return peer;
  }
  const asio::ip::address address = remote.address();
  const asio::ip::address_v6 v6 =
      address.is_v4() ? asio::ip::make_address_v6(asio::ip::v4_mapped, address.to_v4())
                      : address.to_v6();
  peer.bytes = v6.to_bytes();
  peer.known = true;
  return peer;
}

// Reads exactly `bytes` from the socket (no further: what follows may be a TLS ClientHello).
asio::awaitable<bool> ReadExactly(tcp::socket& socket, std::string& into, size_t bytes) {
  const size_t start = into.size();
  into.resize(start + bytes);
  boost::system::error_code ec;
  co_await asio::async_read(socket, asio::buffer(into.data() + start, bytes),
                            asio::redirect_error(asio::use_awaitable, ec));
  co_return !ec;
}

// implements: server.proxy_protocol. The header, read before anything else (under the caller's
// handshake deadline); the client address it carries replaces the socket's peer. Nothing when
// the connection ended (or the deadline closed it) before a whole header, or when what it sent
// is not a valid header: only that is counted here.
asio::awaitable<std::optional<PeerAddress>> ReadProxyHeader(tcp::socket& socket,
                                                            Observer* observer) {
  std::string header;
  if (!co_await ReadExactly(socket, header, kProxyHeaderFixedBytes)) {
    co_return std::nullopt;
  }
  if (const ProxyHeaderFixed fixed = ParseProxyHeaderFixed(header); fixed.valid) {
    if (!co_await ReadExactly(socket, header, fixed.total_bytes - kProxyHeaderFixedBytes)) {
      co_return std::nullopt;
    }
    if (const ProxyHeader parsed = ParseProxyHeader(header); parsed.valid) {
      co_return parsed.source.known ? parsed.source : PeerOf(socket);
    }
  }
  observer->ConnectionEnded(ConnectionEnd::kBadProxyHeader);
  co_return std::nullopt;
}

asio::awaitable<void> Serve(tcp::socket socket, Worker worker, ListenerOptions options, Slot slot) {
  (void)slot;  // held until the connection ends
  const Clock::time_point deadline = Clock::now() + options.limits.handshake_timeout;
  PeerAddress peer = PeerOf(socket);
  if (options.proxy_protocol) {
    std::optional<PeerAddress> told;
    {
      HandshakeDeadline handshake(socket.get_executor(), deadline, options.observer, [&socket] {
        boost::system::error_code ignored;
        socket.close(ignored);
      });
      told = co_await ReadProxyHeader(socket, options.observer);
    }
    if (!told) {
      boost::system::error_code ignored;
      socket.close(ignored);
      co_return;
    }
    peer = *told;
  }
  std::unique_ptr<ByteStream> stream;
  TlsStream* tls = nullptr;
  if (options.tls) {
    auto owned = std::make_unique<TlsStream>(std::move(socket), *options.tls);
    tls = owned.get();
    stream = std::move(owned);
  } else {
    stream = std::make_unique<TcpStream>(std::move(socket));
  }
  std::string initial;
  {
    HandshakeDeadline handshake(stream->executor(), deadline, options.observer,
                                [s = stream.get()] { s->Close(); });
    if (tls != nullptr && !co_await tls->Handshake()) {
      stream->Close();
      co_return;
    }
    char buf[64];
    // With ALPN the protocol is already known; the preface is still checked below for h2.
    while (stream->alpn() != "http/1.1") {
      const size_t have = std::min(initial.size(), kHttp2Preface.size());
      if (std::string_view(initial).substr(0, have) != kHttp2Preface.substr(0, have)) {
        break;  // diverged from the preface: HTTP/1.1
      }
      if (initial.size() >= kHttp2Preface.size()) {
        break;  // full preface
      }
      boost::system::error_code ec;
      const size_t n = co_await stream->ReadSome(asio::buffer(buf), ec);
      if (ec) {
        stream->Close();
        co_return;
      }
      initial.append(buf, n);
    }
  }
  if (initial.starts_with(kHttp2Preface)) {
    auto conn = std::make_shared<http2::Connection>(
        std::move(stream), *worker.factory,
        http2::Options{.max_concurrent_streams = options.max_http2_streams,
                       .limits = options.limits,
                       .first_request_deadline = deadline,
                       .observer = options.observer,
                       .peer = peer});
    co_await RunTracked(std::move(conn), *worker.connections, std::move(initial));
  } else {
    auto conn = std::make_shared<http1::Connection>(
        std::move(stream), *worker.factory,
        http1::Options{.max_body_bytes = options.max_http1_body_bytes,
                       .limits = options.limits,
                       .first_request_deadline = deadline,
                       .observer = options.observer,
                       .peer = peer});
    co_await RunTracked(std::move(conn), *worker.connections, std::move(initial));
  }
}

}  // namespace

Result<std::unique_ptr<Listener>> Listener::Create(asio::io_context& accept_io,
                                                   std::vector<Worker> workers,
                                                   const std::string& host, uint16_t port,
                                                   ListenerOptions options) {
  const std::string where =
      (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" + std::to_string(port);
  boost::system::error_code ec;
  const auto address = asio::ip::make_address(host, ec);
  if (ec) {
    return Unavailable("cannot bind " + where + " (not a numeric address)");
  }
  tcp::acceptor acceptor(accept_io);
  const tcp::endpoint endpoint(address, port);
  acceptor.open(endpoint.protocol(), ec);
  if (!ec) {
    acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  }
  if (!ec) {
    acceptor.bind(endpoint, ec);
  }
  if (!ec) {
    acceptor.listen(asio::socket_base::max_listen_connections, ec);
  }
  if (ec) {
    return Unavailable("cannot bind " + where + " (" + ec.message() + ")");
  }
  auto listener =
      std::unique_ptr<Listener>(new Listener(std::move(acceptor), std::move(workers), options));
  listener->port_ = listener->acceptor_.local_endpoint().port();
  return listener;
}

Listener::Listener(tcp::acceptor acceptor, std::vector<Worker> workers, ListenerOptions options)
    : acceptor_(std::move(acceptor)),
      backoff_(acceptor_.get_executor()),
      workers_(std::move(workers)),
      options_(std::move(options)),
      observer_(options_.observer != nullptr ? options_.observer : &null_observer_),
      open_connections_(std::make_shared<std::atomic<uint64_t>>(0)) {
  options_.observer = observer_;
}

void Listener::Start() { asio::co_spawn(acceptor_.get_executor(), AcceptLoop(), asio::detached); }

asio::awaitable<void> Listener::AcceptLoop() {
  auto delay = kAcceptBackoffMin;
  while (acceptor_.is_open()) {
    Worker& worker = workers_[next_worker_];
    next_worker_ = (next_worker_ + 1) % workers_.size();
    boost::system::error_code ec;
    tcp::socket socket =
        co_await acceptor_.async_accept(*worker.io, asio::redirect_error(asio::use_awaitable, ec));
    if (!ec) {
      delay = kAcceptBackoffMin;
      Admit(std::move(socket), worker);
      continue;
    }
    if (ec == asio::error::operation_aborted || !acceptor_.is_open()) {
      co_return;
    }
    if (IsPeerError(ec)) {
      continue;  // that connection is gone; the next one may be fine
    }
    // Out of descriptors or memory, or an error nobody expects: retrying at once would fail
    // the same way, thousands of times a second.
    if (const std::optional<AcceptFailure> failure = ResourceFailure(ec)) {
      ReportAcceptFailure(*failure);
    }
    backoff_.expires_after(delay);
    co_await backoff_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    delay = std::min<std::chrono::milliseconds>(delay * 3 / 2, kAcceptBackoffMax);
  }
}

void Listener::ReportAcceptFailure(AcceptFailure failure) {
  observer_->AcceptFailed(failure);
  ++unreported_failures_[static_cast<size_t>(failure)];
  const Clock::time_point now = Clock::now();
  if (failure_reported_ && now - last_failure_report_ < kAcceptReportInterval) {
    return;
  }
  failure_reported_ = true;
  last_failure_report_ = now;
  for (size_t i = 0; i < unreported_failures_.size(); ++i) {
    if (unreported_failures_[i] > 0) {
      observer_->AcceptFailing(static_cast<AcceptFailure>(i), unreported_failures_[i]);
      unreported_failures_[i] = 0;
    }
  }
}

void Listener::Admit(tcp::socket socket, Worker& worker) {
  // implements: issue 28 (5), server.max_connections. Refused by closing it at once: nothing is
  // read, so a refusal costs no TLS handshake and no buffer, and the client sees the connection
  // end before any request (gRPC clients report UNAVAILABLE and retry with backoff, a balancer
  // tries another instance).
  if (open_connections_->load(std::memory_order_relaxed) >= options_.max_connections) {
    boost::system::error_code ignored;
    socket.close(ignored);
    observer_->ConnectionEnded(ConnectionEnd::kRefused);
    return;
  }
  asio::co_spawn(*worker.io,
                 Serve(std::move(socket), worker, options_, Slot(open_connections_, observer_)),
                 asio::detached);
}

void Listener::StopAccepting() {
  boost::system::error_code ignored;
  acceptor_.close(ignored);
  backoff_.cancel();
}

void Listener::NotifyShutdown() {
  for (auto& worker : workers_) {
    asio::post(*worker.io, [set = worker.connections] { set->NotifyShutdown(); });
  }
}

void Listener::CloseAll() {
  asio::post(acceptor_.get_executor(), [this] { StopAccepting(); });
  for (auto& worker : workers_) {
    asio::post(*worker.io, [set = worker.connections] { set->CloseAll(); });
  }
}

}  // namespace xb::net
