#include "validate/tls_reader.h"

namespace xb::validate {

Result<std::string_view> TlsReader::Take(size_t n) {
  if (n > remaining()) {
    return InvalidArgument("input ends too early");
  }
  std::string_view out = input_.substr(position_, n);
  position_ += n;
  return out;
}

Result<uint8_t> TlsReader::ReadUint8() {
  XB_ASSIGN_OR_RETURN(const std::string_view b, Take(1));
  return static_cast<uint8_t>(b[0]);
}

Result<uint16_t> TlsReader::ReadUint16() {
  XB_ASSIGN_OR_RETURN(const std::string_view b, Take(2));
  return static_cast<uint16_t>((static_cast<uint8_t>(b[0]) << 8) | static_cast<uint8_t>(b[1]));
}

Result<uint32_t> TlsReader::ReadUint32() {
  XB_ASSIGN_OR_RETURN(const std::string_view b, Take(4));
  uint32_t v = 0;
  for (char c : b) {
    v = (v << 8) | static_cast<uint8_t>(c);
  }
  return v;
}

Result<uint64_t> TlsReader::ReadUint64() {
  XB_ASSIGN_OR_RETURN(const std::string_view b, Take(8));
  uint64_t v = 0;
  for (char c : b) {
    v = (v << 8) | static_cast<uint8_t>(c);
  }
  return v;
}

// RFC 9420 §2.1.2: the top two bits of the first byte give the prefix size (00 → 1, 01 → 2,
// 10 → 4 bytes); 11 is invalid. The reference parser, and so this one, requires the shortest
// prefix that holds the length (VALIDATION.md 2.1).
Result<size_t> TlsReader::ReadVectorLength() {
  XB_ASSIGN_OR_RETURN(const uint8_t first, ReadUint8());
  const uint8_t size_bits = first >> 6;
  uint32_t length = first & 0x3f;
  switch (size_bits) {
    case 0:
      return static_cast<size_t>(length);
    case 1: {
      XB_ASSIGN_OR_RETURN(const uint8_t next, ReadUint8());
      length = (length << 8) | next;
      if (length < 64) {
        return InvalidArgument("vector length prefix is not minimal");
      }
      return static_cast<size_t>(length);
    }
    case 2: {
      XB_ASSIGN_OR_RETURN(const std::string_view rest, Take(3));
      for (char c : rest) {
        length = (length << 8) | static_cast<uint8_t>(c);
      }
      if (length < 16384) {
        return InvalidArgument("vector length prefix is not minimal");
      }
      return static_cast<size_t>(length);
    }
    default:
      return InvalidArgument("vector length prefix is invalid");
  }
}

Result<std::string_view> TlsReader::ReadOpaque() {
  XB_ASSIGN_OR_RETURN(const size_t length, ReadVectorLength());
  if (length > remaining()) {
    return InvalidArgument("vector runs past the end of the input");
  }
  return Take(length);
}

}  // namespace xb::validate
