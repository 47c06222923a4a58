#include "api/store_status.h"

namespace xb::api {

Status StoreErrorStatus(const store::StoreError& error, telemetry::Metrics& metrics) {
  using store::ErrorKind;
  auto& errors = metrics.db().errors;
  switch (error.kind) {
    case ErrorKind::kTimeout:
      errors.Inc(telemetry::DbErrorKind::kTimeout);
      return Status(StatusCode::kDeadlineExceeded, "the store did not answer in time");
    case ErrorKind::kPoolTimeout:
      errors.Inc(telemetry::DbErrorKind::kTimeout);
      return Unavailable("the store is busy");
    case ErrorKind::kConnection:
      errors.Inc(telemetry::DbErrorKind::kConnection);
      return Unavailable("the store is unavailable");
    case ErrorKind::kInvariant:
      errors.Inc(telemetry::DbErrorKind::kInvariant);
      return Internal("a stored value violates an invariant");
    case ErrorKind::kStaleHistory:
      return Status(StatusCode::kAborted, "the identity history changed during validation");
    case ErrorKind::kAdmission:
      return error.admission;
    case ErrorKind::kOverflow:
      // implements: OPS-020 (publish time): nothing stored.
      return Internal("the envelope expiry does not fit a 64-bit timestamp");
    case ErrorKind::kOther:
      errors.Inc(telemetry::DbErrorKind::kOther);
      return Unavailable("the store is unavailable");
  }
  return Internal("unknown store error");
}

}  // namespace xb::api
