// Decodes Subscribe / SubscribeStatic response frames straight from the wire bytes, without
// building protobuf messages: the subscriber side of the stream modes reads hundreds of thousands
// of envelopes a second on one core, and copying each 1 KiB payload into a std::string would make
// the load client, not the server, the bottleneck. Views point into the frame bytes. Field numbers
// are those of proto/xmtp/backend/v1/backend.proto (API.md 2.2, 2.5).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "loadgen.h"

namespace xb::bench {

// A protobuf wire-format reader over one message's bytes. Any malformed input makes ok() false
// and Next() return false.
class WireReader {
 public:
  explicit WireReader(std::string_view bytes)
      : p_(reinterpret_cast<const uint8_t*>(bytes.data())), end_(p_ + bytes.size()) {}

  // The next field's number and wire type; false at the end or on malformed input.
  bool Next(uint32_t* field, uint32_t* wire_type) {
    if (!ok_ || p_ == end_) return false;
    const uint64_t key = Varint();
    *field = static_cast<uint32_t>(key >> 3);
    *wire_type = static_cast<uint32_t>(key & 7);
    return ok_;
  }

  uint64_t Varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p_ == end_) break;
      const uint8_t b = *p_++;
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) return v;
    }
    ok_ = false;
    return 0;
  }

  std::string_view Bytes() {
    const uint64_t n = Varint();
    if (!ok_ || n > static_cast<uint64_t>(end_ - p_)) {
      ok_ = false;
      return {};
    }
    std::string_view v(reinterpret_cast<const char*>(p_), n);
    p_ += n;
    return v;
  }

  void Skip(uint32_t wire_type) {
    switch (wire_type) {
      case 0:
        Varint();
        break;
      case 1:
        Advance(8);
        break;
      case 2:
        Bytes();
        break;
      case 5:
        Advance(4);
        break;
      default:
        ok_ = false;
    }
  }

  bool ok() const { return ok_; }

 private:
  void Advance(size_t n) {
    if (static_cast<size_t>(end_ - p_) < n) {
      ok_ = false;
      return;
    }
    p_ += n;
  }

  const uint8_t* p_;
  const uint8_t* end_;
  bool ok_ = true;
};

// The fields of one ServerEnvelope the benchmarks look at.
struct EnvelopeView {
  uint64_t sequence_id = 0;
  std::string_view topic;
  std::string_view data;  // GroupMessage.data; empty for other payload kinds
};

struct TargetView {
  std::string_view topic;
  uint64_t through_sequence_id = 0;
};

struct FrameView {
  enum class Kind { kStarted, kApplied, kMessages, kKeepalive, kPing, kPong, kUnknown };
  Kind kind = Kind::kUnknown;
  uint64_t id = 0;  // Applied.id, Ping/Pong nonce
  uint32_t keepalive_interval_ms = 0;
  std::vector<TargetView> targets;  // Started.targets (static), Applied.added_targets (bidi)
  std::vector<EnvelopeView> envelopes;
};

// Decodes a SubscribeStaticResponse (`kind` static) or SubscribeResponse (bidi) into `out`
// (cleared first). False when the bytes are not a well-formed frame with one response set.
bool DecodeFrame(StreamKind kind, std::string_view bytes, FrameView* out);

}  // namespace xb::bench
