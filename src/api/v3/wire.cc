#include "api/v3/wire.h"

#include "base/thread_priority.h"
#include "base/varint.h"
#include "validate/wire_fields.h"

namespace xb::api::v3 {
namespace {

uint64_t KeyOf(uint32_t number, uint32_t wire_type) {
  return (static_cast<uint64_t>(number) << 3) | wire_type;
}

}  // namespace

size_t LengthFieldSize(uint32_t number, size_t length) {
  return VarintSize(KeyOf(number, kWireLengthDelimited)) + VarintSize(length) + length;
}

void AppendLengthHeader(std::string& out, uint32_t number, size_t length) {
  AppendVarint(out, KeyOf(number, kWireLengthDelimited));
  AppendVarint(out, length);
}

void AppendLengthField(std::string& out, uint32_t number, std::string_view bytes) {
  AppendLengthHeader(out, number, bytes.size());
  out.append(bytes);
}

void FieldList::Bytes(uint32_t number, std::string_view bytes) {
  if (!bytes.empty() && count_ < kMaxFields) {
    fields_[count_++] = Field{.kind = Kind::kBytes,
                              .key = KeyOf(number, kWireLengthDelimited),
                              .varint = 0,
                              .raw = bytes};
  }
}

void FieldList::Varint(uint32_t number, uint64_t value) {
  if (value != 0 && count_ < kMaxFields) {
    fields_[count_++] =
        Field{.kind = Kind::kVarint, .key = KeyOf(number, kWireVarint), .varint = value, .raw = {}};
  }
}

bool FieldList::Raw(uint32_t number, uint32_t wire_type, std::string_view raw) {
  // A shifted number past protobuf's limit would make a key whose high bits a reader drops: the
  // field would land on a small number (field 2^29 - 1 raised by 2 reads back as field 1).
  if (count_ == kMaxFields || number > validate::kMaxFieldNumber) {
    return false;
  }
  fields_[count_++] =
      Field{.kind = Kind::kRaw, .key = KeyOf(number, wire_type), .varint = 0, .raw = raw};
  return true;
}

size_t FieldList::Size() const {
  size_t size = 0;
  for (size_t i = 0; i < count_; ++i) {
    const Field& f = fields_[i];
    size += VarintSize(f.key);
    switch (f.kind) {
      case Kind::kVarint:
        size += VarintSize(f.varint);
        break;
      case Kind::kBytes:
        size += VarintSize(f.raw.size()) + f.raw.size();
        break;
      case Kind::kRaw:
        size += f.raw.size();
        break;
    }
  }
  return size;
}

void FieldList::AppendTo(std::string& out) const {
  for (size_t i = 0; i < count_; ++i) {
    const Field& f = fields_[i];
    AppendVarint(out, f.key);
    switch (f.kind) {
      case Kind::kVarint:
        AppendVarint(out, f.varint);
        break;
      case Kind::kBytes:
        AppendVarint(out, f.raw.size());
        AppendInTurns(out, f.raw);  // a payload's fields, on a DB pool thread
        break;
      case Kind::kRaw:
        AppendInTurns(out, f.raw);
        break;
    }
  }
}

void FieldList::AppendAsField(std::string& out, uint32_t number) const {
  AppendLengthHeader(out, number, Size());
  AppendTo(out);
}

}  // namespace xb::api::v3
