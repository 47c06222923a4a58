// libFuzzer target for the gRPC-Web helpers (src/rpc/grpc_web.h): base64 text bodies,
// grpc-message percent-encoding and the trailer frame's header block.
//
// Input layout: byte 0 picks a status code, byte 1 a split point, then Input::ChunkSizes(); the
// rest is the payload x.
//
// Invariants checked:
//  - Base64StreamDecoder decodes Base64(x), cut into any chunks, back to x, ending aligned;
//    also two padded segments back to back (Base64(a) + Base64(b) gives a + b);
//  - Base64(x) is Base64Unpadded(x) plus '=' padding, 4 * ceil(|x| / 3) long;
//  - arbitrary text never crashes the decoder, fails only with INVALID_ARGUMENT, yields at most
//    3 bytes per 4 characters, and gives the same result however it is chunked;
//  - PercentEncode(x) has only bytes 0x20-0x7E, and decoding its %XX escapes gives x back;
//  - TrailerBlock(status) is "name: value\r\n" lines with no bare CR or LF inside a value, every
//    value printable, grpc-status the numeric code, grpc-message present exactly when the message
//    is non-empty (and decoding back to it), grpc-status-details-bin decoding back to the details.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/encoding.h"
#include "base/status.h"
#include "fuzz_input.h"
#include "rpc/grpc_web.h"

namespace {

using xb::Status;
using xb::StatusCode;
using xb::fuzz::Input;
using xb::rpc::Base64StreamDecoder;

struct Decoded {
  std::string bytes;
  Status status;
  bool aligned = false;
};

// Feeds the chunks in order, stopping at the first failure (as the server does).
Decoded DecodeBase64(const std::vector<std::string_view>& chunks) {
  Base64StreamDecoder decoder;
  Decoded d;
  for (std::string_view chunk : chunks) {
    d.status = decoder.Feed(chunk, d.bytes);
    if (!d.status.ok()) {
      break;
    }
  }
  d.aligned = decoder.aligned();
  return d;
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') {
    return c - '0';
  }
  if (c >= 'A' && c <= 'F') {
    return c - 'A' + 10;
  }
  return -1;  // PercentEncode writes upper-case hex only
}

// Undoes PercentEncode; false when an escape is malformed.
bool PercentDecode(std::string_view text, std::string& out) {
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out.push_back(text[i]);
      continue;
    }
    if (i + 2 >= text.size()) {
      return false;
    }
    const int hi = HexValue(text[i + 1]);
    const int lo = HexValue(text[i + 2]);
    if (hi < 0 || lo < 0) {
      return false;
    }
    out.push_back(static_cast<char>(hi * 16 + lo));
    i += 2;
  }
  return true;
}

bool Printable(std::string_view text) {
  for (char ch : text) {
    const auto c = static_cast<uint8_t>(ch);
    if (c < 0x20 || c > 0x7E) {
      return false;
    }
  }
  return true;
}

void CheckBase64(std::string_view x, size_t split, const std::vector<size_t>& sizes) {
  const std::string encoded = xb::Base64(x);
  const std::string unpadded = xb::Base64Unpadded(x);
  XB_FUZZ_CHECK(encoded.size() == (x.size() + 2) / 3 * 4);
  XB_FUZZ_CHECK(encoded.substr(0, unpadded.size()) == unpadded);
  XB_FUZZ_CHECK(encoded.find_first_not_of('=', unpadded.size()) == std::string::npos);
  XB_FUZZ_CHECK(encoded.size() - unpadded.size() <= 2);

  const Decoded round = DecodeBase64(xb::fuzz::Split(encoded, sizes));
  XB_FUZZ_CHECK(round.status.ok());
  XB_FUZZ_CHECK(round.aligned);
  XB_FUZZ_CHECK(round.bytes == x);

  // Concatenated padded segments, as a client that encodes message by message sends them.
  const std::string_view a = x.substr(0, split);
  const std::string_view b = x.substr(split);
  const std::string two = xb::Base64(a) + xb::Base64(b);
  const Decoded joined = DecodeBase64(xb::fuzz::Split(two, sizes));
  XB_FUZZ_CHECK(joined.status.ok());
  XB_FUZZ_CHECK(joined.aligned);
  XB_FUZZ_CHECK(joined.bytes == x);
}

