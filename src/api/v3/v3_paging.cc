#include "api/v3/v3_paging.h"

#include "api/v3/wire.h"

namespace xb::api::v3 {

namespace mls = xmtp::mls::api::v1;

Result<V3Paging> PagingOf(const mls::PagingInfo& info, bool commit_log) {
  V3Paging paging;
  if (commit_log) {
    if (info.direction() == mls::SORT_DIRECTION_DESCENDING) {
      return InvalidArgument("the commit log is read in ascending order only");
    }
    paging.ascending = true;
  } else {
    paging.ascending = info.direction() == mls::SORT_DIRECTION_ASCENDING;
  }
  if (info.limit() != 0 && info.limit() < kMaxV3PageSize) {
    paging.limit = info.limit();
  }
  if (info.id_cursor() > static_cast<uint64_t>(INT64_MAX)) {
    return InvalidArgument("id_cursor is above 9223372036854775807");
  }
  paging.cursor = static_cast<int64_t>(info.id_cursor());
  return paging;
}

namespace {

void AppendPagingInfo(std::string& out, uint32_t number, const V3Paging& paging,
                      uint64_t next_cursor) {
  FieldList info;
  info.Varint(1, paging.ascending ? mls::SORT_DIRECTION_ASCENDING : mls::SORT_DIRECTION_DESCENDING);
  info.Varint(2, paging.limit);
  info.Varint(3, next_cursor);
  info.AppendAsField(out, number);
}

constexpr size_t kPagingInfoBytes = 2 + 2 + 6 + 11;  // key, length, direction, limit, id_cursor

}  // namespace

// implements: issue 33 (docs/v3-api.md 2.2, G2)
V3Page AppendV3Page(std::string& out, std::vector<store::StoredEnvelope>& rows,
                    bool store_over_budget, const V3Paging& paging, RowWriter writer,
                    uint32_t messages_field, uint32_t paging_field, uint64_t max_bytes) {
  V3Page page;
  size_t usable = rows.size();
  if (store_over_budget && usable > 0) {
    --usable;
  }
  bool cut = usable < rows.size();
  size_t written = 0;
  int64_t last_id = 0;
  for (size_t i = 0; i < usable; ++i) {
    const size_t mark = out.size();
    if (!writer(out, messages_field, store::StoredEnvelopeView::Of(rows[i]))) {
      page.invariant = true;
      return page;
    }
    if (out.size() + kPagingInfoBytes > max_bytes) {
      out.resize(mark);
      cut = true;
      break;
    }
    std::string().swap(rows[i].payload);
    ++written;
    last_id = rows[i].meta.sequence_id;
  }
  if (written == 0 && cut) {
    page.over_budget = true;
    return page;
  }
  page.cut = cut;
  const bool full = written == paging.limit;
  AppendPagingInfo(out, paging_field, paging, full || cut ? static_cast<uint64_t>(last_id) : 0);
  return page;
}

Result<std::string> TopicOf(validate::TopicKind kind, std::string_view identifier,
                            std::string_view field) {
  if (identifier.size() != validate::IdentifierLength(kind)) {
    return InvalidArgument(std::string(field) + " has the wrong length");
  }
  return validate::MakeTopic(kind, identifier);
}

bool AppendEntry(EncodedRead& out, std::string_view entry, uint64_t max_bytes) {
  AppendLengthField(out.message, 1, entry);
  out.over_budget = out.message.size() > max_bytes;
  return !out.over_budget;
}

}  // namespace xb::api::v3
