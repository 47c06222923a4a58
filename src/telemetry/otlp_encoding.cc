#include "telemetry/otlp_encoding.h"

#include <algorithm>
#include <array>
#include <cstdint>

#include "telemetry/route.h"

namespace xb::telemetry {
namespace {

// Protobuf wire types.
constexpr uint32_t kVarint = 0;
constexpr uint32_t kFixed64 = 1;
constexpr uint32_t kLengthDelimited = 2;
constexpr uint32_t kFixed32 = 5;

void PutVarint(uint64_t v, std::string* out) {
  if (v < 0x80) {  // tags and short lengths: one byte
    out->push_back(static_cast<char>(v));
    return;
  }
  char buf[10];
  size_t n = 0;
  while (v >= 0x80) {
    buf[n++] = static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  buf[n++] = static_cast<char>(v);
  out->append(buf, n);
}

void PutTag(uint32_t field, uint32_t wire_type, std::string* out) {
  PutVarint(static_cast<uint64_t>(field) << 3 | wire_type, out);
}

void PutBytes(uint32_t field, std::string_view bytes, std::string* out) {
  PutTag(field, kLengthDelimited, out);
  PutVarint(bytes.size(), out);
  out->append(bytes);
}

void PutFixed64(uint32_t field, uint64_t v, std::string* out) {
  PutTag(field, kFixed64, out);
  char buf[8];
  for (int i = 0; i < 8; ++i) {
    buf[i] = static_cast<char>(v >> (8 * i));  // little-endian, whatever the host order
  }
  out->append(buf, sizeof(buf));
}

void PutFixed32(uint32_t field, uint32_t v, std::string* out) {
  PutTag(field, kFixed32, out);
  for (int i = 0; i < 4; ++i) {
    out->push_back(static_cast<char>(v >> (8 * i)));
  }
}

void PutVarintField(uint32_t field, uint64_t v, std::string* out) {
  PutTag(field, kVarint, out);
  PutVarint(v, out);
}

template <size_t N>
std::string_view AsBytes(const std::array<uint8_t, N>& id) {
  return std::string_view(reinterpret_cast<const char*>(id.data()), N);
}

// The rpc.system / rpc.service / rpc.method attributes (Span field 9) of each route, encoded once:
// they are the same bytes for every request span of a route.
const std::array<std::string, kRpcCount>& RouteAttributes();

// Encodes nested messages into scratch buffers that keep their capacity from span to span, so a
// batch costs a handful of allocations rather than several per span.
class SpanEncoder {
 public:
  // common.v1.KeyValue { key = 1; value = 2 (AnyValue { string_value = 1; int_value = 3 }) }
  void PutStringAttribute(uint32_t field, std::string_view key, std::string_view value,
                          std::string* out) {
    any_.clear();
    PutBytes(1, value, &any_);
    PutKeyValue(field, key, out);
  }
  void PutIntAttribute(uint32_t field, std::string_view key, int64_t value, std::string* out) {
    any_.clear();
    PutVarintField(3, static_cast<uint64_t>(value), &any_);
    PutKeyValue(field, key, out);
  }

  // trace.v1.Span, as ScopeSpans.spans (field 2) of `out`.
  void PutSpan(const SpanData& span, std::string* out) {
    std::string& s = span_;
    s.clear();
    PutBytes(1, AsBytes(span.context.trace_id), &s);  // trace_id
    PutBytes(2, AsBytes(span.context.span_id), &s);   // span_id
    if (!span.trace_state.empty()) {
      PutBytes(3, span.trace_state, &s);  // trace_state
    }
    const bool has_parent = std::any_of(span.parent_span_id.begin(), span.parent_span_id.end(),
                                        [](uint8_t b) { return b != 0; });
    if (has_parent) {
      PutBytes(4, AsBytes(span.parent_span_id), &s);  // parent_span_id
    }
    PutBytes(5, OperationName(span.operation), &s);           // name
    PutVarintField(6, static_cast<uint64_t>(span.kind), &s);  // kind
    PutFixed64(7, span.start_unix_ns, &s);                    // start_time_unix_nano
    PutFixed64(8, span.end_unix_ns, &s);                      // end_time_unix_nano
    if (span.rpc) {  // attributes = 9: the route table words, encoded once per route
      s.append(RouteAttributes()[static_cast<size_t>(*span.rpc)]);
    }
    for (size_t i = 0; i < kIntAttributeCount; ++i) {
      if ((span.ints_set & (1u << i)) != 0) {
        PutIntAttribute(9, IntAttributeName(static_cast<IntAttribute>(i)), span.ints[i], &s);
      }
    }
    if (!span.principal.empty()) {
      PutStringAttribute(9, "auth.principal", span.principal, &s);
    }
    if (span.error) {
      // Status { code = 3 }: STATUS_CODE_ERROR (2). Two bytes, no scratch needed.
      PutBytes(15, std::string_view("\x18\x02", 2), &s);
    }
    // flags (fixed32): W3C trace flags, plus SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK (0x100) and,
    // for a span whose parent came from a caller, SPAN_FLAGS_CONTEXT_IS_REMOTE_MASK (0x200).
    uint32_t flags = span.context.flags | 0x100u;
    if (has_parent && span.parent_remote) {
      flags |= 0x200u;
    }
    PutFixed32(16, flags, &s);
    PutBytes(2, s, out);  // ScopeSpans.spans = 2
  }

 private:
  void PutKeyValue(uint32_t field, std::string_view key, std::string* out) {
    kv_.clear();
    PutBytes(1, key, &kv_);
    PutBytes(2, any_, &kv_);
    PutBytes(field, kv_, out);
  }

  std::string any_;
  std::string kv_;
  std::string span_;
};

const std::array<std::string, kRpcCount>& RouteAttributes() {
  static const std::array<std::string, kRpcCount> encoded = [] {
    std::array<std::string, kRpcCount> out;
    SpanEncoder encoder;
    for (size_t i = 0; i < kRpcCount; ++i) {
      const Route& route = RouteOf(static_cast<Rpc>(i));
      encoder.PutStringAttribute(9, "rpc.system", "grpc", &out[i]);
      encoder.PutStringAttribute(9, "rpc.service", route.grpc_service, &out[i]);
      encoder.PutStringAttribute(9, "rpc.method", route.grpc_method, &out[i]);
    }
    return out;
  }();
  return encoded;
}

}  // namespace

struct OtlpEncoder::Scratch {
  SpanEncoder spans;
  std::string resource;     // resource.v1.Resource
  std::string scope_spans;  // trace.v1.ScopeSpans
};

OtlpEncoder::OtlpEncoder(const ResourceAttributes& resource) : scratch_(new Scratch) {
  for (const auto& [key, value] : resource) {
    scratch_->spans.PutStringAttribute(1, key, value, &scratch_->resource);  // attributes = 1
  }
}

OtlpEncoder::~OtlpEncoder() = default;

const std::string& OtlpEncoder::Encode(std::span<const SpanData> spans) {
  std::string& scope_spans = scratch_->scope_spans;  // { scope = 1; spans = 2 }
  scope_spans.clear();
  std::string scope;  // common.v1.InstrumentationScope { name = 1 }
  PutBytes(1, kScopeName, &scope);
  PutBytes(1, scope, &scope_spans);
  for (const SpanData& span : spans) {
    scratch_->spans.PutSpan(span, &scope_spans);
  }
  // ExportTraceServiceRequest { resource_spans = 1 (ResourceSpans { resource = 1;
  // scope_spans = 2 }) }, written outside in: the spans are copied once.
  std::string resource_head;
  PutBytes(1, scratch_->resource, &resource_head);
  std::string scope_head;
  PutTag(2, kLengthDelimited, &scope_head);
  PutVarint(scope_spans.size(), &scope_head);
  const size_t resource_spans_size = resource_head.size() + scope_head.size() + scope_spans.size();
  body_.clear();
  PutTag(1, kLengthDelimited, &body_);
  PutVarint(resource_spans_size, &body_);
  body_.append(resource_head).append(scope_head).append(scope_spans);
  return body_;
}

std::string EncodeExportTraceRequest(const ResourceAttributes& resource,
                                     std::span<const SpanData> spans) {
  OtlpEncoder encoder(resource);
  return encoder.Encode(spans);
}

}  // namespace xb::telemetry
