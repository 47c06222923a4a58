#include "api/v3/v3_paging.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "api/v3/rows.h"
#include "xmtp/backend/v1/backend.pb.h"

namespace xb::api::v3 {
namespace {

namespace mls = xmtp::mls::api::v1;

mls::PagingInfo Info(mls::SortDirection direction, uint32_t limit, uint64_t cursor) {
  mls::PagingInfo info;
  info.set_direction(direction);
  info.set_limit(limit);
  info.set_id_cursor(cursor);
  return info;
}

// verifies: issue 33 (docs/v3-api.md 2.2) — only ASCENDING is ascending for messages; limit 0 or
// over 100 is 100; the commit log refuses DESCENDING; a cursor above INT64_MAX is refused.
TEST(V3Paging, EffectiveDirectionLimitAndCursor) {
  auto unspecified = PagingOf(Info(mls::SORT_DIRECTION_UNSPECIFIED, 0, 0), false);
  ASSERT_TRUE(unspecified.ok());
  EXPECT_FALSE(unspecified.value().ascending);
  EXPECT_EQ(unspecified.value().limit, 100u);
  auto ascending = PagingOf(Info(mls::SORT_DIRECTION_ASCENDING, 7, 42), false);
  ASSERT_TRUE(ascending.ok());
  EXPECT_TRUE(ascending.value().ascending);
  EXPECT_EQ(ascending.value().limit, 7u);
  EXPECT_EQ(ascending.value().cursor, 42);
  EXPECT_EQ(PagingOf(Info(mls::SORT_DIRECTION_ASCENDING, 101, 0), false).value().limit, 100u);
  EXPECT_FALSE(PagingOf(Info(mls::SORT_DIRECTION_ASCENDING, 1, uint64_t{1} << 63), false).ok());
  EXPECT_TRUE(PagingOf(Info(mls::SORT_DIRECTION_UNSPECIFIED, 0, 0), true).value().ascending);
  EXPECT_FALSE(PagingOf(Info(mls::SORT_DIRECTION_DESCENDING, 0, 0), true).ok());
}

std::vector<store::StoredEnvelope> Rows(int count, size_t payload_bytes) {
  std::vector<store::StoredEnvelope> rows;
  for (int i = 1; i <= count; ++i) {
    xmtp::backend::v1::ClientEnvelope envelope;
    envelope.mutable_group_message()->set_data(std::string(payload_bytes, 'x'));
    store::StoredEnvelope row;
    row.meta.sequence_id = i * 10;
    row.meta.server_ns = 1;
    row.meta.topic = std::string(1, '\0') + std::string(16, 'g');
    row.payload = envelope.SerializeAsString();
    rows.push_back(std::move(row));
  }
  return rows;
}

bool Write(std::string& out, uint32_t number, const store::StoredEnvelopeView& row) {
  return AppendGroupMessage(out, number, row, true);
}

mls::QueryGroupMessagesResponse Page(std::vector<store::StoredEnvelope> rows, uint32_t limit,
                                     uint64_t max_bytes, bool store_over_budget, V3Page* result) {
  std::string out;
  *result =
      AppendV3Page(out, rows, store_over_budget, V3Paging{true, limit, 0}, Write, 1, 2, max_bytes);
  mls::QueryGroupMessagesResponse response;
  EXPECT_TRUE(response.ParseFromString(out));
  return response;
}

// verifies: issue 33 (docs/v3-api.md 2.2) — a full page names its last id, a short one 0.
TEST(V3Paging, FullPageNamesItsLastIdAndAShortOneZero) {
  V3Page result;
  auto full = Page(Rows(3, 10), 3, 1 << 20, false, &result);
  EXPECT_EQ(full.messages_size(), 3);
  EXPECT_EQ(full.paging_info().id_cursor(), 30u);
  EXPECT_EQ(full.paging_info().limit(), 3u);
  EXPECT_EQ(full.paging_info().direction(), mls::SORT_DIRECTION_ASCENDING);
  EXPECT_FALSE(result.cut);
  auto short_page = Page(Rows(2, 10), 3, 1 << 20, false, &result);
  EXPECT_EQ(short_page.messages_size(), 2);
  EXPECT_EQ(short_page.paging_info().id_cursor(), 0u);
}

// verifies: issue 33 (docs/v3-api.md G2) — under the byte budget the page stops before the row
// that would pass it and names the last row it holds; a store page over its budget loses the row
// that passed; when not even one row fits, the page is over budget.
TEST(V3Paging, PageStopsBeforeTheBudgetAndNamesItsLastRow) {
  V3Page result;
  auto cut = Page(Rows(5, 1000), 5, 2500, false, &result);
  EXPECT_EQ(cut.messages_size(), 2);
  EXPECT_EQ(cut.paging_info().id_cursor(), 20u);
  EXPECT_TRUE(result.cut);
  EXPECT_FALSE(result.over_budget);
  auto store_cut = Page(Rows(3, 10), 5, 1 << 20, true, &result);
  EXPECT_EQ(store_cut.messages_size(), 2);
  EXPECT_EQ(store_cut.paging_info().id_cursor(), 20u);
  std::vector<store::StoredEnvelope> rows = Rows(1, 1000);
  std::string out;
  result = AppendV3Page(out, rows, false, V3Paging{true, 5, 0}, Write, 1, 2, 500);
  EXPECT_TRUE(result.over_budget);
}

}  // namespace
}  // namespace xb::api::v3
