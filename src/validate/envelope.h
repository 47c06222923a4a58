// Admission parse of one published ClientEnvelope (API-230, parsing and routing only): what kind
// of payload it is, its topic (TOPIC-001/002), its stored bytes and hash (API-211), and whether it
// is a commit or proposal (API.md 3.3).
//
// Not done here (later stages of API.md 3.4): size limits (use CanonicalSize first: a too-large
// envelope is REASON_TOO_LARGE and is not parsed), duplicate detection, key-package validation
// (JOIN-007/008/004, VALIDATION.md 4.3) and identity-update validation (IDENT-005, VALIDATION.md
// 5.2-5.10, including IDENT-003's exact inbox-id compare). The outputs those stages need are in
// ParsedEnvelope.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "base/expected.h"
#include "identity/associations/association.pb.h"
#include "validate/key_package.h"
#include "validate/topic.h"
#include "xmtp/backend/v1/backend.pb.h"

namespace xb::validate {

// Why an envelope is refused. `message` is plain words from a fixed set and never contains
// payload data (it may reach logs and the PublishError detail).
struct Rejection {
  xmtp::backend::v1::PublishError::Reason reason;
  std::string message;
};

struct ParsedEnvelope {
  TopicKind kind = TopicKind::kGroupMessage;
  std::string topic;  // TOPIC-001: kind byte + identifier
  bool is_commit_or_proposal = false;
  std::string stored_bytes;                // the backend's encoding (API.md 2.15, API-211)
  std::array<uint8_t, 32> message_hash{};  // SHA-256 of stored_bytes
  // Identity updates: the decoded update (unknown fields discarded), for the later validator.
  std::optional<xmtp::identity::associations::IdentityUpdate> identity_update;
  // Key packages: the parse, for the later validator (it does not validate).
  std::optional<ParsedKeyPackage> key_package;
};

// Parses and routes `envelope` per the API-230 admission table. Every refusal this stage can
// make is REASON_MALFORMED_PAYLOAD: unset payload; group message data that is not a well-formed
// MLSMessage with a PublicMessage/PrivateMessage body, or whose group id is not 16 bytes; Welcome
// without `version`, or whose installation_key is not 32 bytes; key package bytes that are not
// exactly one KeyPackage (VALIDATION.md 4.2) or whose leaf signature_key is not 32 bytes;
// identity update whose inbox_id is not 64 hex characters; commit-log entry whose
// serialized_commit_log_entry is not a PlaintextCommitLogEntry or whose group_id is not 16 bytes.
// Pure function; thread-safe; never suspends.
Expected<ParsedEnvelope, Rejection> ParseEnvelope(
    const xmtp::backend::v1::ClientEnvelope& envelope);

}  // namespace xb::validate
