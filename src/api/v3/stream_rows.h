// Rows as the V3 server streams send them (docs/v3-api.md 4.1, 4.2, G3): each row is one response
// message, an xmtp.mls.api.v1.GroupMessage (a row of a group topic, 0x00) or WelcomeMessage (a row
// of a Welcome topic, 0x01), the same bytes the V3 reads write for it (api/v3/rows.h).
//
// The fan-out shares each live row as a ServerEnvelope (fanout::DeliveryRow); a V3 session gets
// the V3 bytes from DeliveryRow::Transcoded(TranscodeStreamRow), which the first V3 session to
// deliver the row builds once, at wire level, for all (no message objects, no payload decode).
// Catch-up reads encode with EncodeStreamRow as they read.
//
// Pure functions; thread-safe; never suspend.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "fanout/delivery_row.h"
#include "store/store.h"

namespace xb::api::v3 {

// Appends the row's stream message to `out` (fanout::RowEncoder); false, appending nothing, for a
// row of any other topic kind or a payload not of its topic's kind (an invariant failure).
bool EncodeStreamRow(const store::StoredEnvelopeView& row, std::string* out);

// The same from the row's ServerEnvelope bytes (fanout::RowTranscoder).
bool TranscodeStreamRow(std::string_view server_envelope, std::string* out);

// fanout::RowWrap of MlsApi.Subscribe (XIP-83, docs/v3-api.md 4.3): a row as a SubscribeResponse of
// its own, v1.messages with the row in `group_messages` (a group topic) or `welcome_messages` (a
// Welcome topic) and `mutate_id` = `lane` (omitted for live rows, lane 0).
void WrapSubscribeRow(std::string_view topic, size_t row_bytes, uint64_t lane,
                      fanout::RowFraming* out);

// A ServerEnvelope's fields read in place (the views point into `bytes`); nullopt when the bytes
// are not a well-formed ServerEnvelope with its meta.
std::optional<store::StoredEnvelopeView> ReadServerEnvelope(std::string_view bytes);

}  // namespace xb::api::v3
