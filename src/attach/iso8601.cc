#include "attach/iso8601.h"

#include <chrono>
#include <cstdint>

namespace xb::attach {
namespace {

// Reads exactly `width` decimal digits at `at`, advancing it; nullopt otherwise.
std::optional<int> Digits(std::string_view text, size_t& at, size_t width) {
  if (at > text.size() || text.size() - at < width) {
    return std::nullopt;
  }
  int value = 0;
  for (size_t i = 0; i < width; ++i) {
    const char c = text[at + i];
    if (c < '0' || c > '9') {
      return std::nullopt;
    }
    value = value * 10 + (c - '0');
  }
  at += width;
  return value;
}

bool Expect(std::string_view text, size_t& at, char c) {
  if (at < text.size() && text[at] == c) {
    ++at;
    return true;
  }
  return false;
}

// `.fraction` if present: microseconds, extra digits truncated. nullopt for a dot without digits.
std::optional<int64_t> Fraction(std::string_view text, size_t& at) {
  if (!Expect(text, at, '.') && !Expect(text, at, ',')) {
    return 0;
  }
  int64_t micros = 0;
  size_t digits = 0;
  while (at < text.size() && text[at] >= '0' && text[at] <= '9') {
    if (digits < 6) {
      micros = micros * 10 + (text[at] - '0');
    }
    ++digits;
    ++at;
  }
  if (digits == 0) {
    return std::nullopt;
  }
  for (size_t i = digits; i < 6; ++i) {
    micros *= 10;
  }
  return micros;
}

// `Z`, `+HH:MM`, `-HH:MM` or `+HHMM`: the offset east of UTC in minutes.
std::optional<int> Offset(std::string_view text, size_t& at) {
  if (Expect(text, at, 'Z') || Expect(text, at, 'z')) {
    return 0;
  }
  int sign = 0;
  if (Expect(text, at, '+')) {
    sign = 1;
  } else if (Expect(text, at, '-')) {
    sign = -1;
  } else {
    return std::nullopt;
  }
  const std::optional<int> hours = Digits(text, at, 2);
  Expect(text, at, ':');
  const std::optional<int> minutes = Digits(text, at, 2);
  if (!hours || !minutes || *hours > 23 || *minutes > 59) {
    return std::nullopt;
  }
  return sign * (*hours * 60 + *minutes);
}

}  // namespace

std::optional<WallClock::time_point> ParseIso8601(std::string_view text) {
  size_t at = 0;
  const std::optional<int> year = Digits(text, at, 4);
  const bool date_dash = Expect(text, at, '-');
  const std::optional<int> month = Digits(text, at, 2);
  const bool month_dash = Expect(text, at, '-');
  const std::optional<int> day = Digits(text, at, 2);
  const bool separator = Expect(text, at, 'T') || Expect(text, at, 't') || Expect(text, at, ' ');
  const std::optional<int> hour = Digits(text, at, 2);
  const bool hour_colon = Expect(text, at, ':');
  const std::optional<int> minute = Digits(text, at, 2);
  const bool minute_colon = Expect(text, at, ':');
  const std::optional<int> second = Digits(text, at, 2);
  if (!year || !month || !day || !hour || !minute || !second || !date_dash || !month_dash ||
      !separator || !hour_colon || !minute_colon) {
    return std::nullopt;
  }
  const std::optional<int64_t> micros = Fraction(text, at);
  const std::optional<int> offset_minutes = Offset(text, at);
  if (!micros || !offset_minutes || at != text.size()) {
    return std::nullopt;
  }
  // A leap second (60) is accepted as RFC 3339 allows and lands on the next second.
  if (*hour > 23 || *minute > 59 || *second > 60) {
    return std::nullopt;
  }
  const std::chrono::year_month_day date{std::chrono::year(*year),
                                         std::chrono::month(static_cast<unsigned>(*month)),
                                         std::chrono::day(static_cast<unsigned>(*day))};
  if (!date.ok()) {
    return std::nullopt;
  }
  const auto utc = std::chrono::sys_days(date) + std::chrono::hours(*hour) +
                   std::chrono::minutes(*minute) + std::chrono::seconds(*second) +
                   std::chrono::microseconds(*micros) - std::chrono::minutes(*offset_minutes);
  return std::chrono::time_point_cast<WallClock::duration>(utc);
}

}  // namespace xb::attach
