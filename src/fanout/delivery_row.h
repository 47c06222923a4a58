// A row on its way to streams: read once (by the tailer or a catch-up fetch), encoded once as a
// ServerEnvelope, shared immutably by every session that delivers it (ARC-073).
//
// Live rows have a second encoding for the V3 server streams (docs/v3-api.md G3): the row as one
// xmtp.mls.api.v1 GroupMessage or WelcomeMessage. The tailer does not build it (an xmtp.backend.v1
// stream must not pay for it); the first V3 session that delivers the row builds it from the
// ServerEnvelope bytes, once (std::call_once), and every other V3 session shares it as the v1
// sessions share `encoded`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "store/store.h"

namespace xb::fanout {

// Appends a row's second encoding, built from its ServerEnvelope bytes, to `out`; false when the
// row breaks an invariant (nothing useful appended). A plain function, so that every session of a
// process builds a row's second encoding the same way (the first one to ask builds it for all).
// Thread-safe; never suspends.
using RowTranscoder = bool (*)(std::string_view server_envelope, std::string* out);

struct DeliveryRow {
  int64_t sequence_id = 0;
  std::string topic;
  std::string encoded;  // the ServerEnvelope wire bytes

  // The row's second encoding, built by `transcode` from `encoded` on the first call and shared
  // afterwards; nullptr when `transcode` failed. Any thread; the first caller pays the build,
  // the others wait for it. The row must no longer be written (it is shared).
  const std::string* Transcoded(RowTranscoder transcode) const {
    std::call_once(second_once_, [&] { second_ok_ = transcode(encoded, &second_); });
    return second_ok_ ? &second_ : nullptr;
  }

 private:
  mutable std::once_flag second_once_;
  mutable std::string second_;
  mutable bool second_ok_ = false;
};

using RowPtr = std::shared_ptr<const DeliveryRow>;

// The bytes an XIP-83 stream puts around a row's V3 encoding to make it a response message of its
// own (docs/v3-api.md 4.3): its nesting, the field of its kind and the lane it belongs to.
struct RowFraming {
  static constexpr size_t kMaxHead = 40;
  static constexpr size_t kMaxTail = 12;
  char head[kMaxHead];
  uint8_t head_size = 0;
  char tail[kMaxTail];
  uint8_t tail_size = 0;
  size_t size() const { return size_t{head_size} + tail_size; }
};
// Fills `out` for a row of `topic` whose encoding is `row_bytes` long, in lane `lane` (a wave's
// mutate_id, 0 for live rows). A plain function; thread-safe.
using RowWrap = void (*)(std::string_view topic, size_t row_bytes, uint64_t lane, RowFraming* out);

// Appends a stored row's encoding (the ServerEnvelope bytes for xmtp.backend.v1 streams) to
// `encoded`; false when the row breaks an invariant. Supplied by api/ (the wire schema lives
// there); thread-safe. Takes the row in place (a catch-up wave encodes straight from the engine's
// buffers); a StoredEnvelope is passed as StoredEnvelopeView::Of(row).
using RowEncoder = std::function<bool(const store::StoredEnvelopeView& row, std::string* encoded)>;

}  // namespace xb::fanout
