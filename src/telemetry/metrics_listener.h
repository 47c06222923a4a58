// MetricsListener: the HTTP/1.1 listener on telemetry.metrics_listen that serves the metrics
// exposition at GET /metrics (DECISIONS.md, OPS-016). Any other path is 404, another method on
// /metrics is 405. Connections are keep-alive; a request head is bounded (8 KiB) and a request
// body is refused above 4 KiB; an idle or slow connection is closed after a read timeout (30 s);
// at most 64 connections are open at once, further ones are closed on accept.
//
// Each connection is a C++20 coroutine on the listener's strand of the given io_context; the
// io_context may be run by any number of threads. Nothing throws: Asio calls use error-code
// tokens.
//
// Lifetimes: `metrics` must outlive the io_context's processing of this listener's work (in
// practice: Metrics is created before the io_context threads start and destroyed after they are
// joined). The listener must be destroyed before `io`; its coroutines own their shared state, so
// destroying the listener while connections are open is safe.
#pragma once

#include <boost/asio/io_context.hpp>
#include <cstdint>
#include <memory>
#include <string_view>

#include "base/status.h"
#include "telemetry/metrics.h"

namespace xb::telemetry {

class MetricsListener {
 public:
  // Binds host:port and starts accepting on `io` (the accept loop runs once `io` runs). `host` is
  // an IP literal ("0.0.0.0", "::1", "[::1]") or a name resolved now, synchronously; port 0 picks
  // a free port (see port()). Errors: kUnavailable when the address cannot be resolved or bound,
  // with a message naming "host:port" (OPS-022: the backend refuses to start naming it).
  static Result<std::unique_ptr<MetricsListener>> Create(boost::asio::io_context& io,
                                                         std::string_view host, uint16_t port,
                                                         const Metrics& metrics);

  // Calls Stop().
  ~MetricsListener();
  MetricsListener(const MetricsListener&) = delete;
  MetricsListener& operator=(const MetricsListener&) = delete;

  // The bound port (the chosen one when created with port 0).
  uint16_t port() const { return port_; }

  // Closes the acceptor and every open connection; a response being written is cut. Returns at
  // once: the closing runs on the listener's strand, so it takes effect when `io` next runs it.
  // Idempotent; callable from any thread.
  void Stop();

  // The state the acceptor and connection coroutines share (defined in the .cc). Opaque; public
  // only so the coroutines, which are free functions, can name it.
  struct State;

 private:
  MetricsListener(std::shared_ptr<State> state, uint16_t port);

  const std::shared_ptr<State> state_;
  const uint16_t port_;
};

}  // namespace xb::telemetry
