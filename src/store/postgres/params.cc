#include "store/postgres/params.h"

#include "base/check.h"

namespace xb::store::postgres {
namespace {

// Type OIDs from pg_type.dat; stable across PostgreSQL versions.
constexpr Oid kBoolOid = 16;
constexpr Oid kByteaOid = 17;
constexpr Oid kInt8Oid = 20;
constexpr Oid kInt4Oid = 23;
constexpr Oid kTextOid = 25;
constexpr Oid kBoolArrayOid = 1000;
constexpr Oid kByteaArrayOid = 1001;
constexpr Oid kInt8ArrayOid = 1016;

void PutBigEndian(std::string& out, uint64_t value, int bytes) {
  for (int shift = (bytes - 1) * 8; shift >= 0; shift -= 8) {
    out.push_back(static_cast<char>((value >> shift) & 0xff));
  }
}

std::string EncodeInt8(int64_t value) {
  std::string out;
  PutBigEndian(out, static_cast<uint64_t>(value), 8);
  return out;
}

// array_recv format: ndim, has-null flag, element type, (size, lower bound) per dimension, then
// per element a 4-byte length (-1 = NULL) and the element's binary value.
class ArrayEncoder {
 public:
  ArrayEncoder(Oid element_type, size_t count, bool has_null) {
    PutBigEndian(out_, count == 0 ? 0 : 1, 4);
    PutBigEndian(out_, has_null ? 1 : 0, 4);
    PutBigEndian(out_, element_type, 4);
    if (count != 0) {
      PutBigEndian(out_, count, 4);
      PutBigEndian(out_, 1, 4);
    }
  }
  void Element(std::string_view bytes) {
    PutBigEndian(out_, bytes.size(), 4);
    out_.append(bytes);
  }
  void Null() { PutBigEndian(out_, 0xffffffffu, 4); }
  std::string Take() { return std::move(out_); }

 private:
  std::string out_;
};

uint64_t GetBigEndian(std::string_view bytes) {
  uint64_t value = 0;
  for (char c : bytes) {
    value = (value << 8) | static_cast<uint8_t>(c);
  }
  return value;
}

}  // namespace

Params& Params::Add(Oid type, std::optional<std::string> bytes) {
  XB_CHECK(!bytes || bytes->size() <= static_cast<size_t>(INT32_MAX));
  lengths_.push_back(bytes ? static_cast<int>(bytes->size()) : 0);
  buffers_.push_back(std::move(bytes));
  types_.push_back(type);
  formats_.push_back(1);
  return *this;
}

Params& Params::Int8(int64_t value) { return Add(kInt8Oid, EncodeInt8(value)); }

Params& Params::Int4(int32_t value) {
  std::string out;
  PutBigEndian(out, static_cast<uint32_t>(value), 4);
  return Add(kInt4Oid, std::move(out));
}

Params& Params::Bool(bool value) { return Add(kBoolOid, std::string(1, value ? '\1' : '\0')); }

Params& Params::Bytea(std::string_view bytes) { return Add(kByteaOid, std::string(bytes)); }

Params& Params::Text(std::string_view utf8) { return Add(kTextOid, std::string(utf8)); }

Params& Params::NullInt8() { return Add(kInt8Oid, std::nullopt); }

Params& Params::Int8Array(const std::vector<int64_t>& values) {
  ArrayEncoder a(kInt8Oid, values.size(), /*has_null=*/false);
  for (int64_t v : values) {
    a.Element(EncodeInt8(v));
  }
  return Add(kInt8ArrayOid, a.Take());
}

Params& Params::NullableInt8Array(const std::vector<std::optional<int64_t>>& values) {
  bool has_null = false;
  for (const auto& v : values) {
    has_null = has_null || !v;
  }
  ArrayEncoder a(kInt8Oid, values.size(), has_null);
  for (const auto& v : values) {
    if (v) {
      a.Element(EncodeInt8(*v));
    } else {
      a.Null();
    }
  }
  return Add(kInt8ArrayOid, a.Take());
}

Params& Params::BoolArray(const std::vector<bool>& values) {
  ArrayEncoder a(kBoolOid, values.size(), /*has_null=*/false);
  for (bool v : values) {
    a.Element(v ? std::string_view("\1", 1) : std::string_view("\0", 1));
  }
  return Add(kBoolArrayOid, a.Take());
}

Params& Params::ByteaArray(const std::vector<std::string_view>& values) {
  ArrayEncoder a(kByteaOid, values.size(), /*has_null=*/false);
  for (std::string_view v : values) {
    a.Element(v);
  }
  return Add(kByteaArrayOid, a.Take());
}

Params& Params::NullableByteaArray(const std::vector<std::optional<std::string_view>>& values) {
  bool has_null = false;
  for (const auto& v : values) {
    has_null = has_null || !v;
  }
  ArrayEncoder a(kByteaOid, values.size(), has_null);
  for (const auto& v : values) {
    if (v) {
      a.Element(*v);
    } else {
      a.Null();
    }
  }
  return Add(kByteaArrayOid, a.Take());
}

std::vector<const char*> Params::values() const {
  std::vector<const char*> out;
  out.reserve(buffers_.size());
  for (const auto& b : buffers_) {
    out.push_back(b ? b->data() : nullptr);
  }
  return out;
}

int64_t DecodeInt8(std::string_view bytes) {
  XB_CHECK(bytes.size() == 8);
  return static_cast<int64_t>(GetBigEndian(bytes));
}

int32_t DecodeInt4(std::string_view bytes) {
  XB_CHECK(bytes.size() == 4);
  return static_cast<int32_t>(static_cast<uint32_t>(GetBigEndian(bytes)));
}

bool DecodeBool(std::string_view bytes) {
  XB_CHECK(bytes.size() == 1);
  return bytes[0] != 0;
}

}  // namespace xb::store::postgres
