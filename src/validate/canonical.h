// The backend's encoding of a ClientEnvelope (API.md 2.15, API-211): what is stored, returned and
// hashed. Copy the decoded value, discard unknown fields at every depth, serialize. Protobuf's C++
// serializer then gives exactly the 2.15 rules: fields in ascending number order, each once;
// implicit-presence scalars at their default omitted; proto3 `optional` and oneof members written
// whenever set, even at default; set sub-messages written even when empty; minimal varints;
// unknown enum numbers kept as integers; every bytes field copied verbatim. canonical_test.cc
// pins each rule.
//
// Pure functions of the decoded value; thread-safe; never suspend.
#pragma once

#include <cstddef>
#include <string>

#include "xmtp/backend/v1/backend.pb.h"

namespace xb::validate {

// The stored bytes of `envelope`.
std::string CanonicalEncoding(const xmtp::backend::v1::ClientEnvelope& envelope);

// In place: discards the unknown fields of `envelope` at every depth, then returns its encoding,
// which equals CanonicalEncoding of the original. For callers that keep the cleaned value.
std::string Canonicalize(xmtp::backend::v1::ClientEnvelope& envelope);

// CanonicalEncoding(envelope).size(), for the limits.max_envelope_bytes check (API.md 3.12),
// which is taken on the re-encoded envelope before it is parsed (API.md 3.4 processing order 2).
size_t CanonicalSize(const xmtp::backend::v1::ClientEnvelope& envelope);

// Length of the re-encoded publish request (the same rules applied to the whole request), for the
// limits.max_request_bytes check (API.md 3.4 processing order 1).
size_t CanonicalRequestSize(const xmtp::backend::v1::PublishRequest& request);

}  // namespace xb::validate
