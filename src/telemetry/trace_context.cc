#include "telemetry/trace_context.h"

#include <algorithm>

namespace xb::telemetry {
namespace {

int HexValue(char c) {
  if (c >= '0' && c <= '9') {
    return c - '0';
  }
  if (c >= 'a' && c <= 'f') {
    return c - 'a' + 10;
  }
  return -1;  // uppercase is invalid in traceparent (section 3.2.2)
}

// Decodes exactly 2 * N lowercase hex characters.
template <size_t N>
bool DecodeHex(std::string_view text, std::array<uint8_t, N>* out) {
  if (text.size() != 2 * N) {
    return false;
  }
  for (size_t i = 0; i < N; ++i) {
    const int hi = HexValue(text[2 * i]);
    const int lo = HexValue(text[2 * i + 1]);
    if (hi < 0 || lo < 0) {
      return false;
    }
    (*out)[i] = static_cast<uint8_t>(hi << 4 | lo);
  }
  return true;
}

bool KeyChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '*' ||
         c == '/' || c == '@';
}

// Section 3.3.1.3.1: simple-key or tenant@system key.
bool ValidKey(std::string_view key) {
  if (key.empty() || key.size() > 256) {
    return false;
  }
  const char first = key[0];
  if (!((first >= 'a' && first <= 'z') || (first >= '0' && first <= '9'))) {
    return false;
  }
  const size_t at = key.find('@');
  if (at != std::string_view::npos && (key.find('@', at + 1) != std::string_view::npos ||
                                       at + 1 == key.size() || key.size() - at - 1 > 14)) {
    return false;
  }
  return std::all_of(key.begin(), key.end(), KeyChar);
}

// Section 3.3.1.3.2: 1-256 printable ASCII except ',' and '=', not ending in a space.
bool ValidValue(std::string_view value) {
  if (value.empty() || value.size() > 256 || value.back() == ' ') {
    return false;
  }
  return std::all_of(value.begin(), value.end(),
                     [](char c) { return c >= 0x20 && c <= 0x7e && c != ',' && c != '='; });
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) {
    s.remove_prefix(1);
  }
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) {
    s.remove_suffix(1);
  }
  return s;
}

}  // namespace

TraceIdBytes TraceIdFromHex(std::string_view hex) {
  TraceIdBytes id{};
  if (!DecodeHex(hex, &id)) {
    return TraceIdBytes{};
  }
  return id;
}

std::optional<SpanContext> ParseTraceparent(std::string_view value) {
  // version "-" trace-id "-" parent-id "-" trace-flags
  constexpr size_t kLength = 55;
  if (value.size() < kLength) {
    return std::nullopt;
  }
  std::array<uint8_t, 1> version{};
  if (!DecodeHex(value.substr(0, 2), &version) || version[0] == 0xff) {
    return std::nullopt;
  }
  if (version[0] == 0 ? value.size() != kLength : value.size() > kLength && value[kLength] != '-') {
    return std::nullopt;
  }
  if (value[2] != '-' || value[35] != '-' || value[52] != '-') {
    return std::nullopt;
  }
  SpanContext context;
  std::array<uint8_t, 1> flags{};
  if (!DecodeHex(value.substr(3, 32), &context.trace_id) ||
      !DecodeHex(value.substr(36, 16), &context.span_id) ||
      !DecodeHex(value.substr(53, 2), &flags)) {
    return std::nullopt;
  }
  if (!context.valid()) {
    return std::nullopt;
  }
  context.flags = flags[0];
  context.remote = true;
  return context;
}

bool ValidTracestate(std::string_view value) {
  if (value.size() > 512) {
    return false;
  }
  size_t members = 0;
  while (!value.empty()) {
    const size_t comma = value.find(',');
    std::string_view member = Trim(value.substr(0, comma));
    value = comma == std::string_view::npos ? std::string_view() : value.substr(comma + 1);
    if (member.empty()) {
      continue;  // empty list members are allowed (section 3.3.1.1)
    }
    const size_t eq = member.find('=');
    if (eq == std::string_view::npos || !ValidKey(member.substr(0, eq)) ||
        !ValidValue(member.substr(eq + 1))) {
      return false;
    }
    if (++members > 32) {
      return false;
    }
  }
  return true;
}

TraceIdHex ToHex(const TraceIdBytes& trace_id) {
  TraceIdHex hex;
  HexInto(trace_id, hex.text);
  return hex;
}

}  // namespace xb::telemetry
