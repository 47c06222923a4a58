#include "fanout/messages_frame.h"

namespace xb::fanout {

size_t VarintSize(uint64_t value) {
  size_t n = 1;
  while (value >= 0x80) {
    value >>= 7;
    ++n;
  }
  return n;
}

void AppendVarint(std::string& out, uint64_t value) {
  while (value >= 0x80) {
    out.push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<char>(value));
}

namespace {

size_t EntrySize(size_t envelope_bytes) { return 1 + VarintSize(envelope_bytes) + envelope_bytes; }

size_t Wrapped(size_t body_bytes) { return 1 + VarintSize(body_bytes) + body_bytes; }

}  // namespace

size_t MessagesFrame::SizeWith(size_t envelope_bytes) const {
  return Wrapped(body_.size() + EntrySize(envelope_bytes));
}

size_t MessagesFrame::SizeAlone(size_t envelope_bytes) const {
  return Wrapped(EntrySize(envelope_bytes));
}

void MessagesFrame::Add(std::string_view envelope) {
  body_.push_back(0x0a);  // Messages.envelopes = 1, length-delimited
  AppendVarint(body_, envelope.size());
  body_.append(envelope);
  ++count_;
}

std::string MessagesFrame::Take() {
  std::string out;
  out.reserve(Wrapped(body_.size()));
  out.push_back(static_cast<char>((response_field_ << 3) | 2));
  AppendVarint(out, body_.size());
  out.append(body_);
  body_.clear();
  count_ = 0;
  return out;
}

}  // namespace xb::fanout
