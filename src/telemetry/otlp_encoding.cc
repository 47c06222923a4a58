#include "telemetry/otlp_encoding.h"

#include <array>
#include <bit>
#include <cstdint>
#include <cstring>
#include <vector>

#include "base/check.h"
#include "telemetry/route.h"

namespace xb::telemetry {
namespace {

// Protobuf wire types.
constexpr uint32_t kVarint = 0;
constexpr uint32_t kFixed64 = 1;
constexpr uint32_t kLengthDelimited = 2;
constexpr uint32_t kFixed32 = 5;

constexpr size_t VarintSize(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

// A length-delimited field of `size` bytes with a one-byte tag (field numbers 1 to 15).
constexpr size_t FieldSize(size_t size) { return 1 + VarintSize(size) + size; }

// A one-byte tag: field numbers 1 to 15 only (Span.flags, field 16, writes its own).
constexpr char Tag(uint32_t field, uint32_t wire_type) {
  return static_cast<char>(field << 3 | wire_type);
}
constexpr uint64_t kFlagsTag = 16 << 3 | kFixed32;  // Span.flags: a two-byte tag

// Writes into storage already sized for it (the span encoding below measures first, then writes
// each byte once: no capacity checks, no nested scratch buffers copied outward).
class Writer {
 public:
  explicit Writer(char* at) : at_(at) {}
  char* at() const { return at_; }

  void Byte(char c) { *at_++ = c; }
  void Varint(uint64_t v) {
    while (v >= 0x80) {
      *at_++ = static_cast<char>((v & 0x7f) | 0x80);
      v >>= 7;
    }
    *at_++ = static_cast<char>(v);
  }
  void Raw(std::string_view bytes) {
    std::memcpy(at_, bytes.data(), bytes.size());
    at_ += bytes.size();
  }
  void Bytes(uint32_t field, std::string_view bytes) {
    Byte(Tag(field, kLengthDelimited));
    Varint(bytes.size());
    Raw(bytes);
  }
  void Fixed64(uint32_t field, uint64_t v) {
    Byte(Tag(field, kFixed64));
    LittleEndian(v);
  }
  void Fixed32(uint64_t tag, uint32_t v) {
    Varint(tag);
    LittleEndian(v);
  }

 private:
  template <typename T>
  void LittleEndian(T v) {
    if constexpr (std::endian::native != std::endian::little) {
      for (size_t i = 0; i < sizeof(T); ++i) {
        at_[i] = static_cast<char>(v >> (8 * i));
      }
    } else {
      std::memcpy(at_, &v, sizeof(T));
    }
    at_ += sizeof(T);
  }

  char* at_;
};

// Appends `size` bytes to `out` and returns a writer over them (setup only: zero-fills).
Writer Grow(std::string* out, size_t size) {
  const size_t old = out->size();
  out->resize(old + size);
  return Writer(out->data() + old);
}

template <size_t N>
std::string_view AsBytes(const std::array<uint8_t, N>& id) {
  return std::string_view(reinterpret_cast<const char*>(id.data()), N);
}

// common.v1.KeyValue { key = 1; value = 2 (AnyValue { string_value = 1 }) } as field `field`.
void AppendStringAttribute(uint32_t field, std::string_view key, std::string_view value,
                           std::string* out) {
  const size_t any = FieldSize(value.size());
  const size_t kv = FieldSize(key.size()) + FieldSize(any);
  Writer w = Grow(out, FieldSize(kv));
  w.Byte(Tag(field, kLengthDelimited));
  w.Varint(kv);
  w.Bytes(1, key);
  w.Byte(Tag(2, kLengthDelimited));
  w.Varint(any);
  w.Bytes(1, value);
}

// The constant bytes of the span encoding, made once: the rpc.system / rpc.service / rpc.method
// attributes (Span field 9) of each route, and for each integer attribute its KeyValue key field.
struct Constants {
  std::array<std::string, kRpcCount> route_attributes;
  std::array<std::string, kIntAttributeCount> int_keys;  // KeyValue.key = 1, tag included
};

const Constants& SpanConstants() {
  static const Constants constants = [] {
    Constants c;
    for (size_t i = 0; i < kRpcCount; ++i) {
      const Route& route = RouteOf(static_cast<Rpc>(i));
      AppendStringAttribute(9, "rpc.system", "grpc", &c.route_attributes[i]);
      AppendStringAttribute(9, "rpc.service", route.grpc_service, &c.route_attributes[i]);
      AppendStringAttribute(9, "rpc.method", route.grpc_method, &c.route_attributes[i]);
    }
    for (size_t i = 0; i < kIntAttributeCount; ++i) {
      const std::string_view key = IntAttributeName(static_cast<IntAttribute>(i));
      std::string& bytes = c.int_keys[i];
      Writer w = Grow(&bytes, FieldSize(key.size()));
      w.Bytes(1, key);
    }
    return c;
  }();
  return constants;
}

// The sizes of one integer attribute: its AnyValue { int_value = 3 } and its KeyValue.
struct IntAttributeSizes {
  size_t any;
  size_t kv;
};
IntAttributeSizes SizesOf(const Constants& c, size_t i, int64_t value) {
  const size_t any = 1 + VarintSize(static_cast<uint64_t>(value));
  return {.any = any, .kv = c.int_keys[i].size() + FieldSize(any)};
}

bool HasParent(const SpanData& span) { return !AllZero(span.parent_span_id); }

std::string_view NameOf(const SpanData& span) { return OperationName(span.operation); }

// The size of trace.v1.Span's own fields (without its ScopeSpans.spans tag and length).
size_t SpanSize(const Constants& c, const SpanData& span) {
  size_t size = FieldSize(16) + FieldSize(8);  // trace_id, span_id
  if (!span.trace_state.empty()) {
    size += FieldSize(span.trace_state.size());
  }
  if (HasParent(span)) {
    size += FieldSize(8);
  }
  size += FieldSize(NameOf(span).size());
  size += 1 + VarintSize(static_cast<uint64_t>(span.kind));
  size += 2 * 9;  // start and end times, fixed64
  if (span.rpc) {
    size += c.route_attributes[static_cast<size_t>(*span.rpc)].size();
  }
  for (size_t i = 0; i < kIntAttributeCount; ++i) {
    if ((span.ints_set & (1u << i)) != 0) {
      size += FieldSize(SizesOf(c, i, span.ints[i]).kv);
    }
  }
  if (!span.principal.empty()) {
    const size_t any = FieldSize(span.principal.size());
    size += FieldSize(FieldSize(std::string_view("auth.principal").size()) + FieldSize(any));
  }
  if (span.error) {
    size += 4;  // status
  }
  return size + VarintSize(kFlagsTag) + 4;  // flags, fixed32
}

// trace.v1.Span's fields, exactly SpanSize bytes.
void WriteSpan(const Constants& c, const SpanData& span, Writer& w) {
  w.Bytes(1, AsBytes(span.context.trace_id));  // trace_id
  w.Bytes(2, AsBytes(span.context.span_id));   // span_id
  if (!span.trace_state.empty()) {
    w.Bytes(3, span.trace_state);  // trace_state
  }
  const bool has_parent = HasParent(span);
  if (has_parent) {
    w.Bytes(4, AsBytes(span.parent_span_id));  // parent_span_id
  }
  w.Bytes(5, NameOf(span));  // name
  w.Byte(Tag(6, kVarint));   // kind
  w.Varint(static_cast<uint64_t>(span.kind));
  w.Fixed64(7, span.start_unix_ns);  // start_time_unix_nano
  w.Fixed64(8, span.end_unix_ns);    // end_time_unix_nano
  if (span.rpc) {                    // attributes = 9: the route table words
    w.Raw(c.route_attributes[static_cast<size_t>(*span.rpc)]);
  }
  for (size_t i = 0; i < kIntAttributeCount; ++i) {
    if ((span.ints_set & (1u << i)) != 0) {
      const IntAttributeSizes sizes = SizesOf(c, i, span.ints[i]);
      w.Byte(Tag(9, kLengthDelimited));
      w.Varint(sizes.kv);
      w.Raw(c.int_keys[i]);
      w.Byte(Tag(2, kLengthDelimited));  // KeyValue.value
      w.Varint(sizes.any);
      w.Byte(Tag(3, kVarint));  // AnyValue.int_value
      w.Varint(static_cast<uint64_t>(span.ints[i]));
    }
  }
  if (!span.principal.empty()) {
    const std::string_view key = "auth.principal";
    const size_t any = FieldSize(span.principal.size());
    w.Byte(Tag(9, kLengthDelimited));
    w.Varint(FieldSize(key.size()) + FieldSize(any));
    w.Bytes(1, key);
    w.Byte(Tag(2, kLengthDelimited));
    w.Varint(any);
    w.Bytes(1, span.principal);
  }
  if (span.error) {
    // Status { code = 3 }: STATUS_CODE_ERROR (2).
    w.Bytes(15, std::string_view("\x18\x02", 2));
  }
  // flags (fixed32): W3C trace flags, plus SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK (0x100) and,
  // for a span whose parent came from a caller, SPAN_FLAGS_CONTEXT_IS_REMOTE_MASK (0x200).
  uint32_t flags = span.context.flags | 0x100u;
  if (has_parent && span.parent_remote) {
    flags |= 0x200u;
  }
  w.Fixed32(kFlagsTag, flags);
}

}  // namespace

struct OtlpEncoder::Scratch {
  std::string resource_field;      // ResourceSpans.resource = 1 (resource.v1.Resource), whole
  std::string scope_field;         // ScopeSpans.scope = 1 (InstrumentationScope { name = 1 })
  std::vector<size_t> span_sizes;  // per span of the batch being encoded
};

OtlpEncoder::OtlpEncoder(const ResourceAttributes& resource) : scratch_(new Scratch) {
  std::string attributes;
  for (const auto& [key, value] : resource) {
    AppendStringAttribute(1, key, value, &attributes);  // Resource.attributes = 1
  }
  Writer w = Grow(&scratch_->resource_field, FieldSize(attributes.size()));
  w.Bytes(1, attributes);
  Writer s = Grow(&scratch_->scope_field, FieldSize(FieldSize(kScopeName.size())));
  s.Byte(Tag(1, kLengthDelimited));
  s.Varint(FieldSize(kScopeName.size()));
  s.Bytes(1, kScopeName);
}

OtlpEncoder::~OtlpEncoder() = default;

std::string_view OtlpEncoder::Encode(std::span<const SpanData> spans) {
  const Constants& c = SpanConstants();
  // Sizes first, inside out, so that every byte is then written once, in place.
  std::vector<size_t>& sizes = scratch_->span_sizes;
  sizes.clear();
  size_t scope_spans = scratch_->scope_field.size();  // ScopeSpans { scope = 1; spans = 2 }
  for (const SpanData& span : spans) {
    sizes.push_back(SpanSize(c, span));
    scope_spans += FieldSize(sizes.back());
  }
  // ExportTraceServiceRequest { resource_spans = 1 (ResourceSpans { resource = 1;
  // scope_spans = 2 }) }
  const size_t resource_spans = scratch_->resource_field.size() + FieldSize(scope_spans);
  const size_t body_size = FieldSize(resource_spans);
  body_.Reserve(body_size, 0, 0);
  Writer w(body_.data());
  w.Byte(Tag(1, kLengthDelimited));
  w.Varint(resource_spans);
  w.Raw(scratch_->resource_field);
  w.Byte(Tag(2, kLengthDelimited));
  w.Varint(scope_spans);
  w.Raw(scratch_->scope_field);
  for (size_t i = 0; i < spans.size(); ++i) {
    w.Byte(Tag(2, kLengthDelimited));  // ScopeSpans.spans
    w.Varint(sizes[i]);
    char* const start = w.at();
    WriteSpan(c, spans[i], w);
    XB_CHECK(static_cast<size_t>(w.at() - start) == sizes[i]);
  }
  XB_CHECK(w.at() == body_.data() + body_size);
  return std::string_view(body_.data(), body_size);
}

std::string EncodeExportTraceRequest(const ResourceAttributes& resource,
                                     std::span<const SpanData> spans) {
  OtlpEncoder encoder(resource);
  return std::string(encoder.Encode(spans));
}

}  // namespace xb::telemetry
