#include "server/net_observer.h"

namespace xb::server {
namespace {

telemetry::AcceptFailureReason ReasonOf(net::AcceptFailure failure) {
  switch (failure) {
    case net::AcceptFailure::kDescriptors:
      return telemetry::AcceptFailureReason::kDescriptors;
    case net::AcceptFailure::kMemory:
      return telemetry::AcceptFailureReason::kMemory;
  }
  return telemetry::AcceptFailureReason::kMemory;
}

telemetry::ConnectionCloseReason ReasonOf(net::ConnectionEnd end) {
  switch (end) {
    case net::ConnectionEnd::kRefused:
      return telemetry::ConnectionCloseReason::kRefused;
    case net::ConnectionEnd::kHandshakeTimeout:
      return telemetry::ConnectionCloseReason::kHandshakeTimeout;
    case net::ConnectionEnd::kHeaderReadTimeout:
      return telemetry::ConnectionCloseReason::kHeaderReadTimeout;
    case net::ConnectionEnd::kIdleTimeout:
      return telemetry::ConnectionCloseReason::kIdleTimeout;
    case net::ConnectionEnd::kControlFrameFlood:
      return telemetry::ConnectionCloseReason::kControlFrameFlood;
    case net::ConnectionEnd::kBadProxyHeader:
      return telemetry::ConnectionCloseReason::kBadProxyHeader;
  }
  return telemetry::ConnectionCloseReason::kRefused;
}

}  // namespace

void NetObserver::AcceptFailed(net::AcceptFailure failure) {
  metrics_.net().accept_failures.Inc(ReasonOf(failure));
}

// A fixed message and the count: nothing of any connection (OPS-014).
void NetObserver::AcceptFailing(net::AcceptFailure failure, uint64_t count) {
  switch (failure) {
    case net::AcceptFailure::kDescriptors:
      logger_.Warn("accept failing: open-file limit reached", {telemetry::Field::Count(count)});
      return;
    case net::AcceptFailure::kMemory:
      logger_.Warn("accept failing: out of memory", {telemetry::Field::Count(count)});
      return;
  }
}

void NetObserver::ConnectionsOpen(int delta) { metrics_.net().connections.Add(delta); }

void NetObserver::ConnectionEnded(net::ConnectionEnd reason) {
  metrics_.net().connections_closed.Inc(ReasonOf(reason));
}

}  // namespace xb::server
