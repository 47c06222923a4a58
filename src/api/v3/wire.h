// Protobuf messages written field by field, for the V3 views of stored rows and the V3 writes
// rewrapped for Publish (docs/v3-api.md 2.1, G13). The stored payload is our canonical
// ClientEnvelope encoding (API-211) and a V3 message holds the same values under other field
// numbers, so values are copied as they are on the wire and only their keys are rewritten: no
// message objects, no second decode of a payload Publish or the store already checked.
//
// Pure values; not thread-safe to share while being filled; never suspend.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace xb::api::v3 {

inline constexpr uint32_t kWireVarint = 0;
inline constexpr uint32_t kWireLengthDelimited = 2;

// Bytes of a length-delimited field of `length` value bytes, key and length prefix included.
size_t LengthFieldSize(uint32_t number, size_t length);

// The key and length prefix of a length-delimited field; its `length` value bytes follow.
void AppendLengthHeader(std::string& out, uint32_t number, size_t length);

// A length-delimited field, whole.
void AppendLengthField(std::string& out, uint32_t number, std::string_view bytes);

// The fields of one message, in the order they are added, written once its size is known (a
// message nested in another is preceded by its length). Proto3 defaults (empty bytes, zero) are
// left out as protobuf leaves them out.
class FieldList {
 public:
  static constexpr size_t kMaxFields = 12;

  void Bytes(uint32_t number, std::string_view bytes);
  void Varint(uint32_t number, uint64_t value);
  // A value copied from another message (validate::WireField::raw) under a new number. Returns
  // false when the list is full or the number is above protobuf's largest.
  bool Raw(uint32_t number, uint32_t wire_type, std::string_view raw);

  size_t Size() const;
  void AppendTo(std::string& out) const;
  // As a length-delimited field `number` of the enclosing message.
  void AppendAsField(std::string& out, uint32_t number) const;

 private:
  enum class Kind : uint8_t { kVarint, kBytes, kRaw };
  struct Field {
    Kind kind = Kind::kVarint;
    uint64_t key = 0;
    uint64_t varint = 0;   // kVarint: the value
    std::string_view raw;  // kBytes: the bytes; kRaw: the value as on the wire
  };
  std::array<Field, kMaxFields> fields_{};
  size_t count_ = 0;
};

}  // namespace xb::api::v3
