#include "api/v3/rows.h"

#include "api/v3/wire.h"
#include "validate/wire_fields.h"

namespace xb::api::v3 {
namespace {

// ClientEnvelope payload field numbers (xmtp.backend.v1.ClientEnvelope).
constexpr uint32_t kGroupMessage = 1;
constexpr uint32_t kWelcomeMessage = 2;
constexpr uint32_t kKeyPackage = 3;
constexpr uint32_t kIdentityUpdate = 4;
constexpr uint32_t kCommitLogEntry = 5;

struct Payload {
  uint32_t number = 0;
  std::string_view bytes;
};

// The one length-delimited field of a message (a ClientEnvelope's payload, a WelcomeMessage's
// version); nullopt when there is not exactly one field of that shape.
std::optional<Payload> OnlyField(std::string_view message) {
  validate::WireFieldReader reader(message);
  const auto field = reader.Next();
  if (!field || field->wire_type != kWireLengthDelimited || reader.Next() || !reader.ok()) {
    return std::nullopt;
  }
  return Payload{field->number, field->bytes};
}

std::optional<std::string_view> PayloadOf(const store::StoredEnvelopeView& row, uint32_t kind) {
  const auto payload = OnlyField(row.payload);
  if (!payload || payload->number != kind) {
    return std::nullopt;
  }
  return payload->bytes;
}

// Adds every field of `message`, its number raised by `shift`.
bool AddShifted(std::string_view message, uint32_t shift, FieldList& out) {
  validate::WireFieldReader reader(message);
  while (auto field = reader.Next()) {
    if (!out.Raw(field->number + shift, field->wire_type, field->raw)) {
      return false;
    }
  }
  return reader.ok();
}

uint64_t Unsigned(int64_t value) { return static_cast<uint64_t>(value); }

// `fields` as field `number` of the enclosing message, or alone (kWholeMessage).
void AppendMessage(std::string& out, uint32_t number, const FieldList& fields) {
  if (number == kWholeMessage) {
    fields.AppendTo(out);
  } else {
    fields.AppendAsField(out, number);
  }
}

// A message whose one field `inner` (a oneof's member) is `fields`, placed as AppendMessage does.
void AppendWrapped(std::string& out, uint32_t number, uint32_t inner, const FieldList& fields) {
  if (number != kWholeMessage) {
    AppendLengthHeader(out, number, LengthFieldSize(inner, fields.Size()));
  }
  fields.AppendAsField(out, inner);
}

}  // namespace

bool AppendGroupMessage(std::string& out, uint32_t number, const store::StoredEnvelopeView& row,
                        bool with_content) {
  // Without content the row may have been read without its payload (Store::Newest).
  const auto body = with_content ? PayloadOf(row, kGroupMessage) : std::string_view();
  if (!body || row.topic.size() < 2) {
    return false;
  }
  FieldList v1;
  v1.Varint(1, Unsigned(row.sequence_id));
  v1.Varint(2, Unsigned(row.server_ns));
  v1.Bytes(3, row.topic.substr(1));
  // Stored data 1, sender_hmac 2, should_push 3 are V1's 4, 5, 6.
  if (with_content && !AddShifted(*body, 3, v1)) {
    return false;
  }
  v1.Varint(7, row.is_commit_or_proposal ? 1 : 0);
  AppendWrapped(out, number, 1, v1);
  return true;
}

bool AppendWelcomeMessage(std::string& out, uint32_t number, const store::StoredEnvelopeView& row) {
  const auto body = PayloadOf(row, kWelcomeMessage);
  const auto version = body ? OnlyField(*body) : std::nullopt;
  if (!version || (version->number != 1 && version->number != 2)) {
    return false;
  }
  FieldList message;
  message.Varint(1, Unsigned(row.sequence_id));
  message.Varint(2, Unsigned(row.server_ns));
  // Both stored forms number their fields from 1; the V3 forms from 3, after id and created_ns.
  if (!AddShifted(version->bytes, 2, message)) {
    return false;
  }
  AppendWrapped(out, number, version->number, message);
  return true;
}

bool AppendCommitLogEntry(std::string& out, uint32_t number, const store::StoredEnvelopeView& row) {
  const auto body = PayloadOf(row, kCommitLogEntry);
  FieldList entry;
  entry.Varint(1, Unsigned(row.sequence_id));
  if (!body || !AddShifted(*body, 1, entry)) {
    return false;
  }
  AppendMessage(out, number, entry);
  return true;
}

bool AppendIdentityUpdateLog(std::string& out, uint32_t number,
                             const store::StoredEnvelopeView& row) {
  const auto update = PayloadOf(row, kIdentityUpdate);
  if (!update) {
    return false;
  }
  FieldList log;
  log.Varint(1, Unsigned(row.sequence_id));
  log.Varint(2, Unsigned(row.server_ns));
  log.Bytes(3, *update);
  AppendMessage(out, number, log);
  return true;
}

std::optional<std::string_view> StoredKeyPackage(const store::StoredEnvelopeView& row) {
  return PayloadOf(row, kKeyPackage);
}

}  // namespace xb::api::v3
