#include "rpc/grpc_web.h"

#include <array>
#include <cstdint>

#include "base/encoding.h"

namespace xb::rpc {
namespace {

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

constexpr std::array<int8_t, 256> MakeDecodeTable() {
  std::array<int8_t, 256> table{};
  for (auto& v : table) {
    v = -1;
  }
  for (int i = 0; i < 64; ++i) {
    table[static_cast<uint8_t>(kAlphabet[i])] = static_cast<int8_t>(i);
  }
  return table;
}
constexpr std::array<int8_t, 256> kDecode = MakeDecodeTable();

}  // namespace

Status Base64StreamDecoder::Feed(std::string_view text, std::string& out) {
  for (char c : text) {
    group_[fill_++] = c;
    if (fill_ < 4) {
      continue;
    }
    fill_ = 0;
    int values[4];
    int pads = 0;
    for (int k = 0; k < 4; ++k) {
      if (group_[k] == '=') {
        // Padding only at the end of a group: "xx==" or "xxx=".
        if (k < 2) {
          return InvalidArgument("request is malformed");
        }
        ++pads;
        values[k] = 0;
        continue;
      }
      if (pads > 0) {
        return InvalidArgument("request is malformed");
      }
      values[k] = kDecode[static_cast<uint8_t>(group_[k])];
      if (values[k] < 0) {
        return InvalidArgument("request is malformed");
      }
    }
    const uint32_t v = (values[0] << 18) | (values[1] << 12) | (values[2] << 6) | values[3];
    out.push_back(static_cast<char>(v >> 16));
    if (pads < 2) {
      out.push_back(static_cast<char>(v >> 8));
    }
    if (pads < 1) {
      out.push_back(static_cast<char>(v));
    }
  }
  return Status::Ok();
}

std::string PercentEncode(std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size());
  for (char ch : text) {
    const auto c = static_cast<uint8_t>(ch);
    if (c >= 0x20 && c <= 0x7E && c != '%') {
      out.push_back(ch);
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

std::string TrailerBlock(const Status& status) {
  std::string out = "grpc-status: ";
  out += std::to_string(static_cast<int>(status.code()));
  out += "\r\n";
  if (!status.message().empty()) {
    out += "grpc-message: ";
    out += PercentEncode(status.message());
    out += "\r\n";
  }
  if (!status.details().empty()) {
    out += "grpc-status-details-bin: ";
    out += Base64Unpadded(status.details());
    out += "\r\n";
  }
  return out;
}

}  // namespace xb::rpc
