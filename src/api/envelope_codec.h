// Store rows to wire messages (API-212): EnvelopeMeta and ServerEnvelope.
#pragma once

#include "store/store.h"
#include "xmtp/backend/v1/backend.pb.h"

namespace xb::api {

void ToWire(const store::EnvelopeMeta& meta, xmtp::backend::v1::EnvelopeMeta* out);

// The stored payload is our own encoding of a ClientEnvelope (API-211); it always parses. A row
// that does not is an invariant violation: false.
bool ToWire(const store::StoredEnvelope& row, xmtp::backend::v1::ServerEnvelope* out);

}  // namespace xb::api
