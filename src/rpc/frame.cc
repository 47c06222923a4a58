#include "rpc/frame.h"

#include <algorithm>

namespace xb::rpc {

namespace {
constexpr size_t kInitialReserve = 64 * 1024;
}  // namespace

void AppendFrame(std::string& out, std::string_view payload, uint8_t flags) {
  const auto n = static_cast<uint32_t>(payload.size());
  const char header[kFrameHeaderBytes] = {static_cast<char>(flags), static_cast<char>(n >> 24),
                                          static_cast<char>(n >> 16), static_cast<char>(n >> 8),
                                          static_cast<char>(n)};
  out.append(header, kFrameHeaderBytes);
  out.append(payload);
}

Status FrameDecoder::Feed(std::string_view data, std::vector<std::string>& out) {
  if (!failed_.ok()) {
    return failed_;
  }
  while (!data.empty()) {
    if (!in_payload_) {
      const size_t take = std::min(kFrameHeaderBytes - header_fill_, data.size());
      std::copy_n(data.data(), take, header_ + header_fill_);
      header_fill_ += take;
      data.remove_prefix(take);
      if (header_fill_ < kFrameHeaderBytes) {
        break;
      }
      header_fill_ = 0;
      const auto flags = static_cast<uint8_t>(header_[0]);
      const uint32_t length = (static_cast<uint32_t>(static_cast<uint8_t>(header_[1])) << 24) |
                              (static_cast<uint32_t>(static_cast<uint8_t>(header_[2])) << 16) |
                              (static_cast<uint32_t>(static_cast<uint8_t>(header_[3])) << 8) |
                              static_cast<uint32_t>(static_cast<uint8_t>(header_[4]));
      if (flags & kFlagCompressed) {
        failed_ = Unimplemented("compressed request messages are not supported");
        return failed_;
      }
      if (flags != 0) {
        failed_ = Status(StatusCode::kInternal, "request frame has unknown flags");
        return failed_;
      }
      if (length > max_message_bytes_) {
        failed_ = OutOfRange("request message is larger than the request budget");
        return failed_;
      }
      in_payload_ = true;
      remaining_ = length;
      payload_.clear();
      // Reserve what a small message needs: a header alone never reserves a budget-sized
      // message.
      payload_.reserve(std::min<size_t>(length, kInitialReserve));
    }
    const size_t take = std::min(remaining_, data.size());
    if (payload_.size() + take > payload_.capacity()) {
      // Past the first 64 KiB the sender is sending: reserve the declared rest at once. Growing
      // by doubling copied the message again at each step, the last copy (16 MB of a 26 MB
      // message, into pages never touched) stalling the I/O thread for tens of milliseconds;
      // reserved pages become resident only as the bytes arrive.
      payload_.reserve(payload_.size() + remaining_);
    }
    payload_.append(data.data(), take);
    data.remove_prefix(take);
    remaining_ -= take;
    if (remaining_ == 0) {
      in_payload_ = false;
      out.push_back(std::move(payload_));
      payload_ = std::string();
    }
  }
  return Status::Ok();
}

}  // namespace xb::rpc
