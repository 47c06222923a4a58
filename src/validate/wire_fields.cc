#include "validate/wire_fields.h"

namespace xb::validate {

namespace {

// A base-128 varint of at most 10 bytes from the front of `in`, which it consumes.
std::optional<uint64_t> ReadVarint(std::string_view& in) {
  uint64_t value = 0;
  for (int shift = 0, i = 0; i < 10; ++i, shift += 7) {
    if (in.empty()) {
      return std::nullopt;
    }
    const auto byte = static_cast<uint8_t>(in.front());
    in.remove_prefix(1);
    value |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) {
      return value;
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<WireField> WireFieldReader::Next() {
  if (!ok_ || rest_.empty()) {
    return std::nullopt;
  }
  const auto key = ReadVarint(rest_);
  const uint64_t number = key ? *key >> 3 : 0;
  if (!key || number == 0 || number > kMaxFieldNumber) {
    ok_ = false;
    return std::nullopt;
  }
  WireField field{.number = static_cast<uint32_t>(number),
                  .wire_type = static_cast<uint32_t>(*key & 7),
                  .bytes = {},
                  .raw = {},
                  .value = 0};
  const std::string_view value_start = rest_;
  switch (field.wire_type) {
    case 0:
      if (const auto value = ReadVarint(rest_)) {
        field.value = *value;
      } else {
        ok_ = false;
      }
      break;
    case 1:
    case 5: {
      const size_t width = field.wire_type == 1 ? 8 : 4;
      if (rest_.size() < width) {
        ok_ = false;
      } else {
        rest_.remove_prefix(width);
      }
      break;
    }
    case 2: {
      const auto length = ReadVarint(rest_);
      if (!length || *length > rest_.size()) {
        ok_ = false;
      } else {
        field.bytes = rest_.substr(0, static_cast<size_t>(*length));
        rest_.remove_prefix(static_cast<size_t>(*length));
      }
      break;
    }
    default:
      ok_ = false;
  }
  if (!ok_) {
    return std::nullopt;
  }
  field.raw = value_start.substr(0, value_start.size() - rest_.size());
  return field;
}

std::optional<size_t> CountField(std::string_view message, uint32_t number, size_t stop_after) {
  WireFieldReader reader(message);
  size_t count = 0;
  while (auto field = reader.Next()) {
    if (field->number == number && ++count > stop_after) {
      return count;
    }
  }
  if (!reader.ok()) {
    return std::nullopt;
  }
  return count;
}

}  // namespace xb::validate
