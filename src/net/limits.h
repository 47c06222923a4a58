// Connection limits of the gRPC port (DECISIONS.md, Connection limits: our extension keys, see
// docs/configuration.md for the reasoning behind each default) and the Observer that reports
// what they did. net/ depends only on base/, so server/ implements Observer over the metric
// registry and the logger (server/net_observer.h).
#pragma once

#include <chrono>
#include <cstdint>

namespace xb::net {

struct ConnectionLimits {
  // From accept until the TLS handshake, the protocol preface and the first request head are in
  // (server.handshake_timeout_ms).
  std::chrono::milliseconds handshake_timeout{10000};
  // An HTTP/1.1 request head, from its first byte (server.header_read_timeout_ms).
  std::chrono::milliseconds header_read_timeout{10000};
  // HTTP/2 with no open stream, HTTP/1.1 between requests (server.idle_timeout_ms).
  std::chrono::milliseconds idle_timeout{900000};
  // One request's header list: HTTP/2 SETTINGS_MAX_HEADER_LIST_SIZE (RFC 9113 6.5.2: names and
  // values plus 32 bytes per field), and the HTTP/1.1 request head (limits.max_header_list_bytes).
  uint32_t max_header_list_bytes = 32768;
  // HTTP/2 frames that carry no request or response (limits.max_control_frames_per_second and
  // limits.max_control_frame_burst).
  uint32_t max_control_frames_per_second = 100;
  uint32_t max_control_frame_burst = 1000;
};

// Why accept() failed with the process or the system out of a resource.
enum class AcceptFailure : uint8_t {
  kDescriptors,  // EMFILE, ENFILE: the open-file limit
  kMemory,       // ENOBUFS, ENOMEM
};

// Why the server closed or refused a connection under its limits.
enum class ConnectionEnd : uint8_t {
  kRefused,            // over server.max_connections: closed as soon as accepted
  kHandshakeTimeout,   // handshake_timeout passed before the first request head
  kHeaderReadTimeout,  // an HTTP/1.1 request head took longer than header_read_timeout
  kIdleTimeout,        // no request for idle_timeout
  kControlFrameFlood,  // HTTP/2 control frames over their rate: GOAWAY ENHANCE_YOUR_CALM
  kBadProxyHeader,     // server.proxy_protocol: the connection did not begin with a valid header
};

// Threading: AcceptFailed and AcceptFailing are called on the listener's executor, the others on
// any worker's executor, concurrently. Implementations must not block; nothing suspends. It must
// outlive the listener and every worker io_context (a connection reports its end when its
// coroutine frame is destroyed, which can be in the io_context's destructor).
class Observer {
 public:
  virtual ~Observer() = default;
  // One failed accept().
  virtual void AcceptFailed(AcceptFailure failure) = 0;
  // Accept keeps failing: `count` failures since the previous call. At most once per interval;
  // for a warning, never a line per failure.
  virtual void AcceptFailing(AcceptFailure failure, uint64_t count) = 0;
  // A connection was admitted (+1) or has ended (-1).
  virtual void ConnectionsOpen(int delta) = 0;
  virtual void ConnectionEnded(ConnectionEnd reason) = 0;
};

// Reports nothing: for tests and tools without telemetry.
class NullObserver final : public Observer {
 public:
  void AcceptFailed(AcceptFailure) override {}
  void AcceptFailing(AcceptFailure, uint64_t) override {}
  void ConnectionsOpen(int) override {}
  void ConnectionEnded(ConnectionEnd) override {}
};

}  // namespace xb::net
