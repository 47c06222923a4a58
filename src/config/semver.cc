#include "config/semver.h"

#include <cstddef>

namespace xb::config {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

bool IsIdentifierChar(char c) {
  return IsDigit(c) || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '-';
}

// <numeric identifier> ::= "0" | <positive digit> | <positive digit> <digits>
bool IsNumericIdentifier(std::string_view s) {
  if (s.empty()) {
    return false;
  }
  for (char c : s) {
    if (!IsDigit(c)) {
      return false;
    }
  }
  return s.size() == 1 || s[0] != '0';
}

// Splits `s` on '.' and applies `valid` to every part; an empty part fails.
template <typename Pred>
bool AllDotParts(std::string_view s, Pred valid) {
  while (true) {
    size_t dot = s.find('.');
    std::string_view part = s.substr(0, dot);
    if (!valid(part)) {
      return false;
    }
    if (dot == std::string_view::npos) {
      return true;
    }
    s.remove_prefix(dot + 1);
  }
}

bool IsAlphanumericIdentifier(std::string_view s) {
  bool has_non_digit = false;
  for (char c : s) {
    if (!IsIdentifierChar(c)) {
      return false;
    }
    has_non_digit = has_non_digit || !IsDigit(c);
  }
  return !s.empty() && has_non_digit;
}

bool IsPreReleaseIdentifier(std::string_view s) {
  return IsAlphanumericIdentifier(s) || IsNumericIdentifier(s);
}

bool IsBuildIdentifier(std::string_view s) {
  if (s.empty()) {
    return false;
  }
  for (char c : s) {
    if (!IsIdentifierChar(c)) {
      return false;
    }
  }
  return true;
}

}  // namespace

// implements: CONF-067
bool IsSemVer(std::string_view text) {
  std::string_view build;
  size_t plus = text.find('+');
  if (plus != std::string_view::npos) {
    build = text.substr(plus + 1);
    text = text.substr(0, plus);
    if (!AllDotParts(build, IsBuildIdentifier)) {
      return false;
    }
  }
  // The core has no '-', so the first '-' starts the pre-release (which may itself hold '-').
  size_t dash = text.find('-');
  if (dash != std::string_view::npos) {
    if (!AllDotParts(text.substr(dash + 1), IsPreReleaseIdentifier)) {
      return false;
    }
    text = text.substr(0, dash);
  }
  int parts = 0;
  bool ok = AllDotParts(text, [&parts](std::string_view part) {
    ++parts;
    return IsNumericIdentifier(part);
  });
  return ok && parts == 3;
}

}  // namespace xb::config
