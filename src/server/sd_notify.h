// systemd's readiness protocol (sd_notify(3)), written directly rather than linking libsystemd:
// one datagram of newline-separated KEY=VALUE assignments to the unix socket that systemd names
// in NOTIFY_SOCKET (a path, or an abstract-namespace name when it starts with '@'). Without
// NOTIFY_SOCKET (not started by systemd with Type=notify) there is no one to tell and nothing is
// sent. deploy/systemd/xmtp-backend.service relies on READY=1 and STOPPING=1.
// Threads: any; each Send opens, sends on and closes its own socket.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"

namespace xb::server {

class SdNotifier {
 public:
  // The socket named by NOTIFY_SOCKET in this process's environment; disabled when it is unset or
  // empty.
  static SdNotifier FromEnvironment();
  // A notifier for `socket` (NOTIFY_SOCKET's syntax); nullopt or "" = disabled.
  explicit SdNotifier(std::optional<std::string> socket);

  bool enabled() const { return socket_.has_value(); }

  // Sends `state` as one datagram. OK without sending when disabled. Errors (kInvalidArgument: a
  // name too long for sockaddr_un; kUnavailable: no listener, or the send failed) name neither the
  // socket nor the state. Does not block: a datagram to a full socket fails rather than waits.
  Status Send(std::string_view state) const;

 private:
  std::optional<std::string> socket_;
};

// The assignments for the start of a drain: STOPPING=1, and EXTEND_TIMEOUT_USEC= the drain
// deadline plus the 5 s OPS-008 gives the exit, so that a unit whose TimeoutStopSec= is shorter
// than the configured drain still waits for it.
std::string StoppingState(uint64_t max_drain_duration_ms);

}  // namespace xb::server
