// The fixed rejection vocabulary of AUTH section 6.1 (AUTH-014): each rejection is one reason word
// (the label of xmtp_auth_rejections_total), one gRPC code and one exact status message. Nothing
// here ever carries a part of the token, a claim or a key id (AUTH-027).
#pragma once

#include "base/status.h"
#include "telemetry/vocabulary.h"

namespace xb::auth {

// One row of the AUTH 6.1 table. `malformed` has two messages, hence two rows.
enum class Rejection : uint8_t {
  kMissing,         // missing bearer token
  kNotBearer,       // malformed: authorization header is not a bearer token
  kNotJwt,          // malformed: token is not a supported JWT
  kUnsupportedAlg,  // token is not a supported JWT
  kUntrusted,       // token signature is not trusted
  kExpired,
  kNotYetValid,
  kAudience,
  kIssuer,
  kScope,  // PERMISSION_DENIED
};

telemetry::AuthRejectionReason ReasonOf(Rejection rejection);

// The gRPC status a rejected request is answered with: UNAUTHENTICATED with the fixed message, or
// PERMISSION_DENIED for kScope.
Status StatusOf(Rejection rejection);

}  // namespace xb::auth
