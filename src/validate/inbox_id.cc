#include "validate/inbox_id.h"

namespace xb::validate {
namespace {

int HexValue(char c) {
  if (c >= '0' && c <= '9') {
    return c - '0';
  }
  if (c >= 'a' && c <= 'f') {
    return c - 'a' + 10;
  }
  if (c >= 'A' && c <= 'F') {
    return c - 'A' + 10;
  }
  return -1;
}

}  // namespace

// implements: TOPIC-002 (inbox id: 64 hex characters)
std::optional<std::string> DecodeInboxId(std::string_view inbox_id) {
  if (inbox_id.size() != kInboxIdHexChars) {
    return std::nullopt;
  }
  std::string out;
  out.reserve(kInboxIdHexChars / 2);
  for (size_t i = 0; i < inbox_id.size(); i += 2) {
    const int hi = HexValue(inbox_id[i]);
    const int lo = HexValue(inbox_id[i + 1]);
    if (hi < 0 || lo < 0) {
      return std::nullopt;
    }
    out.push_back(static_cast<char>((hi << 4) | lo));
  }
  return out;
}

}  // namespace xb::validate