void CheckArbitraryText(std::string_view text, const std::vector<size_t>& sizes) {
  const Decoded chunked = DecodeBase64(xb::fuzz::Split(text, sizes));
  const Decoded whole = DecodeBase64({text});
  XB_FUZZ_CHECK(chunked.status.ok() || chunked.status.code() == StatusCode::kInvalidArgument);
  XB_FUZZ_CHECK(chunked.status.code() == whole.status.code());
  XB_FUZZ_CHECK(chunked.bytes.size() <= text.size() / 4 * 3);
  if (whole.status.ok()) {
    XB_FUZZ_CHECK(chunked.bytes == whole.bytes);
    XB_FUZZ_CHECK(chunked.aligned == whole.aligned);
    XB_FUZZ_CHECK(whole.aligned == (text.size() % 4 == 0));
    // Valid text re-encodes to itself, modulo where padding sits.
    if (whole.aligned && text.find('=') == std::string_view::npos) {
      XB_FUZZ_CHECK(xb::Base64(whole.bytes) == text);
    }
  }
}

void CheckPercentEncode(std::string_view x) {
  const std::string encoded = xb::rpc::PercentEncode(x);
  XB_FUZZ_CHECK(Printable(encoded));
  std::string decoded;
  XB_FUZZ_CHECK(PercentDecode(encoded, decoded));
  XB_FUZZ_CHECK(decoded == x);
}

void CheckTrailerBlock(StatusCode code, std::string_view message, std::string_view details) {
  Status status(code, std::string(message));
  if (!details.empty()) {
    status.set_details(std::string(details));
  }
  const std::string block = xb::rpc::TrailerBlock(status);

  bool saw_status = false;
  bool saw_message = false;
  bool saw_details = false;
  std::string_view rest = block;
  while (!rest.empty()) {
    const size_t end = rest.find("\r\n");
    XB_FUZZ_CHECK(end != std::string_view::npos);  // every line ends with CRLF
    const std::string_view line = rest.substr(0, end);
    rest.remove_prefix(end + 2);
    // No bare CR or LF anywhere inside the line.
    XB_FUZZ_CHECK(line.find('\r') == std::string_view::npos);
    XB_FUZZ_CHECK(line.find('\n') == std::string_view::npos);
    const size_t colon = line.find(": ");
    XB_FUZZ_CHECK(colon != std::string_view::npos);
    const std::string_view name = line.substr(0, colon);
    const std::string_view value = line.substr(colon + 2);
    XB_FUZZ_CHECK(Printable(value));
    if (name == "grpc-status") {
      XB_FUZZ_CHECK(!saw_status);
      saw_status = true;
      XB_FUZZ_CHECK(value == std::to_string(static_cast<int>(code)));
    } else if (name == "grpc-message") {
      XB_FUZZ_CHECK(!saw_message);
      saw_message = true;
      std::string decoded;
      XB_FUZZ_CHECK(PercentDecode(value, decoded));
      XB_FUZZ_CHECK(decoded == message);
    } else if (name == "grpc-status-details-bin") {
      XB_FUZZ_CHECK(!saw_details);
      saw_details = true;
      XB_FUZZ_CHECK(value.find('=') == std::string_view::npos);  // unpadded
      // Restore the padding and decode.
      std::string padded(value);
      padded.append((4 - padded.size() % 4) % 4, '=');
      const Decoded d = DecodeBase64({std::string_view(padded)});
      XB_FUZZ_CHECK(d.status.ok());
      XB_FUZZ_CHECK(d.bytes == details);
    } else {
      XB_FUZZ_CHECK(false && "unexpected trailer name");
    }
  }
  XB_FUZZ_CHECK(saw_status);
  XB_FUZZ_CHECK(saw_message == !message.empty());
  XB_FUZZ_CHECK(saw_details == !details.empty());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Input in(data, size);
  const auto code = static_cast<StatusCode>(in.Byte() % xb::kStatusCodeCount);
  const size_t split_byte = in.Byte();
  const std::vector<size_t> sizes = in.ChunkSizes();
  const std::string_view x = in.rest();
  const size_t split = x.empty() ? 0 : split_byte % (x.size() + 1);

  CheckBase64(x, split, sizes);
  CheckArbitraryText(x, sizes);
  CheckPercentEncode(x);
  CheckTrailerBlock(code, x.substr(0, split), x.substr(split));
  CheckTrailerBlock(code, x, {});
  return 0;
}
