// Store rows to wire messages (API-212): EnvelopeMeta and ServerEnvelope.
#pragma once

#include "store/store.h"
#include "xmtp/backend/v1/backend.pb.h"

namespace xb::api {

void ToWire(const store::EnvelopeMeta& meta, xmtp::backend::v1::EnvelopeMeta* out);

// The stored payload is our own encoding of a ClientEnvelope (API-211); it always parses. A row
// that does not is an invariant violation: false.
bool ToWire(const store::StoredEnvelope& row, xmtp::backend::v1::ServerEnvelope* out);

// The ServerEnvelope wire bytes of a stored row, without a parse of the payload: the stored bytes
// are already our canonical ClientEnvelope encoding (API-211), so they are field 2 verbatim.
// Streams encode each row once and share the bytes (fanout::RowEncoder). Appends to `out`.
// False (nothing appended) only for a topic longer than the store allows, an invariant violation.
// The row is read in place (StoredEnvelopeView::Of for a StoredEnvelope).
bool EncodeServerEnvelope(const store::StoredEnvelopeView& row, std::string* out);

// The bytes of EncodeServerEnvelope's output before the payload, written to `head` (room for
// kMaxServerEnvelopeHead bytes); returns their count, 0 where EncodeServerEnvelope fails. The
// whole encoding is these bytes followed by row.payload.
inline constexpr size_t kMaxServerEnvelopeHead = 512;
size_t WriteServerEnvelopeHead(const store::StoredEnvelopeView& row, char* head);

}  // namespace xb::api
