// libFuzzer target for the admission parsers of src/validate: ParseEnvelope (envelope.h),
// ParseGroupMessageData (mls_message.h) and ParseKeyPackage (key_package.h), on untrusted bytes.
// Not wired into CMake here: tests/fuzz owns the fuzz build; add it there next to the others
// (sources: this file + the xb_validate and xb_crypto sources + base/status.cc, linked with
// protobuf, the generated xb_proto code and OpenSSL::Crypto).
//
// Input layout: byte 0 selects the target (0: ClientEnvelope protobuf, 1: GroupMessage.data,
// 2: key_package_tls_serialized); the rest is the payload.
//
// Invariants checked:
//  - no crash, no sanitizer report, whatever the bytes;
//  - an accepted envelope has a valid TOPIC-003 topic of its kind, hash = SHA-256(stored bytes),
//    and its stored bytes are canonical: decoding and parsing them again gives the same topic,
//    kind, flag, bytes and hash (API-211);
//  - a rejected envelope is REASON_MALFORMED_PAYLOAD with a printable message;
//  - a parsed group message fits its input and parses the same from its own bytes, trailing
//    bytes dropped;
//  - a parsed key package's ranges lie inside its bytes, its TBS starts at 0 and its signature
//    ends the input.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "crypto/sha256.h"
#include "validate/envelope.h"
#include "validate/key_package.h"
#include "validate/mls_message.h"

namespace {

#define XB_VALIDATE_FUZZ_CHECK(condition)                                                    \
  do {                                                                                       \
    if (!(condition)) {                                                                      \
      std::fprintf(stderr, "%s:%d: invariant broken: %s\n", __FILE__, __LINE__, #condition); \
      std::abort();                                                                          \
    }                                                                                        \
  } while (0)

using xb::validate::ParsedEnvelope;
using xb::validate::Rejection;

void FuzzEnvelope(std::string_view bytes) {
  xmtp::backend::v1::ClientEnvelope envelope;
  if (!envelope.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return;
  }
  auto result = xb::validate::ParseEnvelope(envelope);
  if (!result.ok()) {
    XB_VALIDATE_FUZZ_CHECK(result.error().reason ==
                           xmtp::backend::v1::PublishError::REASON_MALFORMED_PAYLOAD);
    for (char c : result.error().message) {
      XB_VALIDATE_FUZZ_CHECK(c >= 0x20 && c < 0x7f);
    }
    return;
  }
  const ParsedEnvelope& parsed = result.value();
  XB_VALIDATE_FUZZ_CHECK(xb::validate::ValidateRequestTopic(parsed.topic).ok());
  XB_VALIDATE_FUZZ_CHECK(xb::validate::KindOf(parsed.topic) == parsed.kind);
  XB_VALIDATE_FUZZ_CHECK(parsed.message_hash == xb::crypto::Sha256(parsed.stored_bytes));
  XB_VALIDATE_FUZZ_CHECK(
      parsed.is_commit_or_proposal ? parsed.kind == xb::validate::TopicKind::kGroupMessage : true);

  xmtp::backend::v1::ClientEnvelope again;
  XB_VALIDATE_FUZZ_CHECK(again.ParseFromString(parsed.stored_bytes));
  auto second = xb::validate::ParseEnvelope(again);
  XB_VALIDATE_FUZZ_CHECK(second.ok());
  const ParsedEnvelope* reparsed = &second.value();
  XB_VALIDATE_FUZZ_CHECK(reparsed->topic == parsed.topic);
  XB_VALIDATE_FUZZ_CHECK(reparsed->kind == parsed.kind);
  XB_VALIDATE_FUZZ_CHECK(reparsed->is_commit_or_proposal == parsed.is_commit_or_proposal);
  XB_VALIDATE_FUZZ_CHECK(reparsed->stored_bytes == parsed.stored_bytes);
  XB_VALIDATE_FUZZ_CHECK(reparsed->message_hash == parsed.message_hash);
}

void FuzzGroupMessage(std::string_view data) {
  auto parsed = xb::validate::ParseGroupMessageData(data);
  if (!parsed.ok()) {
    return;
  }
  XB_VALIDATE_FUZZ_CHECK(parsed->message_bytes >= 4 && parsed->message_bytes <= data.size());
  auto exact = xb::validate::ParseGroupMessageData(data.substr(0, parsed->message_bytes));
  XB_VALIDATE_FUZZ_CHECK(exact.ok());
  XB_VALIDATE_FUZZ_CHECK(exact->group_id == parsed->group_id);
  XB_VALIDATE_FUZZ_CHECK(exact->content_type == parsed->content_type);
  XB_VALIDATE_FUZZ_CHECK(exact->message_bytes == parsed->message_bytes);
}

void FuzzKeyPackage(std::string_view bytes) {
  auto parsed = xb::validate::ParseKeyPackage(bytes);
  if (!parsed.ok()) {
    return;
  }
  auto inside = [&](xb::validate::ByteRange r) {
    return r.offset <= bytes.size() && r.size <= bytes.size() - r.offset;
  };
  const auto& leaf = parsed->leaf_node;
  for (xb::validate::ByteRange r :
       {parsed->init_key, parsed->tbs, parsed->signature, leaf.encryption_key, leaf.signature_key,
        leaf.credential_content, leaf.parent_hash, leaf.tbs, leaf.signature}) {
    XB_VALIDATE_FUZZ_CHECK(inside(r));
  }
  XB_VALIDATE_FUZZ_CHECK(parsed->tbs.offset == 0);
  XB_VALIDATE_FUZZ_CHECK(parsed->signature.offset + parsed->signature.size == bytes.size());
  XB_VALIDATE_FUZZ_CHECK(parsed->bytes == bytes);
  XB_VALIDATE_FUZZ_CHECK(leaf.lifetime.has_value() ==
                         (leaf.source == xb::validate::LeafNodeSource::kKeyPackage));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) {
    return 0;
  }
  const std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 3) {
    case 0:
      FuzzEnvelope(rest);
      break;
    case 1:
      FuzzGroupMessage(rest);
      break;
    default:
      FuzzKeyPackage(rest);
      break;
  }
  return 0;
}
