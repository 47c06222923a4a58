// net::Observer over the metric registry and the logger: the connection limits' extension
// metrics (xmtp_net_*, docs/telemetry.md) and the accept-failure warning.
//
// Thread-safety: as net::Observer (any thread; lock-free metrics; the logger is thread-safe).
// Declared in server::Run before every io_context, so it outlives every connection.
#pragma once

#include "net/limits.h"
#include "telemetry/logger.h"
#include "telemetry/metrics.h"

namespace xb::server {

class NetObserver final : public net::Observer {
 public:
  NetObserver(telemetry::Metrics& metrics, telemetry::Logger& logger)
      : metrics_(metrics), logger_(logger) {}

  void AcceptFailed(net::AcceptFailure failure) override;
  void AcceptFailing(net::AcceptFailure failure, uint64_t count) override;
  void ConnectionsOpen(int delta) override;
  void ConnectionEnded(net::ConnectionEnd reason) override;

 private:
  telemetry::Metrics& metrics_;
  telemetry::Logger& logger_;
};

}  // namespace xb::server
