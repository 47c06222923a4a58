// The inbox id as a topic identifier (API.md 3.1, TOPIC-002): IdentityUpdate.inbox_id is 64 hex
// characters and the identity topic holds the 32 decoded bytes.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace xb::validate {

inline constexpr size_t kInboxIdHexChars = 64;

// The 32 bytes `inbox_id` hex-decodes to, or nullopt unless it is exactly 64 characters from
// 0-9, a-f, A-F.
//
// Both letter cases decode (VALIDATION.md 1.1 "must hex-decode to 32 bytes", 5.11 "not hex").
// VALIDATION.md 5.8 (IDENT-003) settles what happens next: an upper- or mixed-case id routes to
// the same topic as its lower-case spelling and is then refused by the identity validator
// (REASON_INVALID_IDENTITY_UPDATE), because the inbox id derived from the CreateInbox is lower
// case and is compared as a string. So two spellings share a topic but only the lower-case one
// can ever be stored; API-233 also treats them as two updates for one inbox in one request.
std::optional<std::string> DecodeInboxId(std::string_view inbox_id);

}  // namespace xb::validate
