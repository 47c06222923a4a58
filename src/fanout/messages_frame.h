// Builds a stream's Messages response message from pre-encoded ServerEnvelopes without a protobuf
// round trip: SubscribeResponse.messages is field 3, SubscribeStaticResponse.messages field 2, and
// Messages.envelopes field 1 in both (API.md 2.5).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/varint.h"

namespace xb::fanout {

inline constexpr size_t kMaxVarintBytes = 10;
// Writes a length-delimited field's tag and length at `dst`; returns the bytes written.
size_t PutTagAndLength(char* dst, uint32_t field, uint64_t length);

class MessagesFrame {
 public:
  // `response_field`: the oneof field number of `messages` in the response message.
  explicit MessagesFrame(uint32_t response_field) : response_field_(response_field) {}

  // Encoded size of the response message if `envelope` were added.
  size_t SizeWith(size_t envelope_bytes) const;
  // Encoded size of a response message holding only an envelope of this size.
  size_t SizeAlone(size_t envelope_bytes) const;
  // Adds an envelope by reference: it must stay alive until the frame is written or taken.
  void Add(std::string_view envelope);
  size_t count() const { return envelopes_.size(); }
  // Forgets the envelopes added, keeping the list's capacity.
  void Clear() {
    envelopes_.clear();
    body_bytes_ = 0;
  }
  bool empty() const { return envelopes_.empty(); }
  // The encoded size of the response message.
  size_t size() const;
  // Writes the response message into `dst` (exactly size() bytes); resets the builder.
  void WriteTo(char* dst);
  // The response message as pieces, in order: `framing(std::string_view)` for the tag and length
  // bytes, `envelope(size_t index, std::string_view)` for each envelope in Add order (exactly
  // size() bytes in all); resets the builder.
  template <typename Framing, typename Envelope>
  void Emit(Framing&& framing, Envelope&& envelope) {
    char head[1 + kMaxVarintBytes];
    framing(std::string_view(head, PutTagAndLength(head, response_field_, body_bytes_)));
    for (size_t i = 0; i < envelopes_.size(); ++i) {
      framing(std::string_view(head, PutTagAndLength(head, 1, envelopes_[i].size())));
      envelope(i, envelopes_[i]);
    }
    envelopes_.clear();
    body_bytes_ = 0;
  }
  // The response message bytes; resets the builder.
  std::string Take();

 private:
  uint32_t response_field_;
  std::vector<std::string_view> envelopes_;
  size_t body_bytes_ = 0;  // the Messages message: repeated field 1 entries
};

}  // namespace xb::fanout
