// What the xmtp.backend.v1 handlers share: the store, the DB pool that runs its blocking calls,
// the metrics registry and the enforced limits. Const after startup; outlives every call.
#pragma once

#include "api/cpu_pool.h"
#include "config/config.h"
#include "fanout/fetch_permits.h"
#include "fanout/registry.h"
#include "store/db_pool.h"
#include "store/store.h"
#include "telemetry/metrics.h"
#include "telemetry/tracer.h"

namespace xb::api {

struct ApiContext {
  store::Store* store = nullptr;
  store::DbPool* db = nullptr;
  // Signature checks (key packages, identity updates) run here, never on an I/O thread.
  CpuPool* cpu = nullptr;
  telemetry::Metrics* metrics = nullptr;
  config::LimitsConfig limits;
  config::RetentionConfig retention;
  uint64_t max_publish_duration_ms = 10000;
  // Streams (issue 4): admission and dispatch, catch-up read permits, streams.* settings.
  fanout::Registry* registry = nullptr;
  fanout::FetchPermits* fetch_permits = nullptr;
  config::StreamsConfig streams;
  // Spans of the span catalogue below the request span (publish stages, stream.*); nullptr: none.
  telemetry::Tracer* tracer = nullptr;
};

}  // namespace xb::api
