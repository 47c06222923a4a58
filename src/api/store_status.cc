#include "api/store_status.h"

#include <utility>

namespace xb::api {
namespace {

using telemetry::DbFailureCause;

// The line of each cause: a fixed message naming the class of cause (issue 28: a full disk was
// answered UNAVAILABLE and never logged).
telemetry::Literal CauseMessage(DbFailureCause cause) {
  switch (cause) {
    case DbFailureCause::kDiskFull:
      return "store failed: disk full";
    case DbFailureCause::kIoError:
      return "store failed: I/O error";
    case DbFailureCause::kOutOfMemory:
      return "store failed: out of memory";
    case DbFailureCause::kResources:
      return "store failed: out of resources";
    case DbFailureCause::kCannotOpen:
      return "store failed: cannot open the database";
    case DbFailureCause::kReadOnly:
      return "store failed: read-only or not permitted";
    case DbFailureCause::kConnection:
      return "store failed: connection lost";
    case DbFailureCause::kPoolTimeout:
      return "store failed: no connection available in time";
    case DbFailureCause::kTimeout:
      return "store failed: timed out";
    case DbFailureCause::kCorrupt:
      return "store failed: database corrupted";
    case DbFailureCause::kInvariant:
      return "store failed: a stored value violates an invariant";
    case DbFailureCause::kOverflow:
      return "store failed: expiry overflow";
    case DbFailureCause::kOther:
      break;
  }
  return "store failed: database error";
}

// The request failed UNAVAILABLE or INTERNAL: counted by cause and reported.
Status Failed(Status status, const store::StoreError& error, const ApiContext& ctx) {
  ctx.metrics->db().failures.Inc(FailureCause(error));
  if (ctx.store_failures != nullptr) {
    ctx.store_failures->Report(error, status.code());
  }
  return status;
}

}  // namespace

DbFailureCause FailureCause(const store::StoreError& error) {
  using store::ErrorCause;
  switch (store::CauseOf(error)) {
    case ErrorCause::kDiskFull:
      return DbFailureCause::kDiskFull;
    case ErrorCause::kIoError:
      return DbFailureCause::kIoError;
    case ErrorCause::kOutOfMemory:
      return DbFailureCause::kOutOfMemory;
    case ErrorCause::kResources:
      return DbFailureCause::kResources;
    case ErrorCause::kCannotOpen:
      return DbFailureCause::kCannotOpen;
    case ErrorCause::kReadOnly:
      return DbFailureCause::kReadOnly;
    case ErrorCause::kConnection:
      return DbFailureCause::kConnection;
    case ErrorCause::kPoolTimeout:
      return DbFailureCause::kPoolTimeout;
    case ErrorCause::kTimeout:
      return DbFailureCause::kTimeout;
    case ErrorCause::kCorrupt:
      return DbFailureCause::kCorrupt;
    case ErrorCause::kInvariant:
      return DbFailureCause::kInvariant;
    case ErrorCause::kOverflow:
      return DbFailureCause::kOverflow;
    case ErrorCause::kUnclassified:
      break;
  }
  return DbFailureCause::kOther;
}

Status StoreErrorStatus(const store::StoreError& error, const ApiContext& ctx) {
  using store::ErrorKind;
  auto& errors = ctx.metrics->db().errors;
  switch (error.kind) {
    case ErrorKind::kTimeout:
      errors.Inc(telemetry::DbErrorKind::kTimeout);
      return Status(StatusCode::kDeadlineExceeded, "the store did not answer in time");
    case ErrorKind::kPoolTimeout:
      errors.Inc(telemetry::DbErrorKind::kTimeout);
      return Failed(Unavailable("the store is busy"), error, ctx);
    case ErrorKind::kConnection:
      errors.Inc(telemetry::DbErrorKind::kConnection);
      return Failed(Unavailable("the store is unavailable"), error, ctx);
    case ErrorKind::kInvariant:
      errors.Inc(telemetry::DbErrorKind::kInvariant);
      return Failed(Internal("a stored value violates an invariant"), error, ctx);
    case ErrorKind::kStaleHistory:
      return Status(StatusCode::kAborted, "the identity history changed during validation");
    case ErrorKind::kAdmission:
      return error.admission;
    case ErrorKind::kOverflow:
      // implements: OPS-020 (publish time): nothing stored.
      return Failed(Internal("the envelope expiry does not fit a 64-bit timestamp"), error, ctx);
    case ErrorKind::kOther:
      errors.Inc(telemetry::DbErrorKind::kOther);
      return Failed(Unavailable("the store is unavailable"), error, ctx);
    case ErrorKind::kQueueFull:
      // The database did not fail: this server has more store calls waiting than it admits.
      return Unavailable("the database queue is full; retry later");
  }
  return Internal("unknown store error");
}

Status UndecodableEnvelopeStatus(const ApiContext& ctx) {
  ctx.metrics->db().errors.Inc(telemetry::DbErrorKind::kInvariant);
  store::StoreError error;
  error.kind = store::ErrorKind::kInvariant;
  error.message = "read: a stored envelope does not decode";
  return Failed(Internal("a stored envelope does not decode"), error, ctx);
}

StoreFailureLog::StoreFailureLog(telemetry::Logger& logger, telemetry::Metrics& metrics,
                                 Options options)
    : logger_(logger),
      metrics_(metrics),
      now_(options.now ? std::move(options.now) : [] { return Clock::now(); }) {
  for (auto& budget : budgets_) {
    budget = std::make_unique<telemetry::LineBudget>(options.budget);
  }
}

void StoreFailureLog::Report(const store::StoreError& error, StatusCode code) {
  const telemetry::LogLevel level =
      code == StatusCode::kInternal ? telemetry::LogLevel::kError : telemetry::LogLevel::kWarn;
  if (!logger_.Enabled(level)) {
    return;  // nothing would be written, so nothing is suppressed
  }
  const DbFailureCause cause = FailureCause(error);
  telemetry::LineBudget& budget = *budgets_[static_cast<size_t>(cause)];
  if (!budget.Admit(now_())) {
    metrics_.log().suppressed.Inc(telemetry::SuppressedLine::kStoreFailed);
    return;
  }
  // The failures of this cause since its previous line: those suppressed, and this one.
  const uint64_t count = budget.TakeSuppressed() + 1;
  logger_.Log(level, CauseMessage(cause),
              {telemetry::Field::Reason(cause), telemetry::Field::Count(count),
               telemetry::Field::Error(Status(code, error.message))});
}

}  // namespace xb::api
