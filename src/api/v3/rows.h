// Stored rows as the V3 API's messages (docs/v3-api.md 2.1): one store, two views. A row's payload
// is our canonical ClientEnvelope (API-211); each V3 message is its id and server time followed by
// the stored message's fields renumbered, written without decoding the payload (api/v3/wire.h).
//
// Every function appends the message as length-delimited field `number` of the message being
// built in `out`, or, with `number` = kWholeMessage, the message alone (a stream response
// message); it returns false, appending nothing, when the row's payload is not of the kind asked
// for or not well formed (an invariant failure: Publish stored it canonical).
//
// Pure functions; thread-safe; never suspend.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "store/store.h"

namespace xb::api::v3 {

// Field number 0 is never a field: the message is written alone.
inline constexpr uint32_t kWholeMessage = 0;

// xmtp.mls.api.v1.GroupMessage{v1}: id, created_ns, group_id (topic bytes 1..16), then data,
// sender_hmac and should_push when `with_content`, and is_commit (= is_commit_or_proposal).
// Without content the payload is not read (it may be empty: Store::Newest without payloads).
bool AppendGroupMessage(std::string& out, uint32_t number, const store::StoredEnvelopeView& row,
                        bool with_content);

// xmtp.mls.api.v1.WelcomeMessage{v1 | welcome_pointer}, the stored form's fields after id and
// created_ns.
bool AppendWelcomeMessage(std::string& out, uint32_t number, const store::StoredEnvelopeView& row);

// xmtp.mls.message_contents.CommitLogEntry{sequence_id, serialized_commit_log_entry, signature}.
bool AppendCommitLogEntry(std::string& out, uint32_t number, const store::StoredEnvelopeView& row);

// xmtp.identity.api.v1.GetIdentityUpdatesResponse.IdentityUpdateLog{sequence_id,
// server_timestamp_ns, update}.
bool AppendIdentityUpdateLog(std::string& out, uint32_t number,
                             const store::StoredEnvelopeView& row);

// The stored xmtp.backend.v1.KeyPackage's bytes, which are FetchKeyPackagesResponse.KeyPackage's
// (the one field has the same number); nullopt when the row is not a key package.
std::optional<std::string_view> StoredKeyPackage(const store::StoredEnvelopeView& row);

}  // namespace xb::api::v3
