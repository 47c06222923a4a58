// Maps a typed store error to the gRPC status of STORE.md 3.2 and counts xmtp_db_errors_total.
#pragma once

#include "base/status.h"
#include "store/store.h"
#include "telemetry/metrics.h"

namespace xb::api {

Status StoreErrorStatus(const store::StoreError& error, telemetry::Metrics& metrics);

}  // namespace xb::api
