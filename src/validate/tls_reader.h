// A bounds-checked reader for the TLS presentation language as RFC 9420 uses it: big-endian
// integers and variable-length vectors with the RFC 9420 §2.1.2 length prefix (API.md 2.16,
// VALIDATION.md 2.1). Reads never go past the end of the input; every failure is an
// INVALID_ARGUMENT status with a fixed message (never input bytes).
//
// The reader borrows its input: the bytes must outlive the reader and every string_view it
// returns. Not thread-safe (one parse, one reader); never suspends.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "base/status.h"

namespace xb::validate {

// Largest length a §2.1.2 prefix can carry (4-byte form, 30 bits).
inline constexpr uint32_t kMaxVectorLength = (uint32_t{1} << 30) - 1;

// Where a field sits in a parsed input: `size` bytes from `offset`. Offsets survive copies of the
// input, unlike string_views.
struct ByteRange {
  size_t offset = 0;
  size_t size = 0;

  std::string_view In(std::string_view input) const { return input.substr(offset, size); }
  friend bool operator==(const ByteRange&, const ByteRange&) = default;
};

class TlsReader {
 public:
  explicit TlsReader(std::string_view input) : input_(input) {}

  Result<uint8_t> ReadUint8();
  Result<uint16_t> ReadUint16();
  Result<uint32_t> ReadUint32();
  Result<uint64_t> ReadUint64();

  // The §2.1.2 length prefix alone. Fails on a `11` prefix, a prefix longer than the length
  // needs (minimal encoding is required), or a prefix cut off by the end of the input. It does not
  // check that the vector body fits.
  Result<size_t> ReadVectorLength();

  // An `opaque x<V>`: prefix plus body. Fails as ReadVectorLength, or when the body runs past the
  // end of the input. The view points into the input.
  Result<std::string_view> ReadOpaque();

  // A vector of non-byte elements (`T x<V>`), read the way the reference parser reads it
  // (VALIDATION.md 2.1 quirk): after the prefix, `read_element(*this)` is called until the bytes
  // consumed since the prefix reach or pass the declared length. An element that straddles the
  // declared end is not an error; it sets non_canonical() and parsing continues after it.
  // The declared body must fit in the input. `read_element` returns Status and must consume at
  // least one byte when it succeeds (every RFC 9420 element does); otherwise this fails.
  template <typename ReadElement>
  Status ReadElements(ReadElement&& read_element);

  // Bytes read so far, from the start of the input.
  size_t position() const { return position_; }
  size_t remaining() const { return input_.size() - position_; }
  bool empty() const { return remaining() == 0; }
  std::string_view input() const { return input_; }
  // The range [from, position()).
  ByteRange RangeSince(size_t from) const { return ByteRange{from, position_ - from}; }
  // The range of `view`, which must point into input() (as every view this reader returns does).
  ByteRange RangeOf(std::string_view view) const {
    return ByteRange{static_cast<size_t>(view.data() - input_.data()), view.size()};
  }

  // True once any element vector read by this reader overran its declared length, or a caller
  // called MarkNonCanonical. Such input parses, but re-serializing what was parsed would not give
  // the same bytes; inside a signed structure that makes the reference's signature check fail
  // (VALIDATION.md 2.1, 4.3).
  bool non_canonical() const { return non_canonical_; }
  void MarkNonCanonical() { non_canonical_ = true; }

 private:
  Result<std::string_view> Take(size_t n);

  std::string_view input_;
  size_t position_ = 0;
  bool non_canonical_ = false;
};

template <typename ReadElement>
Status TlsReader::ReadElements(ReadElement&& read_element) {
  XB_ASSIGN_OR_RETURN(const size_t length, ReadVectorLength());
  if (length > remaining()) {
    return InvalidArgument("vector runs past the end of the input");
  }
  const size_t start = position_;
  while (position_ - start < length) {
    const size_t before = position_;
    XB_RETURN_IF_ERROR(read_element(*this));
    if (position_ == before) {
      return InvalidArgument("vector element is empty");
    }
  }
  if (position_ - start != length) {
    non_canonical_ = true;
  }
  return Status::Ok();
}

}  // namespace xb::validate
