// A row on its way to streams: read once (by the tailer or a catch-up fetch), encoded once as a
// ServerEnvelope, shared immutably by every session that delivers it (ARC-073).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "store/store.h"

namespace xb::fanout {

struct DeliveryRow {
  int64_t sequence_id = 0;
  std::string topic;
  std::string encoded;  // the ServerEnvelope wire bytes
};

using RowPtr = std::shared_ptr<const DeliveryRow>;

// Appends a stored row's ServerEnvelope bytes to `encoded`; false when the row breaks an
// invariant. Supplied by api/ (the wire schema lives there); thread-safe. Takes the row in place
// (a catch-up wave encodes straight from the engine's buffers); a StoredEnvelope is passed as
// StoredEnvelopeView::Of(row).
using RowEncoder = std::function<bool(const store::StoredEnvelopeView& row, std::string* encoded)>;

}  // namespace xb::fanout
