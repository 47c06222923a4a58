// What the xmtp.backend.v1 handlers share: the store, the DB pool that runs its blocking calls,
// the metrics registry and the enforced limits. Const after startup; outlives every call.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <functional>
#include <optional>

#include "api/cpu_pool.h"
#include "config/config.h"
#include "fanout/streams.h"
#include "store/db_pool.h"
#include "store/store.h"
#include "telemetry/metrics.h"
#include "telemetry/tracer.h"

namespace xb::attach {
class UploadSigner;
}

namespace xb::api {

class Quotas;
class ScwVerifier;
class StoreFailureLog;

struct ApiContext {
  store::Store* store = nullptr;
  store::DbPool* db = nullptr;
  // Signature checks (key packages, identity updates) run here, never on an I/O thread.
  CpuPool* cpu = nullptr;
  // Smart-contract-wallet verdicts over the configured chains (identity updates, IdentityService).
  ScwVerifier* scw = nullptr;
  telemetry::Metrics* metrics = nullptr;
  config::LimitsConfig limits;
  config::RetentionConfig retention;
  uint64_t max_publish_duration_ms = 10000;
  // Streams (issue 4): admission, dispatch and catch-up resources (fanout/streams.h), and the
  // streams.* settings the wire protocol uses (keepalive, pong wait).
  fanout::Streams* streams = nullptr;
  config::StreamsConfig stream_settings;
  // [push] (PUSH.md 12); nullopt: no push table, every Register FAILED_PRECONDITION (PUSH-210).
  std::optional<config::PushConfig> push;
  // [attachments] (ATTACH.md): the storage target's signer and the enforced upload ceiling;
  // nullptr without a storage target (CreateUpload row 1, UNIMPLEMENTED).
  attach::UploadSigner* uploads = nullptr;
  uint64_t max_upload_bytes = 0;
  // Per-caller quotas (issue 32, [quotas]); nullptr when none is configured.
  Quotas* quotas = nullptr;
  // Logs the cause of store errors that fail requests (api/store_status.h); nullptr: counted only.
  StoreFailureLog* store_failures = nullptr;
  // Spans of the span catalogue below the request span (publish stages, stream.*); nullptr: none.
  telemetry::Tracer* tracer = nullptr;
  // Test builds only (xmtp-backend-testing): awaited by Publish after identity updates were
  // validated and before the commit, so a test can hold two validated publishes (API-232).
  std::function<boost::asio::awaitable<void>()> before_identity_commit;
};

// A catalogue span under `parent`, or an inert one when the context has no tracer.
inline telemetry::Span StartSpan(const ApiContext& ctx, telemetry::Operation op,
                                 const telemetry::SpanContext& parent) {
  return ctx.tracer != nullptr ? ctx.tracer->Start(op, parent) : telemetry::Span();
}

}  // namespace xb::api
