// Maps a typed store error to the gRPC status of STORE.md 3.2 and counts xmtp_db_errors_total.
// An error that fails the request UNAVAILABLE or INTERNAL is also counted by its cause class in
// xmtp_db_failures_total{cause} and logged by StoreFailureLog: one line per cause per interval,
// so that an operator learns of a full disk or a lost database without a line per request.
#pragma once

#include <array>
#include <chrono>
#include <functional>
#include <memory>

#include "api/context.h"
#include "base/status.h"
#include "store/store.h"
#include "telemetry/line_budget.h"
#include "telemetry/logger.h"
#include "telemetry/metrics.h"
#include "telemetry/vocabulary.h"

namespace xb::api {

// The cause label of a store error (store::CauseOf; unclassified: kOther).
telemetry::DbFailureCause FailureCause(const store::StoreError& error);

// The status of `error`, counted in ctx.metrics and, when it is UNAVAILABLE or INTERNAL, reported
// to ctx.store_failures (when set).
Status StoreErrorStatus(const store::StoreError& error, const ApiContext& ctx);

// A stored envelope that does not decode: INTERNAL, counted and reported as an invariant failure.
Status UndecodableEnvelopeStatus(const ApiContext& ctx);

// The store failure log: for each cause class, the first failure of an interval writes one line
// (warn for UNAVAILABLE, error for INTERNAL) with a fixed message naming the cause, the cause word
// (reason), the number of failures of that cause since its previous line, this one included
// (count), and the store's error (plain words naming the operation, never SQL, a path, a value or
// request data: STORE.md, OPS-014). Later failures of that cause within the interval are counted
// in xmtp_log_lines_suppressed_total{line="store_failed"} and in the next line's count.
//
// Thread-safety: Report may be called from any thread; it is lock-free up to the log write.
class StoreFailureLog {
 public:
  using Clock = std::chrono::steady_clock;
  struct Options {
    // Per cause class.
    telemetry::LineBudget::Options budget{.lines_per_interval = 1,
                                          .interval = std::chrono::seconds(10)};
    std::function<Clock::time_point()> now;  // default: Clock::now
  };

  // `logger` and `metrics` outlive this.
  StoreFailureLog(telemetry::Logger& logger, telemetry::Metrics& metrics, Options options);

  // One failure of `error` that failed a request with `code` (UNAVAILABLE or INTERNAL).
  void Report(const store::StoreError& error, StatusCode code);

 private:
  static constexpr size_t kCauses =
      static_cast<size_t>(telemetry::Vocabulary<telemetry::DbFailureCause>::kLast) + 1;

  telemetry::Logger& logger_;
  telemetry::Metrics& metrics_;
  const std::function<Clock::time_point()> now_;
  std::array<std::unique_ptr<telemetry::LineBudget>, kCauses> budgets_;  // const after construction
};

}  // namespace xb::api
