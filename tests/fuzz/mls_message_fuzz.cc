// libFuzzer target for the MLS framing decoder of group messages (validate/mls_message.h,
// VALIDATION.md 2): MLSMessage header, PrivateMessage, and the full PublicMessage body parser
// (proposals, commits, update paths, nested KeyPackages and LeafNodes) on untrusted bytes.
//
// Input layout: byte 0 is how many extra bytes to append as a trailer (0-255, cut to what the
// input has), the rest is GroupMessage.data; the trailer is the last bytes of the input repeated.
// Seeds (bench/fuzz.sh) are the VALIDATION.md 8.2 group-message vectors.
//
// Invariants checked:
//  - no crash, no sanitizer report, whatever the bytes;
//  - a failure is INVALID_ARGUMENT with a printable message;
//  - a parsed message is wire format 1 or 2 with a content type 1-3, and its length lies
//    between the 4-byte header and the input size;
//  - the message alone (trailing bytes cut) parses to the same fields and length, and the
//    message followed by any other trailer does too (API-230: trailing bytes are accepted).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_input.h"
#include "validate/mls_message.h"

namespace {

using xb::validate::ParsedGroupMessage;

bool Printable(std::string_view text) {
  for (char c : text) {
    if (c < 0x20 || c > 0x7e) {
      return false;
    }
  }
  return true;
}

void ExpectSame(const ParsedGroupMessage& a, const ParsedGroupMessage& b) {
  XB_FUZZ_CHECK(a.wire_format == b.wire_format);
  XB_FUZZ_CHECK(a.group_id == b.group_id);
  XB_FUZZ_CHECK(a.epoch == b.epoch);
  XB_FUZZ_CHECK(a.content_type == b.content_type);
  XB_FUZZ_CHECK(a.message_bytes == b.message_bytes);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  xb::fuzz::Input input(data, size);
  const size_t trailer_bytes = input.Byte();
  const std::string_view message = input.rest();

  auto parsed = xb::validate::ParseGroupMessageData(message);
  if (!parsed.ok()) {
    XB_FUZZ_CHECK(parsed.status().code() == xb::StatusCode::kInvalidArgument);
    XB_FUZZ_CHECK(Printable(parsed.status().message()));
    return 0;
  }
  using xb::validate::ContentType;
  using xb::validate::WireFormat;
  XB_FUZZ_CHECK(parsed->wire_format == WireFormat::kPublicMessage ||
                parsed->wire_format == WireFormat::kPrivateMessage);
  XB_FUZZ_CHECK(parsed->content_type == ContentType::kApplication ||
                parsed->content_type == ContentType::kProposal ||
                parsed->content_type == ContentType::kCommit);
  XB_FUZZ_CHECK(parsed->message_bytes >= 4 && parsed->message_bytes <= message.size());

  const std::string_view exact = message.substr(0, parsed->message_bytes);
  auto alone = xb::validate::ParseGroupMessageData(exact);
  XB_FUZZ_CHECK(alone.ok());
  ExpectSame(*alone, *parsed);

  std::string with_trailer(exact);
  const std::string_view tail =
      message.substr(message.size() - std::min(trailer_bytes, message.size()));
  with_trailer.append(tail);
  with_trailer.push_back('\x7f');
  auto trailed = xb::validate::ParseGroupMessageData(with_trailer);
  XB_FUZZ_CHECK(trailed.ok());
  ExpectSame(*trailed, *parsed);
  return 0;
}
