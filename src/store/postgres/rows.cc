#include "store/postgres/rows.h"

#include <algorithm>

namespace xb::store::postgres {

std::optional<EnvelopeMeta> ReadMeta(const PgResult& result, int row, int col) {
  EnvelopeMeta meta;
  meta.sequence_id = result.Int8(row, col);
  meta.topic = std::string(result.Bytes(row, col + 1));
  meta.server_ns = result.Int8(row, col + 2);
  meta.expiry_ns = result.IsNull(row, col + 3) ? 0 : result.Int8(row, col + 3);
  std::string_view hash = result.Bytes(row, col + 4);
  if (hash.size() != meta.message_hash.size()) {
    return std::nullopt;
  }
  std::copy(hash.begin(), hash.end(), meta.message_hash.begin());
  meta.is_commit_or_proposal = result.Bool(row, col + 5);
  return meta;
}

}  // namespace xb::store::postgres
