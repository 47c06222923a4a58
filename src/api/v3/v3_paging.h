// What the V3 reads share. V3 paging (docs/v3-api.md 2.2), as xmtp-node-go pages: its effective
// direction and limit, the exclusive id cursor, and the PagingInfo a response carries. The V3 page
// itself: stored rows written as V3 messages until the response would pass the byte budget (G2).
// The topic a request's identifier names, and a response's per-position entries under the budget.
//
// Pure functions; thread-safe; never suspend.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "api/encoded_response.h"
#include "base/status.h"
#include "mls/api/v1/mls.pb.h"
#include "store/store.h"
#include "validate/topic.h"

namespace xb::api::v3 {

inline constexpr uint32_t kMaxV3PageSize = 100;  // node-go's maxPageSize

struct V3Paging {
  bool ascending = false;
  uint32_t limit = kMaxV3PageSize;
  int64_t cursor = 0;  // exclusive; 0: from the oldest (ascending) or the newest (descending)
};

// Group messages and Welcomes: only ASCENDING is ascending; limit 0 or over 100 is 100; a cursor
// above INT64_MAX is INVALID_ARGUMENT. Commit log (`commit_log`): DESCENDING is INVALID_ARGUMENT
// (Q4), anything else ascending.
Result<V3Paging> PagingOf(const xmtp::mls::api::v1::PagingInfo& info, bool commit_log);

// Writes one stored row as a V3 message, field `number` of the response; false: not its kind.
using RowWriter = bool (*)(std::string& out, uint32_t number, const store::StoredEnvelopeView& row);

struct V3Page {
  bool invariant = false;    // a row is not of the kind its topic holds
  bool over_budget = false;  // not even the first row fits the budget
  bool cut = false;          // rows were left out for the budget (G2)
};

// Appends `rows` (in page order) as repeated field `messages_field`, then PagingInfo as field
// `paging_field`: direction and limit the effective ones, id_cursor the last row's id when the page
// holds `limit` rows or was cut short, else 0. Rows stop before the message would pass
// `max_bytes` (G2); a store page that was itself over the budget loses its last row, which passed
// it. Each row's payload is freed once written.
V3Page AppendV3Page(std::string& out, std::vector<store::StoredEnvelope>& rows,
                    bool store_over_budget, const V3Paging& paging, RowWriter writer,
                    uint32_t messages_field, uint32_t paging_field, uint64_t max_bytes);

// The topic `identifier` names (TOPIC-001); INVALID_ARGUMENT "<field> has the wrong length" when
// its length is not the kind's (TOPIC-003: the bytes are never quoted).
Result<std::string> TopicOf(validate::TopicKind kind, std::string_view identifier,
                            std::string_view field);

// Appends `entry` as field 1 (the repeated entries of a per-position response) to `out.message`;
// false, with out.over_budget set, once the message passes `max_bytes` (API-283).
bool AppendEntry(EncodedRead& out, std::string_view entry, uint64_t max_bytes);

}  // namespace xb::api::v3
