// Status and Result<T>: expected failures as values. Codes are the 17 gRPC status codes, so the
// rpc layer maps them one to one onto grpc-status.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "base/expected.h"

namespace xb {

enum class StatusCode : int {
  kOk = 0,
  kCancelled = 1,
  kUnknown = 2,
  kInvalidArgument = 3,
  kDeadlineExceeded = 4,
  kNotFound = 5,
  kAlreadyExists = 6,
  kPermissionDenied = 7,
  kResourceExhausted = 8,
  kFailedPrecondition = 9,
  kAborted = 10,
  kOutOfRange = 11,
  kUnimplemented = 12,
  kInternal = 13,
  kUnavailable = 14,
  kDataLoss = 15,
  kUnauthenticated = 16,
};

inline constexpr int kStatusCodeCount = 17;

// UpperCamelCase name used as the grpc_code label value (DECISIONS.md).
std::string_view StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // Serialized google.rpc.Status for grpc-status-details-bin; empty when there is no detail.
  const std::string& details() const { return details_; }
  Status& set_details(std::string details) {
    details_ = std::move(details);
    return *this;
  }

  std::string ToString() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
  std::string details_;
};

inline Status InvalidArgument(std::string m) {
  return Status(StatusCode::kInvalidArgument, std::move(m));
}
inline Status Internal(std::string m) { return Status(StatusCode::kInternal, std::move(m)); }
inline Status Unavailable(std::string m) { return Status(StatusCode::kUnavailable, std::move(m)); }
inline Status NotFound(std::string m) { return Status(StatusCode::kNotFound, std::move(m)); }
inline Status OutOfRange(std::string m) { return Status(StatusCode::kOutOfRange, std::move(m)); }
inline Status Unimplemented(std::string m) {
  return Status(StatusCode::kUnimplemented, std::move(m));
}

// A T or the Status saying why not (base/expected.h).
template <typename T>
using Result = Expected<T, Status>;

}  // namespace xb

#define XB_CONCAT_INNER(a, b) a##b
#define XB_CONCAT(a, b) XB_CONCAT_INNER(a, b)

#define XB_RETURN_IF_ERROR(expr)         \
  do {                                   \
    ::xb::Status xb_status_tmp = (expr); \
    if (!xb_status_tmp.ok()) {           \
      return xb_status_tmp;              \
    }                                    \
  } while (0)

#define XB_ASSIGN_OR_RETURN(lhs, expr)               \
  auto XB_CONCAT(xb_result_, __LINE__) = (expr);     \
  if (!XB_CONCAT(xb_result_, __LINE__).ok()) {       \
    return XB_CONCAT(xb_result_, __LINE__).status(); \
  }                                                  \
  lhs = std::move(XB_CONCAT(xb_result_, __LINE__)).value()

// In a coroutine returning awaitable<Result<T>> or awaitable<Status>.
#define XB_RETURN_IF_ERROR_CO(expr)      \
  do {                                   \
    ::xb::Status xb_status_tmp = (expr); \
    if (!xb_status_tmp.ok()) {           \
      co_return xb_status_tmp;           \
    }                                    \
  } while (0)
