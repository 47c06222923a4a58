#include "api/v3/stream_rows.h"

#include <cstdint>

#include "api/v3/rows.h"
#include "api/v3/wire.h"
#include "base/varint.h"
#include "validate/wire_fields.h"

namespace xb::api::v3 {
namespace {

constexpr char kGroupTopic = 0x00;
constexpr char kWelcomeTopic = 0x01;

// The last occurrence of field `number` of `message` (protobuf's rule for a singular field), as
// a varint value or length-delimited bytes: nullopt when the message is malformed or the field's
// wire type is not the one asked; the default (0, empty) when it is absent.
std::optional<uint64_t> VarintField(std::string_view message, uint32_t number) {
  validate::WireFieldReader reader(message);
  uint64_t found = 0;
  while (auto field = reader.Next()) {
    if (field->number != number) {
      continue;
    }
    if (field->wire_type != kWireVarint) {
      return std::nullopt;
    }
    found = field->value;
  }
  return reader.ok() ? std::optional<uint64_t>(found) : std::nullopt;
}

std::optional<std::string_view> BytesField(std::string_view message, uint32_t number) {
  validate::WireFieldReader reader(message);
  std::string_view found;
  while (auto field = reader.Next()) {
    if (field->number != number) {
      continue;
    }
    if (field->wire_type != kWireLengthDelimited) {
      return std::nullopt;
    }
    found = field->bytes;
  }
  return reader.ok() ? std::optional<std::string_view>(found) : std::nullopt;
}

// Reads EnvelopeMeta (API-212): cursor {sequence_id = 1} = 1, server_ns = 2, message_hash
// {sha256 = 1} = 3, topic {topic = 1} = 4, expiry_ns = 5, is_commit_or_proposal = 6.
bool ReadMeta(std::string_view meta, store::StoredEnvelopeView& row) {
  const auto cursor = BytesField(meta, 1);
  const auto id = cursor ? VarintField(*cursor, 1) : std::nullopt;
  const auto server_ns = VarintField(meta, 2);
  const auto hash = BytesField(meta, 3);
  const auto sha256 = hash ? BytesField(*hash, 1) : std::nullopt;
  const auto topic = BytesField(meta, 4);
  const auto name = topic ? BytesField(*topic, 1) : std::nullopt;
  const auto expiry_ns = VarintField(meta, 5);
  const auto commit = VarintField(meta, 6);
  if (!id || !server_ns || !sha256 || !name || !expiry_ns || !commit) {
    return false;
  }
  row.sequence_id = static_cast<int64_t>(*id);
  row.server_ns = static_cast<int64_t>(*server_ns);
  row.message_hash = *sha256;
  row.topic = *name;
  row.expiry_ns = static_cast<int64_t>(*expiry_ns);
  row.is_commit_or_proposal = *commit != 0;
  return true;
}

}  // namespace

std::optional<store::StoredEnvelopeView> ReadServerEnvelope(std::string_view bytes) {
  const auto meta = BytesField(bytes, 1);     // ServerEnvelope.meta
  const auto payload = BytesField(bytes, 2);  // ServerEnvelope.envelope
  store::StoredEnvelopeView row;
  if (!meta || !payload || meta->empty() || !ReadMeta(*meta, row)) {
    return std::nullopt;
  }
  row.payload = *payload;
  return row;
}

// implements: docs/v3-api.md 4.1, 4.2 (one response message per row)
bool EncodeStreamRow(const store::StoredEnvelopeView& row, std::string* out) {
  if (row.topic.empty()) {
    return false;
  }
  switch (row.topic[0]) {
    case kGroupTopic:
      return AppendGroupMessage(*out, kWholeMessage, row, /*with_content=*/true);
    case kWelcomeTopic:
      return AppendWelcomeMessage(*out, kWholeMessage, row);
    default:
      return false;
  }
}

bool TranscodeStreamRow(std::string_view server_envelope, std::string* out) {
  const auto row = ReadServerEnvelope(server_envelope);
  return row && EncodeStreamRow(*row, out);
}

}  // namespace xb::api::v3

namespace xb::api::v3 {

namespace {

// Writes a length-delimited field's tag and length at `at`; returns the end.
char* PutLengthHeader(char* at, uint32_t number, uint64_t length) {
  *at++ = static_cast<char>((number << 3) | kWireLengthDelimited);
  return PutVarint(at, length);
}

}  // namespace

// implements: docs/v3-api.md 4.3 (a frame names its lane: the wave's mutate_id, 0 for live)
void WrapSubscribeRow(std::string_view topic, size_t row_bytes, uint64_t lane,
                      fanout::RowFraming* out) {
  constexpr uint32_t kV1 = 1;             // SubscribeResponse.v1
  constexpr uint32_t kMessages = 1;       // SubscribeResponse.V1.messages
  constexpr uint32_t kGroupMessages = 1;  // Messages.group_messages
  constexpr uint32_t kWelcomes = 2;       // Messages.welcome_messages
  constexpr uint32_t kMutateId = 3;       // Messages.mutate_id
  const uint32_t kind = !topic.empty() && topic[0] == kWelcomeTopic ? kWelcomes : kGroupMessages;
  char* tail = out->tail;
  if (lane != 0) {
    *tail++ = static_cast<char>((kMutateId << 3) | kWireVarint);
    tail = PutVarint(tail, lane);
  }
  out->tail_size = static_cast<uint8_t>(tail - out->tail);
  const size_t messages = LengthFieldSize(kind, row_bytes) + out->tail_size;
  const size_t v1 = LengthFieldSize(kMessages, messages);
  char* head = PutLengthHeader(out->head, kV1, v1);
  head = PutLengthHeader(head, kMessages, messages);
  head = PutLengthHeader(head, kind, row_bytes);
  out->head_size = static_cast<uint8_t>(head - out->head);
}

}  // namespace xb::api::v3
