// gRPC-Web specifics (API.md 1.1): text mode's base64 body in both directions, the trailer frame
// (flag 0x80, HTTP/1-style header lines), and grpc-message percent-encoding shared by all modes.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace xb::rpc {

// Incremental decoder for a gRPC-Web text body: accepts chunks of any length, padded groups in
// the middle of the stream (concatenated base64 segments) and ignores nothing else.
class Base64StreamDecoder {
 public:
  Status Feed(std::string_view text, std::string& out);
  // True when the input ended on a whole 4-character group.
  bool aligned() const { return fill_ == 0; }

 private:
  char group_[4] = {};
  int fill_ = 0;
};

// Percent-encodes a grpc-message value (gRPC over HTTP/2 spec: bytes outside 0x20-0x7E and '%').
std::string PercentEncode(std::string_view text);

// Header lines of a trailer frame: "grpc-status: N\r\ngrpc-message: ...\r\n" (+ details).
std::string TrailerBlock(const Status& status);

}  // namespace xb::rpc
