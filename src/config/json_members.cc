#include "config/json_members.h"

#include <cstdint>
#include <set>

namespace xb::config {
namespace {

constexpr int kMaxDepth = 64;

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  bool ParseDocument(std::map<std::string, std::string>* members) {
    SkipSpace();
    if (!ParseObject(0, members)) {
      return false;
    }
    SkipSpace();
    return pos_ == text_.size();
  }

 private:
  bool AtEnd() const { return pos_ >= text_.size(); }
  char Peek() const { return text_[pos_]; }

  void SkipSpace() {
    while (!AtEnd() && (Peek() == ' ' || Peek() == '\t' || Peek() == '\n' || Peek() == '\r')) {
      ++pos_;
    }
  }

  bool Consume(char c) {
    if (AtEnd() || Peek() != c) {
      return false;
    }
    ++pos_;
    return true;
  }

  bool ConsumeWord(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word) {
      return false;
    }
    pos_ += word.size();
    return true;
  }

  // `top_level` collects string members of the outermost object only.
  bool ParseObject(int depth, std::map<std::string, std::string>* top_level) {
    if (depth >= kMaxDepth || !Consume('{')) {
      return false;
    }
    SkipSpace();
    if (Consume('}')) {
      return true;
    }
    while (true) {
      SkipSpace();
      std::string name;
      if (!ParseString(&name)) {
        return false;
      }
      SkipSpace();
      if (!Consume(':')) {
        return false;
      }
      SkipSpace();
      if (top_level != nullptr) {
        if (!names_.insert(name).second) {
          return false;  // duplicate member: ambiguous, refused
        }
        if (!AtEnd() && Peek() == '"') {
          std::string value;
          if (!ParseString(&value)) {
            return false;
          }
          (*top_level)[name] = std::move(value);
        } else if (!ParseValue(depth + 1)) {
          return false;
        }
      } else if (!ParseValue(depth + 1)) {
        return false;
      }
      SkipSpace();
      if (Consume('}')) {
        return true;
      }
      if (!Consume(',')) {
        return false;
      }
    }
  }

  bool ParseArray(int depth) {
    if (depth >= kMaxDepth || !Consume('[')) {
      return false;
    }
    SkipSpace();
    if (Consume(']')) {
      return true;
    }
    while (true) {
      SkipSpace();
      if (!ParseValue(depth + 1)) {
        return false;
      }
      SkipSpace();
      if (Consume(']')) {
        return true;
      }
      if (!Consume(',')) {
        return false;
      }
    }
  }

  bool ParseValue(int depth) {
    if (AtEnd()) {
      return false;
    }
    switch (Peek()) {
      case '{':
        return ParseObject(depth, nullptr);
      case '[':
        return ParseArray(depth);
      case '"': {
        std::string ignored;
        return ParseString(&ignored);
      }
      case 't':
        return ConsumeWord("true");
      case 'f':
        return ConsumeWord("false");
      case 'n':
        return ConsumeWord("null");
      default:
        return ParseNumber();
    }
  }

  bool Digits() {
    size_t start = pos_;
    while (!AtEnd() && Peek() >= '0' && Peek() <= '9') {
      ++pos_;
    }
    return pos_ > start;
  }

  // number = [ minus ] int [ frac ] [ exp ]; int = zero / ( digit1-9 *DIGIT )
  bool ParseNumber() {
    Consume('-');
    if (Consume('0')) {
      // no leading zeros
    } else if (AtEnd() || Peek() < '1' || Peek() > '9' || !Digits()) {
      return false;
    }
    if (Consume('.') && !Digits()) {
      return false;
    }
    if (!AtEnd() && (Peek() == 'e' || Peek() == 'E')) {
      ++pos_;
      if (!Consume('+')) {
        Consume('-');
      }
      if (!Digits()) {
        return false;
      }
    }
    return true;
  }

  bool Hex4(uint32_t* out) {
    if (text_.size() - pos_ < 4) {
      return false;
    }
    uint32_t value = 0;
    for (int i = 0; i < 4; ++i) {
      char c = text_[pos_++];
      value <<= 4;
      if (c >= '0' && c <= '9') {
        value |= static_cast<uint32_t>(c - '0');
      } else if (c >= 'a' && c <= 'f') {
        value |= static_cast<uint32_t>(c - 'a' + 10);
      } else if (c >= 'A' && c <= 'F') {
        value |= static_cast<uint32_t>(c - 'A' + 10);
      } else {
        return false;
      }
    }
    *out = value;
    return true;
  }

  static void AppendUtf8(uint32_t cp, std::string* out) {
    if (cp < 0x80) {
      out->push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
      out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
      out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
      out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
      out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
      out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
  }

  bool ParseString(std::string* out) {
    if (!Consume('"')) {
      return false;
    }
    while (!AtEnd()) {
      char c = text_[pos_++];
      if (c == '"') {
        return true;
      }
      if (static_cast<unsigned char>(c) < 0x20) {
        return false;
      }
      if (c != '\\') {
        out->push_back(c);  // the document is already valid UTF-8 (TOML or checked env value)
        continue;
      }
      if (AtEnd()) {
        return false;
      }
      char escape = text_[pos_++];
      switch (escape) {
        case '"':
        case '\\':
        case '/':
          out->push_back(escape);
          break;
        case 'b':
          out->push_back('\b');
          break;
        case 'f':
          out->push_back('\f');
          break;
        case 'n':
          out->push_back('\n');
          break;
        case 'r':
          out->push_back('\r');
          break;
        case 't':
          out->push_back('\t');
          break;
        case 'u': {
          uint32_t cp;
          if (!Hex4(&cp)) {
            return false;
          }
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            uint32_t low;
            if (!ConsumeWord("\\u") || !Hex4(&low) || low < 0xDC00 || low > 0xDFFF) {
              return false;
            }
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
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

  std::string_view text_;
  size_t pos_ = 0;
  std::set<std::string> names_;
};

}  // namespace

Result<std::map<std::string, std::string>> TopLevelStringMembers(std::string_view json) {
  std::map<std::string, std::string> members;
  Parser parser(json);
  if (!parser.ParseDocument(&members)) {
    return InvalidArgument("not a JSON object");
  }
  return members;
}

}  // namespace xb::config
