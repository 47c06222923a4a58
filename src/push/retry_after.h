// The Retry-After header of FCM answers (spec/PUSH.md 9.3): decimal seconds or an HTTP-date
// (delay = date - now, floor 0); unparsable or negative: ignored; capped at 300 s. Pure.
#pragma once

#include <chrono>
#include <optional>
#include <string_view>

namespace xb::push {

std::optional<std::chrono::seconds> ParseRetryAfter(std::string_view value,
                                                    std::chrono::system_clock::time_point now);

}  // namespace xb::push
