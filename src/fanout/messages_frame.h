// Builds a stream's Messages response message from pre-encoded ServerEnvelopes without a protobuf
// round trip: SubscribeResponse.messages is field 3, SubscribeStaticResponse.messages field 2, and
// Messages.envelopes field 1 in both (API.md 2.5).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace xb::fanout {

class MessagesFrame {
 public:
  // `response_field`: the oneof field number of `messages` in the response message.
  explicit MessagesFrame(uint32_t response_field) : response_field_(response_field) {}

  // Encoded size of the response message if `envelope` were added.
  size_t SizeWith(size_t envelope_bytes) const;
  // Encoded size of a response message holding only an envelope of this size.
  size_t SizeAlone(size_t envelope_bytes) const;
  void Add(std::string_view envelope);
  size_t count() const { return count_; }
  bool empty() const { return count_ == 0; }
  // The response message bytes; resets the builder.
  std::string Take();

 private:
  uint32_t response_field_;
  std::string body_;  // the Messages message: repeated field 1 entries
  size_t count_ = 0;
};

size_t VarintSize(uint64_t value);
void AppendVarint(std::string& out, uint64_t value);

}  // namespace xb::fanout
