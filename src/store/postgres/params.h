// Binary-format statement parameters for PQsendQueryParams (paramFormats = 1): scalars and
// one-dimensional arrays in PostgreSQL's send/recv wire format, so bytea travels unescaped and a
// multi-row statement binds one array per column (unnest).
#pragma once

#include <libpq-fe.h>

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace xb::store::postgres {

class Params {
 public:
  Params() = default;
  Params(const Params&) = delete;
  Params& operator=(const Params&) = delete;

  // Each call appends the next parameter ($1, $2, ...). The SQL should cast each parameter to the
  // type it is sent as ($1::int8, $2::bytea[]), which keeps the statement readable.
  Params& Int8(int64_t value);
  Params& Int4(int32_t value);
  Params& Bool(bool value);
  Params& Bytea(std::string_view bytes);
  Params& Text(std::string_view utf8);
  Params& NullInt8();

  Params& Int8Array(const std::vector<int64_t>& values);
  Params& NullableInt8Array(const std::vector<std::optional<int64_t>>& values);
  Params& BoolArray(const std::vector<bool>& values);
  Params& ByteaArray(const std::vector<std::string_view>& values);
  Params& NullableByteaArray(const std::vector<std::optional<std::string_view>>& values);

  int count() const { return static_cast<int>(buffers_.size()); }
  const Oid* types() const { return types_.data(); }
  const int* lengths() const { return lengths_.data(); }
  const int* formats() const { return formats_.data(); }
  // Pointers into the owned buffers (null for SQL NULL); valid while this object lives unchanged.
  std::vector<const char*> values() const;

 private:
  Params& Add(Oid type, std::optional<std::string> bytes);

  std::deque<std::optional<std::string>> buffers_;  // deque: appending keeps earlier data in place
  std::vector<Oid> types_;
  std::vector<int> lengths_;
  std::vector<int> formats_;
};

// Readers for binary-format result values. The caller selects the column type; a length that does
// not fit the type is a programming error and crashes (XB_CHECK).
int64_t DecodeInt8(std::string_view bytes);
int32_t DecodeInt4(std::string_view bytes);
bool DecodeBool(std::string_view bytes);

}  // namespace xb::store::postgres
