// The MLS framing of GroupMessage.data (API.md 2.16, VALIDATION.md 2): an MLSMessage whose body
// is a PublicMessage or PrivateMessage, parsed far enough to know it is well formed and to read
// the group id and content type. Nothing is authenticated or decrypted.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"
#include "validate/mls_codes.h"

namespace xb::validate {

struct ParsedGroupMessage {
  WireFormat wire_format = WireFormat::kPrivateMessage;  // kPublicMessage or kPrivateMessage
  std::string group_id;  // any length; routing requires 16 bytes (TOPIC-002, the caller's check)
  uint64_t epoch = 0;
  ContentType content_type = ContentType::kApplication;
  // Length of the MLSMessage; data.size() - message_bytes bytes trail it (accepted and stored,
  // API-230).
  size_t message_bytes = 0;

  // API.md 3.3: a proposal or a commit.
  bool is_commit_or_proposal() const {
    return content_type == ContentType::kProposal || content_type == ContentType::kCommit;
  }
};

// Parses the first MLSMessage in `data`. Fails INVALID_ARGUMENT (the caller's
// REASON_MALFORMED_PAYLOAD) with a fixed message when: the version is not 1 (mls10); the
// wire_format is not 1 or 2 (welcome, group_info and key_package included); a vector prefix is
// bad or not minimal; anything is truncated; the content type is not 1-3; the PublicMessage sender
// type is not 1-4; or a PublicMessage proposal/commit body does not parse in full
// (VALIDATION.md 2.4). Bytes after the message are accepted.
Result<ParsedGroupMessage> ParseGroupMessageData(std::string_view data);

}  // namespace xb::validate
