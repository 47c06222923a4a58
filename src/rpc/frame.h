// gRPC length-prefixed message framing (gRPC over HTTP/2, and the gRPC-Web body): one flag byte,
// a 4-byte big-endian length, the payload. The decoder is incremental: bytes arrive in arbitrary
// chunks and whole messages come out.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace xb::rpc {

inline constexpr size_t kFrameHeaderBytes = 5;
inline constexpr uint8_t kFlagCompressed = 0x01;
inline constexpr uint8_t kFlagTrailer = 0x80;  // gRPC-Web trailer frame

// Appends one frame (header + payload) to `out`.
void AppendFrame(std::string& out, std::string_view payload, uint8_t flags = 0);

class FrameDecoder {
 public:
  // A message whose declared length exceeds `max_message_bytes` fails with OUT_OF_RANGE as soon as
  // its header is read, before its payload is buffered (API-282, limits.max_request_bytes).
  explicit FrameDecoder(uint64_t max_message_bytes) : max_message_bytes_(max_message_bytes) {}

  // Consumes `data`, appending every completed message payload to `out`. After an error the
  // decoder stays failed and returns the same status.
  Status Feed(std::string_view data, std::vector<std::string>& out);

  // True when a frame has begun but not completed (a body that ends here is truncated).
  bool mid_frame() const { return header_fill_ > 0 || in_payload_; }
  // Bytes of the frame in progress held here.
  size_t buffered() const { return header_fill_ + payload_.size(); }

 private:
  uint64_t max_message_bytes_;
  char header_[kFrameHeaderBytes] = {};
  size_t header_fill_ = 0;
  bool in_payload_ = false;
  size_t remaining_ = 0;
  std::string payload_;
  Status failed_;
};

}  // namespace xb::rpc
