// RFC 9110 section 10.2.3: Retry-After = HTTP-date / delay-seconds. Of the three HTTP-date forms
// (section 5.6.7) only the preferred IMF-fixdate is read; senders MUST generate it, and an
// unreadable value is ignored, which costs only the provider delay floor.
#include "push/retry_after.h"

#include <array>
#include <ctime>

namespace xb::push {
namespace {

constexpr std::chrono::seconds kCap{300};

std::optional<uint64_t> Digits(std::string_view text) {
  if (text.empty()) {
    return std::nullopt;
  }
  uint64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') {
      return std::nullopt;
    }
    value = value > 1'000'000'000 ? value : value * 10 + static_cast<uint64_t>(c - '0');
  }
  return value;
}

// "Sun, 06 Nov 1994 08:49:37 GMT" exactly (29 characters).
std::optional<std::chrono::system_clock::time_point> ParseImfFixdate(std::string_view s) {
  static constexpr std::array<std::string_view, 7> kDays = {"Sun", "Mon", "Tue", "Wed",
                                                            "Thu", "Fri", "Sat"};
  static constexpr std::array<std::string_view, 12> kMonths = {
      "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  if (s.size() != 29 || s.substr(3, 2) != ", " || s[7] != ' ' || s[11] != ' ' || s[16] != ' ' ||
      s[19] != ':' || s[22] != ':' || s.substr(25) != " GMT") {
    return std::nullopt;
  }
  bool day_ok = false;
  for (auto d : kDays) {
    day_ok = day_ok || s.substr(0, 3) == d;
  }
  int month = -1;
  for (size_t i = 0; i < kMonths.size(); ++i) {
    if (s.substr(8, 3) == kMonths[i]) {
      month = static_cast<int>(i);
    }
  }
  auto mday = Digits(s.substr(5, 2));
  auto year = Digits(s.substr(12, 4));
  auto hour = Digits(s.substr(17, 2));
  auto minute = Digits(s.substr(20, 2));
  auto second = Digits(s.substr(23, 2));
  if (!day_ok || month < 0 || !mday || !year || !hour || !minute || !second || *mday < 1 ||
      *mday > 31 || *hour > 23 || *minute > 59 || *second > 60) {
    return std::nullopt;
  }
  std::tm tm{};
  tm.tm_year = static_cast<int>(*year) - 1900;
  tm.tm_mon = month;
  tm.tm_mday = static_cast<int>(*mday);
  tm.tm_hour = static_cast<int>(*hour);
  tm.tm_min = static_cast<int>(*minute);
  tm.tm_sec = static_cast<int>(*second);
  const time_t t = ::timegm(&tm);
  if (t == static_cast<time_t>(-1)) {
    return std::nullopt;
  }
  return std::chrono::system_clock::from_time_t(t);
}

}  // namespace

// implements: PUSH-259
std::optional<std::chrono::seconds> ParseRetryAfter(std::string_view value,
                                                    std::chrono::system_clock::time_point now) {
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) {
    value.remove_prefix(1);
  }
  while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) {
    value.remove_suffix(1);
  }
  if (auto seconds = Digits(value)) {
    return std::min(std::chrono::seconds(static_cast<int64_t>(*seconds)), kCap);
  }
  auto date = ParseImfFixdate(value);
  if (!date) {
    return std::nullopt;  // unparsable, or negative ("-5" is neither form)
  }
  if (*date <= now) {
    return std::chrono::seconds(0);
  }
  return std::min(std::chrono::duration_cast<std::chrono::seconds>(*date - now), kCap);
}

}  // namespace xb::push
