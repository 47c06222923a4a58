#include "telemetry/span.h"

#include <utility>

#include "base/check.h"
#include "telemetry/tracer.h"

namespace xb::telemetry {

std::string_view IntAttributeName(IntAttribute attribute) {
  switch (attribute) {
    case IntAttribute::kGrpcStatusCode:
      return "rpc.grpc.status_code";
    case IntAttribute::kRequestBytes:
      return "xmtp.request.body_bytes";
    case IntAttribute::kResponseBytes:
      return "xmtp.response.body_bytes";
    case IntAttribute::kEnvelopes:
      return "xmtp.envelopes";
    case IntAttribute::kTopics:
      return "xmtp.topics";
    case IntAttribute::kRows:
      return "xmtp.rows";
  }
  XB_CHECK(false);
  return {};
}

Span& Span::operator=(Span&& other) noexcept {
  if (this != &other) {
    End();
    tracer_ = std::exchange(other.tracer_, nullptr);
    recording_ = std::exchange(other.recording_, false);
    start_ = other.start_;
    data_ = std::move(other.data_);
  }
  return *this;
}

void Span::Set(IntAttribute attribute, int64_t value) {
  const auto i = static_cast<size_t>(attribute);
  XB_CHECK(i < kIntAttributeCount);
  data_.ints[i] = value;
  data_.ints_set |= 1u << i;
}

void Span::End() {
  // An inert, moved-from or ended span reads no clock: every Span's destructor and move
  // assignment end it, and most of those spans have nothing left to end.
  if (tracer_ != nullptr) {
    EndAt(std::chrono::steady_clock::now());
  }
}

void Span::EndAt(std::chrono::steady_clock::time_point end) {
  if (tracer_ == nullptr) {
    return;
  }
  tracer_->Finish(*this, end);
  tracer_ = nullptr;
  recording_ = false;
}

}  // namespace xb::telemetry
