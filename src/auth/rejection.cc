#include "auth/rejection.h"

namespace xb::auth {

using telemetry::AuthRejectionReason;

// implements: AUTH-014 (reason words, codes and exact messages)
AuthRejectionReason ReasonOf(Rejection rejection) {
  switch (rejection) {
    case Rejection::kMissing:
      return AuthRejectionReason::kMissing;
    case Rejection::kNotBearer:
    case Rejection::kNotJwt:
      return AuthRejectionReason::kMalformed;
    case Rejection::kUnsupportedAlg:
      return AuthRejectionReason::kUnsupportedAlg;
    case Rejection::kUntrusted:
      return AuthRejectionReason::kUntrusted;
    case Rejection::kExpired:
      return AuthRejectionReason::kExpired;
    case Rejection::kNotYetValid:
      return AuthRejectionReason::kNotYetValid;
    case Rejection::kAudience:
      return AuthRejectionReason::kAudience;
    case Rejection::kIssuer:
      return AuthRejectionReason::kIssuer;
    case Rejection::kScope:
      return AuthRejectionReason::kScope;
  }
  return AuthRejectionReason::kMalformed;
}

Status StatusOf(Rejection rejection) {
  const auto unauthenticated = [](const char* message) {
    return Status(StatusCode::kUnauthenticated, message);
  };
  switch (rejection) {
    case Rejection::kMissing:
      return unauthenticated("missing bearer token");
    case Rejection::kNotBearer:
      return unauthenticated("authorization header is not a bearer token");
    case Rejection::kNotJwt:
    case Rejection::kUnsupportedAlg:
      return unauthenticated("token is not a supported JWT");
    case Rejection::kUntrusted:
      return unauthenticated("token signature is not trusted");
    case Rejection::kExpired:
      return unauthenticated("token has expired");
    case Rejection::kNotYetValid:
      return unauthenticated("token is not yet valid");
    case Rejection::kAudience:
      return unauthenticated("token audience is not allowed");
    case Rejection::kIssuer:
      return unauthenticated("token issuer is not allowed");
    case Rejection::kScope:
      return Status(StatusCode::kPermissionDenied, "token is missing a required scope");
  }
  return unauthenticated("token is not a supported JWT");
}

}  // namespace xb::auth
