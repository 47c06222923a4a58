// W3C Trace Context (https://www.w3.org/TR/trace-context/, section 3): the traceparent and
// tracestate request headers, parsed into the parent of a request span (OPS-012), and the ids
// and sampling decision spans carry.
//
// Everything here is a value type or a pure function: thread-safe, never suspends, and parsing
// never allocates (tracestate is validated, and copied only by a span that is exported).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

namespace xb::telemetry {

using TraceIdBytes = std::array<uint8_t, 16>;
using SpanIdBytes = std::array<uint8_t, 8>;

inline constexpr uint8_t kTraceFlagSampled = 0x01;

// True when every byte is zero. No early exit: the fold compiles to a few wide loads, and every
// span asks this of its ids several times.
template <size_t N>
constexpr bool AllZero(const std::array<uint8_t, N>& bytes) {
  uint8_t any = 0;
  for (const uint8_t b : bytes) {
    any |= b;
  }
  return any == 0;
}

// The identity of one span as a child sees it.
struct SpanContext {
  TraceIdBytes trace_id{};
  SpanIdBytes span_id{};
  uint8_t flags = 0;    // W3C trace-flags; bit 0 = sampled
  bool remote = false;  // came from a traceparent header

  // A context with a non-zero trace id and span id; a default one is "no parent".
  bool valid() const { return !AllZero(trace_id) && !AllZero(span_id); }
  // A non-zero trace id: the request belongs to a trace (the completion log's trace_id).
  bool has_trace_id() const { return !AllZero(trace_id); }
  bool sampled() const { return (flags & kTraceFlagSampled) != 0; }
};

// Parses a traceparent header value (Trace Context section 3.2). Accepts version 00 exactly
// (55 characters) and, as section 4.3 requires of a version-00 parser, a higher version (not ff)
// whose first 55 characters parse and whose 56th, if any, is '-'. Hex must be lowercase; an
// all-zero trace id or parent id is invalid. nullopt for anything else, in which case the
// request starts a new trace (section 3.2.2.1: the header is ignored).
std::optional<SpanContext> ParseTraceparent(std::string_view value);

// The trace id written as 32 lowercase hex digits (the completion log's trace_id); all zero for
// anything else.
TraceIdBytes TraceIdFromHex(std::string_view hex);

// True when `value` is a tracestate header that may be propagated (section 3.3): at most 512
// characters, at most 32 list members, each `key=value` with the section 3.3.1 grammar. A
// tracestate is used only together with a valid traceparent.
bool ValidTracestate(std::string_view value);

// Lowercase hex of `bytes` into `out` (2 * N characters, no terminator).
template <size_t N>
void HexInto(const std::array<uint8_t, N>& bytes, char* out) {
  static constexpr char kHex[] = "0123456789abcdef";
  for (size_t i = 0; i < N; ++i) {
    out[2 * i] = kHex[bytes[i] >> 4];
    out[2 * i + 1] = kHex[bytes[i] & 15];
  }
}

// The trace id as 32 lowercase hex digits, the form of the completion log's trace_id (OPS-018).
struct TraceIdHex {
  char text[32];
  std::string_view view() const { return std::string_view(text, sizeof(text)); }
};
TraceIdHex ToHex(const TraceIdBytes& trace_id);

// The parent-based ratio sampler of CONF [telemetry] sample_ratio: a parent's decision is kept;
// a root trace is sampled when the low 8 bytes of its trace id, as a big-endian integer, fall
// below ratio * 2^64 (so a given trace id is sampled the same way on every instance).
// Inline: every span of a root trace asks, and the common ratios decide without the id.
inline bool ShouldSample(const SpanContext& parent, const TraceIdBytes& trace_id, double ratio) {
  if (parent.valid()) {
    return parent.sampled();
  }
  if (ratio >= 1.0) {
    return true;
  }
  if (!(ratio > 0.0)) {
    return false;
  }
  uint64_t low = 0;
  for (size_t i = 8; i < 16; ++i) {
    low = low << 8 | trace_id[i];
  }
  // ratio < 1, so the bound is below 2^64 and converts exactly enough.
  const auto bound = static_cast<uint64_t>(ratio * 18446744073709551616.0);
  return low < bound;
}

}  // namespace xb::telemetry
