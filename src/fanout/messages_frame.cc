#include "fanout/messages_frame.h"

#include <cstring>

namespace xb::fanout {

namespace {

size_t EntrySize(size_t envelope_bytes) { return 1 + VarintSize(envelope_bytes) + envelope_bytes; }

size_t Wrapped(size_t body_bytes) { return 1 + VarintSize(body_bytes) + body_bytes; }

}  // namespace

size_t MessagesFrame::SizeWith(size_t envelope_bytes) const {
  return Wrapped(body_bytes_ + EntrySize(envelope_bytes));
}

size_t MessagesFrame::SizeAlone(size_t envelope_bytes) const {
  return Wrapped(EntrySize(envelope_bytes));
}

void MessagesFrame::Add(std::string_view envelope) {
  envelopes_.push_back(envelope);
  body_bytes_ += EntrySize(envelope.size());
}

size_t MessagesFrame::size() const { return Wrapped(body_bytes_); }

namespace {

char* PutVarint(char* p, uint64_t value) {
  while (value >= 0x80) {
    *p++ = static_cast<char>((value & 0x7f) | 0x80);
    value >>= 7;
  }
  *p++ = static_cast<char>(value);
  return p;
}

}  // namespace

size_t PutTagAndLength(char* dst, uint32_t field, uint64_t length) {
  *dst = static_cast<char>((field << 3) | 2);
  return static_cast<size_t>(PutVarint(dst + 1, length) - dst);
}

void MessagesFrame::WriteTo(char* dst) {
  char* p = dst;
  *p++ = static_cast<char>((response_field_ << 3) | 2);
  p = PutVarint(p, body_bytes_);
  for (std::string_view envelope : envelopes_) {
    *p++ = 0x0a;  // Messages.envelopes = 1, length-delimited
    p = PutVarint(p, envelope.size());
    std::memcpy(p, envelope.data(), envelope.size());
    p += envelope.size();
  }
  envelopes_.clear();
  body_bytes_ = 0;
}

std::string MessagesFrame::Take() {
  std::string out(size(), '\0');
  WriteTo(out.data());
  return out;
}

}  // namespace xb::fanout
