#include "validate/webauthn.h"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace xb::validate {
namespace {

// A small RFC 8259 reader: enough to validate a whole document and pull top-level strings.
class JsonReader {
 public:
  explicit JsonReader(std::string_view s) : s_(s) {}

  void SkipSpace() {
    while (pos_ < s_.size() &&
           (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) {
      ++pos_;
    }
  }
  bool AtEnd() {
    SkipSpace();
    return pos_ == s_.size();
  }
  bool Peek(char c) {
    SkipSpace();
    return pos_ < s_.size() && s_[pos_] == c;
  }
  bool Consume(char c) {
    if (Peek(c)) {
      ++pos_;
      return true;
    }
    return false;
  }

  // A string token, decoded to UTF-8.
  bool String(std::string& out) {
    if (!Consume('"')) {
      return false;
    }
    out.clear();
    while (pos_ < s_.size()) {
      const auto c = static_cast<unsigned char>(s_[pos_++]);
      if (c == '"') {
        return true;
      }
      if (c < 0x20) {
        return false;
      }
      if (c != '\\') {
        out.push_back(static_cast<char>(c));
        continue;
      }
      if (pos_ >= s_.size()) {
        return false;
      }
      const char e = s_[pos_++];
      switch (e) {
        case '"':
        case '\\':
        case '/':
          out.push_back(e);
          break;
        case 'b':
          out.push_back('\b');
          break;
        case 'f':
          out.push_back('\f');
          break;
        case 'n':
          out.push_back('\n');
          break;
        case 'r':
          out.push_back('\r');
          break;
        case 't':
          out.push_back('\t');
          break;
        case 'u': {
          uint32_t cp = 0;
          if (!Hex4(cp)) {
            return false;
          }
          if (cp >= 0xd800 && cp <= 0xdbff) {
            uint32_t low = 0;
            if (pos_ + 2 > s_.size() || s_[pos_] != '\\' || s_[pos_ + 1] != 'u') {
              return false;
            }
            pos_ += 2;
            if (!Hex4(low) || low < 0xdc00 || low > 0xdfff) {
              return false;
            }
            cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
          } else if (cp >= 0xdc00 && cp <= 0xdfff) {
            return false;
          }
          AppendUtf8(cp, out);
          break;
        }
        default:
          return false;
      }
    }
    return false;
  }

  // Any value, validated and discarded.
  bool SkipValue(int depth) {
    if (depth > 64) {
      return false;
    }
    SkipSpace();
    if (pos_ >= s_.size()) {
      return false;
    }
    const char c = s_[pos_];
    std::string ignored;
    if (c == '"') {
      return String(ignored);
    }
    if (c == '{') {
      ++pos_;
      if (Consume('}')) {
        return true;
      }
      do {
        if (!String(ignored) || !Consume(':') || !SkipValue(depth + 1)) {
          return false;
        }
      } while (Consume(','));
      return Consume('}');
    }
    if (c == '[') {
      ++pos_;
      if (Consume(']')) {
        return true;
      }
      do {
        if (!SkipValue(depth + 1)) {
          return false;
        }
      } while (Consume(','));
      return Consume(']');
    }
    for (std::string_view word : {"true", "false", "null"}) {
      if (s_.substr(pos_, word.size()) == word) {
        pos_ += word.size();
        return true;
      }
    }
    return Number();
  }

 private:
  bool Hex4(uint32_t& out) {
    if (pos_ + 4 > s_.size()) {
      return false;
    }
    for (int i = 0; i < 4; ++i) {
      const char h = s_[pos_++];
      out <<= 4;
      if (h >= '0' && h <= '9') {
        out |= static_cast<uint32_t>(h - '0');
      } else if (h >= 'a' && h <= 'f') {
        out |= static_cast<uint32_t>(h - 'a' + 10);
      } else if (h >= 'A' && h <= 'F') {
        out |= static_cast<uint32_t>(h - 'A' + 10);
      } else {
        return false;
      }
    }
    return true;
  }

  static void AppendUtf8(uint32_t cp, std::string& out) {
    if (cp < 0x80) {
      out.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      out.push_back(static_cast<char>(0xc0 | (cp >> 6)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
    } else if (cp < 0x10000) {
      out.push_back(static_cast<char>(0xe0 | (cp >> 12)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
    } else {
      out.push_back(static_cast<char>(0xf0 | (cp >> 18)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3f)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
    }
  }

  bool Digits() {
    const size_t start = pos_;
    while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') {
      ++pos_;
    }
    return pos_ > start;
  }

  bool Number() {
    if (pos_ < s_.size() && s_[pos_] == '-') {
      ++pos_;
    }
    if (pos_ < s_.size() && s_[pos_] == '0') {
      ++pos_;
    } else if (!Digits()) {
      return false;
    }
    if (pos_ < s_.size() && s_[pos_] == '.') {
      ++pos_;
      if (!Digits()) {
        return false;
      }
    }
    if (pos_ < s_.size() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
      ++pos_;
      if (pos_ < s_.size() && (s_[pos_] == '+' || s_[pos_] == '-')) {
        ++pos_;
      }
      if (!Digits()) {
        return false;
      }
    }
    return true;
  }

  std::string_view s_;
  size_t pos_ = 0;
};

// The P-256 group order n and n / 2, big-endian.
constexpr uint8_t kOrder[32] = {0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff,
                                0xff, 0xff, 0xff, 0xff, 0xff, 0xbc, 0xe6, 0xfa, 0xad, 0xa7, 0x17,
                                0x9e, 0x84, 0xf3, 0xb9, 0xca, 0xc2, 0xfc, 0x63, 0x25, 0x51};
constexpr uint8_t kHalfOrder[32] = {
    0x7f, 0xff, 0xff, 0xff, 0x80, 0x00, 0x00, 0x00, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
    0xde, 0x73, 0x7d, 0x56, 0xd3, 0x8b, 0xcf, 0x42, 0x79, 0xdc, 0xe5, 0x61, 0x7e, 0x31, 0x92, 0xa8};

// One strict DER INTEGER (short-form length, minimal, positive) as 32 big-endian bytes.
bool DerInteger(std::string_view& in, uint8_t out[32]) {
  if (in.size() < 2 || in[0] != 0x02) {
    return false;
  }
  const auto len = static_cast<uint8_t>(in[1]);
  if (len == 0 || len > 33 || in.size() < 2u + len) {
    return false;
  }
  std::string_view v = in.substr(2, len);
  in.remove_prefix(2u + len);
  if (static_cast<uint8_t>(v[0]) & 0x80) {
    return false;  // negative
  }
  if (v.size() > 1 && v[0] == 0 && !(static_cast<uint8_t>(v[1]) & 0x80)) {
    return false;  // non-minimal
  }
  if (v[0] == 0) {
    v.remove_prefix(1);
  }
  if (v.size() > 32) {
    return false;
  }
  std::fill(out, out + 32, 0);
  std::copy(v.begin(), v.end(), out + (32 - v.size()));
  return true;
}

bool InRange(const uint8_t v[32]) {
  bool zero = std::all_of(v, v + 32, [](uint8_t b) { return b == 0; });
  return !zero && std::lexicographical_compare(v, v + 32, kOrder, kOrder + 32);
}

}  // namespace

// implements: VALIDATION.md 5.5.3 step 1
std::optional<ClientData> ParseClientDataJson(std::string_view json) {
  JsonReader r(json);
  ClientData out;
  if (r.Peek('[')) {
    // [quirk] the reference's reader takes [origin, challenge] in place of the object.
    r.Consume('[');
    if (!r.String(out.origin) || !r.Consume(',') || !r.String(out.challenge) || !r.Consume(']') ||
        !r.AtEnd()) {
      return std::nullopt;
    }
    return out;
  }
  if (!r.Consume('{')) {
    return std::nullopt;
  }
  bool have_challenge = false;
  bool have_origin = false;
  if (!r.Consume('}')) {
    do {
      std::string key;
      if (!r.String(key) || !r.Consume(':')) {
        return std::nullopt;
      }
      if (key == "challenge" || key == "origin") {
        bool& seen = key == "challenge" ? have_challenge : have_origin;
        if (seen || !r.String(key == "challenge" ? out.challenge : out.origin)) {
          return std::nullopt;
        }
        seen = true;
      } else if (!r.SkipValue(1)) {
        return std::nullopt;
      }
    } while (r.Consume(','));
    if (!r.Consume('}')) {
      return std::nullopt;
    }
  }
  if (!r.AtEnd() || !have_challenge || !have_origin) {
    return std::nullopt;
  }
  return out;
}

// implements: VALIDATION.md 5.5.3 steps 4 and 7 (strict DER; replay key with low s)
std::optional<std::string> P256DerToLowSRaw(std::string_view der) {
  if (der.size() < 2 || der[0] != 0x30) {
    return std::nullopt;
  }
  const auto len = static_cast<uint8_t>(der[1]);
  if (len >= 0x80 || der.size() != 2u + len) {
    return std::nullopt;
  }
  std::string_view body = der.substr(2);
  uint8_t r[32];
  uint8_t s[32];
  if (!DerInteger(body, r) || !DerInteger(body, s) || !body.empty() || !InRange(r) || !InRange(s)) {
    return std::nullopt;
  }
  if (std::lexicographical_compare(kHalfOrder, kHalfOrder + 32, s, s + 32)) {
    int borrow = 0;  // s := n - s
    for (int i = 31; i >= 0; --i) {
      int v = kOrder[i] - s[i] - borrow;
      borrow = v < 0 ? 1 : 0;
      s[i] = static_cast<uint8_t>(v + (borrow ? 256 : 0));
    }
  }
  std::string out(reinterpret_cast<const char*>(r), 32);
  out.append(reinterpret_cast<const char*>(s), 32);
  return out;
}

std::string Base64UrlNoPad(std::string_view bytes) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out;
  out.reserve((bytes.size() * 4 + 2) / 3);
  size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    const uint32_t v = (static_cast<uint8_t>(bytes[i]) << 16) |
                       (static_cast<uint8_t>(bytes[i + 1]) << 8) |
                       static_cast<uint8_t>(bytes[i + 2]);
    out.push_back(kAlphabet[v >> 18]);
    out.push_back(kAlphabet[(v >> 12) & 63]);
    out.push_back(kAlphabet[(v >> 6) & 63]);
    out.push_back(kAlphabet[v & 63]);
  }
  const size_t rest = bytes.size() - i;
  if (rest == 1) {
    const uint32_t v = static_cast<uint8_t>(bytes[i]) << 16;
    out.push_back(kAlphabet[v >> 18]);
    out.push_back(kAlphabet[(v >> 12) & 63]);
  } else if (rest == 2) {
    const uint32_t v =
        (static_cast<uint8_t>(bytes[i]) << 16) | (static_cast<uint8_t>(bytes[i + 1]) << 8);
    out.push_back(kAlphabet[v >> 18]);
    out.push_back(kAlphabet[(v >> 12) & 63]);
    out.push_back(kAlphabet[(v >> 6) & 63]);
  }
  return out;
}

}  // namespace xb::validate
