// libFuzzer target for the V3 API's wire rewrites (issue 33, docs/v3-api.md 2.1, G13): the request
// bytes of SendWelcomeMessages, UploadKeyPackage and PublishIdentityUpdate as api/v3/publish_wrap.h
// rewraps them for Publish, without decoding them first; and stored payloads as api/v3/rows.h
// writes them as V3 messages.
//
// Input layout: byte 0 picks the case (modulo 8); the rest is the bytes:
//   0  WelcomesAsPublish(request)
//   1  LastMessageField(request, 1) and OneEnvelopeRequest around it
//   2..5  a stored row with that payload, written as GroupMessage (with and without content),
//         WelcomeMessage, CommitLogEntry and IdentityUpdateLog
//   6  an XIP-83 SubscribeRequest frame: CheckMutateFrame (api/request_bounds.h)
//   7  a row wrapped by WrapSubscribeRow (api/v3/stream_rows.h): the first byte of the rest picks
//      the topic kind and the lane, the others are the row
//
// Invariants checked:
//  - no crash, no sanitizer report, whatever the bytes;
//  - a rewrapped Welcome request decodes as a PublishRequest with one envelope per input Welcome
//    (as CountField counts them); a key package that decodes is rewrapped into a request of
//    exactly one envelope that decodes;
//  - a row the writers refuse appends nothing; a row they accept whose payload is a canonical
//    ClientEnvelope encoding (every stored payload is, API-211) appends one length-delimited field
//    that decodes as its V3 message, carrying the row's id. Other payloads are only written
//    without a crash: the writers copy fields, they do not validate them;
//  - CheckMutateFrame never accepts a frame that decodes as a SubscribeRequest whose Mutate has
//    more than 3 adds or 2 removes (the bounds this target passes); what it refuses is
//    INVALID_ARGUMENT;
//  - a wrapped row that decodes as a GroupMessage or WelcomeMessage gives a SubscribeResponse
//    whose Messages hold that one message under its kind, with the lane as mutate_id.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "api/request_bounds.h"
#include "api/v3/publish_wrap.h"
#include "api/v3/rows.h"
#include "api/v3/stream_rows.h"
#include "fuzz_input.h"
#include "identity/api/v1/identity.pb.h"
#include "mls/api/v1/mls.pb.h"
#include "mls/message_contents/commit_log.pb.h"
#include "validate/wire_fields.h"
#include "xmtp/backend/v1/backend.pb.h"

