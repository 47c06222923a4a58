// How a stream session ends when its delivery fails (fanout/stream_session.h): the statuses and
// reasons its round-robin waves, its XIP-83 waves and its live rows share.
#pragma once

#include "fanout/registry.h"
#include "store/store.h"
#include "telemetry/metrics.h"

namespace xb::fanout {

inline Ending DatabaseFailure() {
  return Ending{Status(StatusCode::kUnavailable, "stream history could not be read; reconnect"),
                telemetry::StreamEndReason::kDatabase};
}

// A live row whose second encoding cannot be built: as a catch-up row that does not encode.
inline Ending Undecodable(telemetry::Metrics& metrics) {
  metrics.db().errors.Inc(telemetry::DbErrorKind::kInvariant);
  return DatabaseFailure();
}

// A catch-up read that failed; an invariant failure is counted.
inline Ending ReadFailure(const store::StoreError& error, telemetry::Metrics& metrics) {
  if (error.kind == store::ErrorKind::kInvariant) {
    metrics.db().errors.Inc(telemetry::DbErrorKind::kInvariant);
  }
  return DatabaseFailure();
}

inline Ending TooLarge() {
  return Ending{
      Status(StatusCode::kResourceExhausted, "a stored envelope does not fit in a stream frame"),
      telemetry::StreamEndReason::kCapacity};
}

inline Ending Backpressure() {
  return Ending{Status(StatusCode::kResourceExhausted,
                       "the stream's output is full: the client is not reading"),
                telemetry::StreamEndReason::kBackpressure};
}

}  // namespace xb::fanout
