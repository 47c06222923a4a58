// libFuzzer target for the PROXY protocol v2 header (src/net/proxy_header.h), the first bytes a
// connection sends with server.proxy_protocol on, read as the listener reads them: the fixed
// part, then exactly the length it declares.
//
// Invariants checked:
//  - a valid fixed part declares a whole header of 16 to kProxyHeaderMaxBytes bytes;
//  - ParseProxyHeader accepts only a header whose fixed part is valid and whose size is exactly
//    the declared one;
//  - a client address is given only for the PROXY command over TCP on IPv4 or IPv6, and one from
//    IPv4 is mapped into IPv6 (::ffff:a.b.c.d) with the header's four source bytes.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz_input.h"
#include "net/proxy_header.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using xb::net::kProxyHeaderFixedBytes;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const xb::net::ProxyHeader whole = xb::net::ParseProxyHeader(input);
  if (size < kProxyHeaderFixedBytes) {
    XB_FUZZ_CHECK(!xb::net::ParseProxyHeaderFixed(input).valid);
    XB_FUZZ_CHECK(!whole.valid);
    return 0;
  }
  const xb::net::ProxyHeaderFixed fixed =
      xb::net::ParseProxyHeaderFixed(input.substr(0, kProxyHeaderFixedBytes));
  if (fixed.valid) {
    XB_FUZZ_CHECK(fixed.total_bytes >= kProxyHeaderFixedBytes);
    XB_FUZZ_CHECK(fixed.total_bytes <= xb::net::kProxyHeaderMaxBytes);
  }
  XB_FUZZ_CHECK(!whole.valid || (fixed.valid && size == fixed.total_bytes));
  if (whole.source.known) {
    XB_FUZZ_CHECK(whole.valid);
    const uint8_t command = data[12] & 0x0F;
    const uint8_t family = data[13] >> 4;
    XB_FUZZ_CHECK(command == 0x1 && (data[13] & 0x0F) == 0x1);
    XB_FUZZ_CHECK(family == 0x1 || family == 0x2);
    if (family == 0x1) {
      for (size_t i = 0; i < 10; ++i) {
        XB_FUZZ_CHECK(whole.source.bytes[i] == 0);
      }
      XB_FUZZ_CHECK(whole.source.bytes[10] == 0xFF && whole.source.bytes[11] == 0xFF);
      for (size_t i = 0; i < 4; ++i) {
        XB_FUZZ_CHECK(whole.source.bytes[12 + i] == data[16 + i]);
      }
    }
  }
  return 0;
}