namespace {

namespace v1 = xmtp::backend::v1;
namespace mls = xmtp::mls::api::v1;
namespace v3 = xb::api::v3;

constexpr int64_t kRowId = 4242;

void CheckWelcomes(std::string_view request) {
  const auto wrapped = v3::WelcomesAsPublish(request);
  if (!wrapped) {
    return;
  }
  const auto inputs = xb::validate::CountField(request, 1);
  XB_FUZZ_CHECK(inputs.has_value());
  v1::PublishRequest publish;
  XB_FUZZ_CHECK(publish.ParseFromString(*wrapped));
  XB_FUZZ_CHECK(static_cast<size_t>(publish.envelopes_size()) == *inputs);
}

void CheckOneEnvelope(std::string_view request) {
  const auto payload = v3::LastMessageField(request, 1);
  if (!payload) {
    return;
  }
  const std::string wrapped = v3::OneEnvelopeRequest(v3::kEnvelopeKeyPackage, *payload);
  // The payload is passed on unchecked (Publish's parser refuses what does not decode); one that
  // decodes makes a request that does.
  v1::KeyPackage key_package;
  if (key_package.ParseFromString(std::string(*payload))) {
    v1::PublishRequest publish;
    XB_FUZZ_CHECK(publish.ParseFromString(wrapped));
    XB_FUZZ_CHECK(publish.envelopes_size() == 1);
  }
}

// `out` holds one length-delimited field 1 (a repeated bytes field of FetchKeyPackagesRequest);
// its bytes decode as T with the row's id in `id`.
template <typename T, typename IdOf>
void CheckWritten(const std::string& out, IdOf id_of) {
  mls::FetchKeyPackagesRequest shell;
  XB_FUZZ_CHECK(shell.ParseFromString(out));
  XB_FUZZ_CHECK(shell.installation_keys_size() == 1);
  T message;
  XB_FUZZ_CHECK(message.ParseFromString(shell.installation_keys(0)));
  XB_FUZZ_CHECK(id_of(message) == static_cast<uint64_t>(kRowId));
}

template <typename T, typename Write, typename IdOf>
void CheckRow(const xb::store::StoredEnvelopeView& row, Write write, IdOf id_of) {
  std::string out;
  if (!write(out, row)) {
    XB_FUZZ_CHECK(out.empty());
    return;
  }
  // Stored payloads are canonical encodings (API-211): no unknown field, each field once, in
  // order. Only those are checked to decode; the writers copy fields, they do not validate them.
  v1::ClientEnvelope stored;
  if (stored.ParseFromString(std::string(row.payload)) &&
      stored.SerializeAsString() == row.payload) {
    CheckWritten<T>(out, id_of);
  }
}

void CheckRows(uint8_t which, std::string_view payload) {
  const std::string topic(17, '\x01');
  const xb::store::StoredEnvelopeView row{.sequence_id = kRowId,
                                          .server_ns = 1'700'000'000'000'000'000,
                                          .message_hash = {},
                                          .topic = topic,
                                          .expiry_ns = 0,
                                          .is_commit_or_proposal = (which & 1) != 0,
                                          .payload = payload};
  switch (which % 4) {
    case 0:
      for (bool content : {true, false}) {
        CheckRow<mls::GroupMessage>(
            row,
            [&](std::string& o, const auto& r) { return v3::AppendGroupMessage(o, 1, r, content); },
            [](const mls::GroupMessage& m) { return m.v1().id(); });
      }
      break;
    case 1:
      CheckRow<mls::WelcomeMessage>(
          row, [](std::string& o, const auto& r) { return v3::AppendWelcomeMessage(o, 1, r); },
          [](const mls::WelcomeMessage& m) {
            return m.has_v1() ? m.v1().id() : m.welcome_pointer().id();
          });
      break;
    case 2:
      CheckRow<xmtp::mls::message_contents::CommitLogEntry>(
          row, [](std::string& o, const auto& r) { return v3::AppendCommitLogEntry(o, 1, r); },
          [](const auto& m) { return m.sequence_id(); });
      break;
    default:
      CheckRow<xmtp::identity::api::v1::GetIdentityUpdatesResponse::IdentityUpdateLog>(
          row, [](std::string& o, const auto& r) { return v3::AppendIdentityUpdateLog(o, 1, r); },
          [](const auto& m) { return m.sequence_id(); });
  }
}

void CheckMutateFrame(std::string_view frame) {
  constexpr uint64_t kMaxAdds = 3;
  constexpr uint64_t kMaxRemoves = 2;
  const xb::Status checked = xb::api::CheckMutateFrame(frame, kMaxAdds, kMaxRemoves);
  mls::SubscribeRequest request;
  const bool parsed = request.ParseFromArray(frame.data(), static_cast<int>(frame.size()));
  const auto& mutate = request.v1().mutate();
  // The count check is a bound, not a parser: it may pass a frame that does not decode (the parse
  // then refuses it) and refuse one that decodes to fewer entries than it holds (a later oneof
  // member clears an earlier Mutate), but it never passes a decoded Mutate above the bounds.
  if (parsed && checked.ok()) {
    XB_FUZZ_CHECK(static_cast<uint64_t>(mutate.adds_size()) <= kMaxAdds &&
                  static_cast<uint64_t>(mutate.removes_size()) <= kMaxRemoves);
  }
  if (!checked.ok()) {
    XB_FUZZ_CHECK(checked.code() == xb::StatusCode::kInvalidArgument);
  }
}

void CheckWrappedRow(std::string_view bytes) {
  if (bytes.empty()) {
    return;
  }
  const bool welcome = (bytes[0] & 1) != 0;
  const uint64_t lane =
      static_cast<uint8_t>(bytes[0]) >> 1 == 127 ? UINT64_MAX : static_cast<uint8_t>(bytes[0]) >> 1;
  const std::string_view row = bytes.substr(1);
  const std::string topic(1, welcome ? '\x01' : '\x00');
  xb::fanout::RowFraming framing;
  v3::WrapSubscribeRow(topic, row.size(), lane, &framing);
  std::string message(framing.head, framing.head_size);
  message.append(row);
  message.append(framing.tail, framing.tail_size);
  mls::GroupMessage group;
  mls::WelcomeMessage welcome_message;
  if (welcome ? !welcome_message.ParseFromArray(row.data(), static_cast<int>(row.size()))
              : !group.ParseFromArray(row.data(), static_cast<int>(row.size()))) {
    return;
  }
  mls::SubscribeResponse response;
  XB_FUZZ_CHECK(response.ParseFromString(message));
  const auto& messages = response.v1().messages();
  XB_FUZZ_CHECK(messages.mutate_id() == lane);
  XB_FUZZ_CHECK(messages.group_messages_size() + messages.welcome_messages_size() == 1);
  XB_FUZZ_CHECK((messages.welcome_messages_size() == 1) == welcome);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  xb::fuzz::Input input(data, size);
  const uint8_t which = input.Byte() % 8;
  const std::string_view bytes = input.rest();
  if (which == 0) {
    CheckWelcomes(bytes);
  } else if (which == 1) {
    CheckOneEnvelope(bytes);
  } else if (which == 6) {
    CheckMutateFrame(bytes);
  } else if (which == 7) {
    CheckWrappedRow(bytes);
  } else {
    CheckRows(static_cast<uint8_t>(which - 2), bytes);
  }
  return 0;
}
