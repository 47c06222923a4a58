#include "validate/envelope.h"

#include <utility>

#include "crypto/sha256.h"
#include "mls/message_contents/commit_log.pb.h"
#include "validate/canonical.h"
#include "validate/inbox_id.h"
#include "validate/mls_message.h"

namespace xb::validate {
namespace {

using xmtp::backend::v1::ClientEnvelope;
using xmtp::backend::v1::PublishError;

// What one payload kind routes to; filled by the per-kind parsers below.
struct Routed {
  TopicKind kind = TopicKind::kGroupMessage;
  std::string identifier = {};
  bool is_commit_or_proposal = false;
};

Rejection Malformed(std::string message) {
  return Rejection{PublishError::REASON_MALFORMED_PAYLOAD, std::move(message)};
}

// TOPIC-002: an identifier of the wrong length for its kind is refused, never truncated or padded.
std::optional<Rejection> CheckIdentifier(const Routed& routed, std::string_view what) {
  if (routed.identifier.size() != IdentifierLength(routed.kind)) {
    return Malformed(std::string(what) + " has the wrong length for a topic");
  }
  return std::nullopt;
}

Expected<Routed, Rejection> RouteGroupMessage(const xmtp::backend::v1::GroupMessage& m) {
  Result<ParsedGroupMessage> parsed = ParseGroupMessageData(m.data());
  if (!parsed.ok()) {
    // The parser's messages are fixed texts (tls_reader.h), safe to pass on.
    return Malformed("group message data is not a well-formed MLS message: " +
                     parsed.status().message());
  }
  Routed routed{.kind = TopicKind::kGroupMessage,
                .identifier = std::move(parsed->group_id),
                .is_commit_or_proposal = parsed->is_commit_or_proposal()};
  if (auto bad = CheckIdentifier(routed, "group message group id")) {
    return *std::move(bad);
  }
  return routed;
}

Expected<Routed, Rejection> RouteWelcome(const xmtp::backend::v1::WelcomeMessage& m) {
  // VALIDATION.md 3: only the version oneof and the installation key are looked at; everything
  // else (wrapper algorithm values included) is stored as received.
  Routed routed{.kind = TopicKind::kWelcome};
  switch (m.version_case()) {
    case xmtp::backend::v1::WelcomeMessage::kV1:
      routed.identifier = m.v1().installation_key();
      break;
    case xmtp::backend::v1::WelcomeMessage::kWelcomePointer:
      routed.identifier = m.welcome_pointer().installation_key();
      break;
    case xmtp::backend::v1::WelcomeMessage::VERSION_NOT_SET:
      return Malformed("welcome message has no version");
  }
  if (auto bad = CheckIdentifier(routed, "welcome installation key")) {
    return *std::move(bad);
  }
  return routed;
}

Expected<Routed, Rejection> RouteKeyPackage(const xmtp::backend::v1::KeyPackage& m,
                                            std::optional<ParsedKeyPackage>& out) {
  Result<ParsedKeyPackage> parsed = ParseKeyPackage(m.key_package_tls_serialized());
  if (!parsed.ok()) {
    return Malformed("key package is not a well-formed RFC 9420 KeyPackage: " +
                     parsed.status().message());
  }
  Routed routed{.kind = TopicKind::kKeyPackage, .identifier = std::string(parsed->signature_key())};
  // VALIDATION.md 4.2: a non-32-byte signature_key (P-256, Ed448, ...) is malformed here and never
  // reaches signature checking.
  if (auto bad = CheckIdentifier(routed, "key package signature key")) {
    return *std::move(bad);
  }
  out = std::move(parsed).value();
  return routed;
}

Expected<Routed, Rejection> RouteIdentityUpdate(
    const xmtp::identity::associations::IdentityUpdate& m) {
  std::optional<std::string> inbox = DecodeInboxId(m.inbox_id());
  if (!inbox.has_value()) {
    return Malformed("identity update inbox id is not 64 hex characters");
  }
  return Routed{.kind = TopicKind::kIdentityUpdate, .identifier = *std::move(inbox)};
}

Expected<Routed, Rejection> RouteCommitLogEntry(const xmtp::backend::v1::CommitLogEntry& m) {
  // The backend reads only group_id (API.md 2.12); the entry bytes are stored verbatim and its
  // signature is never verified (API-230).
  xmtp::mls::message_contents::PlaintextCommitLogEntry entry;
  if (!entry.ParseFromString(m.serialized_commit_log_entry())) {
    return Malformed("commit log entry does not decode as a PlaintextCommitLogEntry");
  }
  Routed routed{.kind = TopicKind::kCommitLog, .identifier = entry.group_id()};
  if (auto bad = CheckIdentifier(routed, "commit log entry group id")) {
    return *std::move(bad);
  }
  return routed;
}

}  // namespace

// implements: API-230 (parse and route; the checks beyond parsing are later stages)
// implements: TOPIC-001, TOPIC-002, API-211
Expected<ParsedEnvelope, Rejection> ParseEnvelope(const ClientEnvelope& envelope) {
  ClientEnvelope clean = envelope;
  std::string stored_bytes = Canonicalize(clean);

  ParsedEnvelope out;
  Expected<Routed, Rejection> routed = Malformed("envelope has no payload");
  switch (clean.payload_case()) {
    case ClientEnvelope::kGroupMessage:
      routed = RouteGroupMessage(clean.group_message());
      break;
    case ClientEnvelope::kWelcomeMessage:
      routed = RouteWelcome(clean.welcome_message());
      break;
    case ClientEnvelope::kKeyPackage:
      routed = RouteKeyPackage(clean.key_package(), out.key_package);
      break;
    case ClientEnvelope::kIdentityUpdate:
      routed = RouteIdentityUpdate(clean.identity_update());
      break;
    case ClientEnvelope::kCommitLogEntry:
      routed = RouteCommitLogEntry(clean.commit_log_entry());
      break;
    case ClientEnvelope::PAYLOAD_NOT_SET:
      break;  // API-230: an unset payload is malformed
  }
  if (!routed.ok()) {
    return std::move(routed).error();
  }
  Routed& r = routed.value();
  out.kind = r.kind;
  out.topic = MakeTopic(r.kind, r.identifier);
  out.is_commit_or_proposal = r.is_commit_or_proposal;
  out.message_hash = crypto::Sha256(stored_bytes);
  out.stored_bytes = std::move(stored_bytes);
  if (r.kind == TopicKind::kIdentityUpdate) {
    out.identity_update = std::move(*clean.mutable_identity_update());
  }
  return out;
}

}  // namespace xb::validate
