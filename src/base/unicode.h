// The few Unicode facts configuration checks need: strict UTF-8 decoding, the White_Space
// property, and general category Cc. Pure functions, no locale.
#pragma once

#include <cstdint>
#include <string_view>

namespace xb {

// True when `text` is well-formed UTF-8 (no overlong forms, no surrogates, at most U+10FFFF).
bool IsValidUtf8(std::string_view text);

// The code points with the Unicode White_Space property (PropList.txt): U+0009..000D, 0020, 0085,
// 00A0, 1680, 2000..200A, 2028, 2029, 202F, 205F, 3000.
bool IsWhiteSpace(char32_t code_point);

// General category Cc: U+0000..001F and U+007F..009F.
bool IsControl(char32_t code_point);

// CONF-002: 1 to 256 bytes of valid UTF-8 with no White_Space and no Cc code point.
bool IsValidServerIdentifier(std::string_view identifier);

// True when `text` holds a White_Space code point (invalid UTF-8 counts as holding one).
bool ContainsWhiteSpace(std::string_view text);

// True when `text` is valid UTF-8 made only of White_Space code points (or is empty): what is
// left after trimming whitespace is empty.
bool IsBlank(std::string_view text);

}  // namespace xb
