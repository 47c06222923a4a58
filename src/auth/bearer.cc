#include "auth/bearer.h"

namespace xb::auth {

namespace {

// Visible ASCII and the space; a tab is a control byte (AUTH section 3 step 2).
bool IsVisibleAsciiOrSpace(unsigned char c) { return c >= 0x20 && c <= 0x7E; }

bool EqualsBearer(std::string_view scheme) {
  constexpr std::string_view kBearer = "bearer";
  if (scheme.size() != kBearer.size()) {
    return false;
  }
  for (size_t i = 0; i < scheme.size(); ++i) {
    char c = scheme[i];
    if (c >= 'A' && c <= 'Z') {
      c = static_cast<char>(c - 'A' + 'a');
    }
    if (c != kBearer[i]) {
      return false;
    }
  }
  return true;
}

}  // namespace

// implements: AUTH-005
BearerToken ParseBearer(const std::string* header) {
  if (header == nullptr) {
    return {.rejection = Rejection::kMissing, .token = {}};
  }
  const std::string_view value = *header;
  // Step 2: visible ASCII text (spaces between words); control bytes and obs-text are refused.
  for (char c : value) {
    if (!IsVisibleAsciiOrSpace(static_cast<unsigned char>(c))) {
      return {.rejection = Rejection::kNotBearer, .token = {}};
    }
  }
  // Step 3: split at the first space; the rest, trimmed, is the token (AUTH 12 point 4).
  const size_t space = value.find(' ');
  if (space == std::string_view::npos) {
    return {.rejection = Rejection::kNotBearer, .token = {}};
  }
  // Step 4: the scheme, ASCII case-insensitive.
  if (!EqualsBearer(value.substr(0, space))) {
    return {.rejection = Rejection::kNotBearer, .token = {}};
  }
  std::string_view token = value.substr(space + 1);
  while (!token.empty() && token.front() == ' ') {
    token.remove_prefix(1);
  }
  while (!token.empty() && token.back() == ' ') {
    token.remove_suffix(1);
  }
  // Step 5: not empty.
  if (token.empty()) {
    return {.rejection = Rejection::kNotBearer, .token = {}};
  }
  // Step 6: at most 8192 bytes.
  if (token.size() > kMaxTokenBytes) {
    return {.rejection = Rejection::kNotJwt, .token = {}};
  }
  return {.rejection = std::nullopt, .token = token};
}

}  // namespace xb::auth
