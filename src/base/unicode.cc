#include "base/unicode.h"

#include <cstddef>

namespace xb {
namespace {

// Decodes the code point starting at text[*pos] and advances *pos. Returns false on any
// ill-formed sequence (Unicode 15, table 3-7: well-formed UTF-8 byte sequences).
bool NextCodePoint(std::string_view text, size_t* pos, char32_t* out) {
  auto byte = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  size_t i = *pos;
  unsigned char b0 = byte(i);
  if (b0 < 0x80) {
    *out = b0;
    *pos = i + 1;
    return true;
  }
  size_t length;
  char32_t cp;
  unsigned char lo = 0x80;
  unsigned char hi = 0xBF;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    length = 2;
    cp = b0 & 0x1F;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    length = 3;
    cp = b0 & 0x0F;
    if (b0 == 0xE0) {
      lo = 0xA0;  // no overlong forms
    } else if (b0 == 0xED) {
      hi = 0x9F;  // no surrogates
    }
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    length = 4;
    cp = b0 & 0x07;
    if (b0 == 0xF0) {
      lo = 0x90;  // no overlong forms
    } else if (b0 == 0xF4) {
      hi = 0x8F;  // nothing above U+10FFFF
    }
  } else {
    return false;
  }
  if (text.size() - i < length) {
    return false;
  }
  for (size_t k = 1; k < length; ++k) {
    unsigned char b = byte(i + k);
    if (b < (k == 1 ? lo : 0x80) || b > (k == 1 ? hi : 0xBF)) {
      return false;
    }
    cp = (cp << 6) | (b & 0x3F);
  }
  *out = cp;
  *pos = i + length;
  return true;
}

}  // namespace

bool IsValidUtf8(std::string_view text) {
  size_t pos = 0;
  char32_t cp;
  while (pos < text.size()) {
    if (!NextCodePoint(text, &pos, &cp)) {
      return false;
    }
  }
  return true;
}

bool IsWhiteSpace(char32_t c) {
  return (c >= 0x0009 && c <= 0x000D) || c == 0x0020 || c == 0x0085 || c == 0x00A0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F ||
         c == 0x3000;
}

bool IsControl(char32_t c) { return c <= 0x001F || (c >= 0x007F && c <= 0x009F); }

// implements: CONF-002
bool IsValidServerIdentifier(std::string_view identifier) {
  if (identifier.empty() || identifier.size() > 256) {
    return false;
  }
  size_t pos = 0;
  char32_t cp;
  while (pos < identifier.size()) {
    if (!NextCodePoint(identifier, &pos, &cp) || IsWhiteSpace(cp) || IsControl(cp)) {
      return false;
    }
  }
  return true;
}

bool ContainsWhiteSpace(std::string_view text) {
  size_t pos = 0;
  char32_t cp;
  while (pos < text.size()) {
    if (!NextCodePoint(text, &pos, &cp) || IsWhiteSpace(cp)) {
      return true;
    }
  }
  return false;
}

bool IsBlank(std::string_view text) {
  size_t pos = 0;
  char32_t cp;
  while (pos < text.size()) {
    if (!NextCodePoint(text, &pos, &cp) || !IsWhiteSpace(cp)) {
      return false;
    }
  }
  return true;
}

}  // namespace xb
