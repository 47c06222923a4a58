#include "h2_call.h"

#include <nghttp2/nghttp2.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "h2_connection.h"

namespace xb::bench {
namespace {

constexpr uint32_t kMaxMessage = 64u << 20;  // as grpc++'s MaxReceiveMessageSize here
constexpr size_t kPrefix = 5;                // gRPC message prefix: flag, 4-byte length

// Appends `message` with its gRPC prefix to `out`.
void AppendFramed(std::string& out, std::string_view message) {
  const auto n = static_cast<uint32_t>(message.size());
  const char prefix[kPrefix] = {0, static_cast<char>(n >> 24), static_cast<char>(n >> 16),
                                static_cast<char>(n >> 8), static_cast<char>(n)};
  out.append(prefix, kPrefix);
  out.append(message);
}

uint32_t BigEndian32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}

// grpc-message is percent-encoded (PROTOCOL-HTTP2: "Status-Message").
std::string PercentDecode(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i] == '%' && i + 2 < v.size() && hex(v[i + 1]) >= 0 && hex(v[i + 2]) >= 0) {
      out.push_back(static_cast<char>(hex(v[i + 1]) * 16 + hex(v[i + 2])));
      i += 2;
    } else {
      out.push_back(v[i]);
    }
  }
  return out;
}

// A RST_STREAM code as grpc++ reports it (PROTOCOL-HTTP2, "Errors").
grpc::Status RstStatus(uint32_t code) {
  const std::string what = "RST_STREAM with error code " + std::to_string(code);
  switch (code) {
    case NGHTTP2_REFUSED_STREAM:
      return grpc::Status(grpc::StatusCode::UNAVAILABLE, what);
    case NGHTTP2_CANCEL:
      return grpc::Status(grpc::StatusCode::CANCELLED, what);
    case NGHTTP2_ENHANCE_YOUR_CALM:
      return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, what);
    case NGHTTP2_INADEQUATE_SECURITY:
      return grpc::Status(grpc::StatusCode::PERMISSION_DENIED, what);
    default:
      return grpc::Status(grpc::StatusCode::INTERNAL, what);
  }
}

// An HTTP status without grpc-status, as grpc++ maps it (http-grpc-status-mapping.md).
grpc::Status HttpStatus(int http) {
  const std::string what = "HTTP status " + std::to_string(http);
  switch (http) {
    case 400:
      return grpc::Status(grpc::StatusCode::INTERNAL, what);
    case 401:
      return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, what);
    case 403:
      return grpc::Status(grpc::StatusCode::PERMISSION_DENIED, what);
    case 404:
      return grpc::Status(grpc::StatusCode::UNIMPLEMENTED, what);
    case 429:
    case 502:
    case 503:
    case 504:
      return grpc::Status(grpc::StatusCode::UNAVAILABLE, what);
    default:
      return grpc::Status(grpc::StatusCode::UNKNOWN, what);
  }
}

}  // namespace

void H2Call::SetRequest(std::string_view message, RequestEnd end) {
  body_.clear();  // keeps its capacity: a reused call allocates nothing here
  body_off_ = 0;
  AppendFramed(body_, message);
  body_end_ = end == RequestEnd::kHalfClose;
}

void H2Call::AppendRequest(std::string_view message) {
  AppendFramed(body_, message);
  if (conn_ != nullptr) conn_->resume_.push_back(id_);  // Flush resumes the deferred body
}

void H2Call::Reset() {
  conn_ = nullptr;
  id_ = 0;
  headers_sent_ = false;
  body_.clear();
  body_off_ = 0;
  body_end_ = true;
  prefix_len_ = 0;
  need_ = 0;
  partial_.clear();
  broken_ = nullptr;
  http_status_ = 0;
  grpc_status_ = -1;
  grpc_message_.clear();
}

ssize_t H2Call::ReadBody(uint8_t* buf, size_t length, uint32_t* data_flags) {
  const size_t n = std::min(length, body_.size() - body_off_);
  std::memcpy(buf, body_.data() + body_off_, n);
  body_off_ += n;
  if (body_off_ == body_.size()) {
    body_.clear();
    body_off_ = 0;
    if (body_end_) {
      *data_flags |= NGHTTP2_DATA_FLAG_EOF;
    } else if (n == 0) {
      // Bidi: the request side stays open (API-259) until there is a Pong to send.
      return NGHTTP2_ERR_DEFERRED;
    }
  }
  return static_cast<ssize_t>(n);
}

void H2Call::OnHeader(std::string_view name, std::string_view value) {
  if (name == ":status") {
    http_status_ = std::atoi(std::string(value).c_str());
  } else if (name == "grpc-status") {
    const int code = std::atoi(std::string(value).c_str());
    const bool valid = !value.empty() && value.find_first_not_of("0123456789") == value.npos &&
                       code <= grpc::StatusCode::UNAUTHENTICATED;
    grpc_status_ = valid ? code : grpc::StatusCode::UNKNOWN;
  } else if (name == "grpc-message") {
    grpc_message_ = PercentDecode(value);
  }
}

void H2Call::OnData(const uint8_t* p, size_t n, Clock::time_point now) {
  while (n > 0 && broken_ == nullptr) {
    if (prefix_len_ == 0 && n >= kPrefix) {
      // At a message boundary: a message that lies whole in this chunk is decoded in place.
      const uint32_t len = BigEndian32(p + 1);
      if (p[0] == 0 && n - kPrefix >= len) {
        OnResponseMessage(std::string_view(reinterpret_cast<const char*>(p + kPrefix), len), now);
        p += kPrefix + len;
        n -= kPrefix + len;
        continue;
      }
    }
    if (prefix_len_ < kPrefix) {
      const size_t take = std::min(kPrefix - prefix_len_, n);
      std::memcpy(prefix_ + prefix_len_, p, take);
      prefix_len_ += take;
      p += take;
      n -= take;
      if (prefix_len_ < kPrefix) return;
      need_ = BigEndian32(prefix_ + 1);
      if (prefix_[0] != 0 || need_ > kMaxMessage) {
        broken_ = prefix_[0] != 0 ? "a compressed message (none was negotiated)"
                                  : "a message over 64 MiB";
        OnFramingError(broken_);
        return;
      }
      partial_.clear();
      partial_.reserve(need_);
    }
    const size_t take = std::min<size_t>(need_, n);
    partial_.append(reinterpret_cast<const char*>(p), take);
    need_ -= static_cast<uint32_t>(take);
    p += take;
    n -= take;
    if (need_ == 0) {
      prefix_len_ = 0;
      OnResponseMessage(partial_, now);
    }
  }
}

grpc::Status H2Call::EndStatus(uint32_t error_code) const {
  if (broken_ != nullptr) return grpc::Status(grpc::StatusCode::INTERNAL, broken_);
  if (grpc_status_ >= 0) {
    if (grpc_status_ == grpc::StatusCode::OK && prefix_len_ > 0) {
      return grpc::Status(grpc::StatusCode::INTERNAL, "the stream ended inside a message");
    }
    return grpc::Status(static_cast<grpc::StatusCode>(grpc_status_), grpc_message_);
  }
  if (error_code != NGHTTP2_NO_ERROR) return RstStatus(error_code);
  if (http_status_ != 0 && http_status_ != 200) return HttpStatus(http_status_);
  return grpc::Status(grpc::StatusCode::UNKNOWN, "the stream ended without grpc-status");
}

}  // namespace xb::bench
