// A walk over the top-level fields of an encoded protobuf message without decoding it: no
// allocation, one pass. Used to bound a request before it is parsed (issue 28): a 26 MB request of
// 13 million empty sub-messages costs protobuf ~2 GiB of message objects, so a repeated field is
// counted first and the request refused when the count is over its limit. Also hands out a
// message's sub-message bytes one at a time, so a request can be validated element by element and
// stop at its first error.
//
// Pure functions; thread-safe; never suspend.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace xb::validate {

// The largest field number protobuf allows (2^29 - 1): a larger one does not fit a key's 32 bits.
inline constexpr uint32_t kMaxFieldNumber = 536870911;

// One top-level field: its number, wire type, and for a length-delimited field its bytes.
struct WireField {
  uint32_t number = 0;
  uint32_t wire_type = 0;  // 0 varint, 1 fixed64, 2 length-delimited, 5 fixed32
  std::string_view bytes;  // wire type 2 only
  std::string_view raw;    // the value as on the wire (for wire type 2 with its length prefix)
  uint64_t value = 0;      // wire type 0 only: the varint's value
};

// Reads one field at a time from the front of a message.
class WireFieldReader {
 public:
  explicit WireFieldReader(std::string_view message) : rest_(message) {}

  // The next field; nullopt at the end or when the bytes are not a well-formed sequence of
  // top-level fields (then ok() is false). Groups (wire types 3 and 4) count as malformed: no
  // message of ours uses them.
  std::optional<WireField> Next();
  bool ok() const { return ok_; }

 private:
  std::string_view rest_;
  bool ok_ = true;
};

// How many times field `number` occurs at the top level of `message`; nullopt when the message's
// top level is malformed (the full parse would fail too). Stops counting past `stop_after`.
std::optional<size_t> CountField(std::string_view message, uint32_t number,
                                 size_t stop_after = SIZE_MAX);

}  // namespace xb::validate
