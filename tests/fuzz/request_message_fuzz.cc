// libFuzzer target for every request message of API.md 2.1: the bytes of one gRPC message decoded
// as the server decodes it (protobuf's ParseFromString, as rpc::Unary, SubscribeStatic and the
// Subscribe stream do), then the server's own pure request checks: TOPIC-003 topic validation
// (validate/topic.h) for Query, QueryNewest, Subscribe updates and SubscribeStatic; the publish
// size measures and the admission parse of each envelope (validate/canonical.h,
// validate/envelope.h); the CAIP-10 and eip155 checks of VerifySmartContractWalletSignatures
// (validate/identity_update.h). The Notification and Attachment requests exist in the proto
// although their services are not built; they are decoded too.
//
// Input layout: byte 0 picks the request type (kRequests below, modulo its size); the rest is
// the message bytes.
//
// Invariants checked:
//  - no crash, no sanitizer report, whatever the bytes;
//  - a decoded request re-encodes to at most twice the bytes it came in (a negative int32 or
//    enum value read from a 5-byte varint is written in 10), and that encoding decodes and
//    re-encodes to itself;
//  - a topic that passes ValidateRequestTopic is its kind byte and an identifier of that kind's
//    length, and MakeTopic(KindOf, IdentifierOf) gives it back; a refused one is
//    INVALID_ARGUMENT with a short printable message;
//  - CanonicalRequestSize and CanonicalSize are at most the decoded value's own encoded size; an
//    envelope ParseEnvelope accepts has a valid topic of its kind and stored bytes of
//    CanonicalSize whose SHA-256 is its hash; a refused one is REASON_MALFORMED_PAYLOAD;
//  - a CAIP-10 id splits back into itself; an eip155 chain id is the reference's decimal value;
//  - with XB_FUZZ_DECODE_RATIO=N in the environment: the heap the decoded request holds is at
//    most N times its wire size plus 16 KiB (API.md/issue 28: no request may use more than a
//    small multiple of its own size). Off by default: protobuf decoding as the server does it
//    today fails it for requests of many small sub-messages (see bench/README.md).
#include <sanitizer/allocator_interface.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "crypto/sha256.h"
#include "fuzz_input.h"
#include "grpc/health/v1/health.pb.h"
#include "validate/canonical.h"
#include "validate/envelope.h"
#include "validate/identity_update.h"
#include "validate/topic.h"
#include "xmtp/backend/v1/backend.pb.h"

namespace {

namespace v1 = xmtp::backend::v1;
namespace health = grpc::health::v1;
namespace validate = xb::validate;

size_t g_decode_ratio = 0;  // 0: the decode-cost check is off
constexpr size_t kDecodeSlackBytes = 16 * 1024;

void CheckPrintable(std::string_view text) {
  XB_FUZZ_CHECK(!text.empty() && text.size() < 128);
  for (char c : text) {
    XB_FUZZ_CHECK(c >= 0x20 && c < 0x7f);
  }
}

void CheckTopic(const std::string& topic) {
  const xb::Status status = validate::ValidateRequestTopic(topic);
  if (!status.ok()) {
    XB_FUZZ_CHECK(status.code() == xb::StatusCode::kInvalidArgument);
    CheckPrintable(status.message());
    return;
  }
  const validate::TopicKind kind = validate::KindOf(topic);
  XB_FUZZ_CHECK(static_cast<uint8_t>(topic[0]) == static_cast<uint8_t>(kind));
  XB_FUZZ_CHECK(topic.size() == 1 + validate::IdentifierLength(kind));
  XB_FUZZ_CHECK(validate::MakeTopic(kind, validate::IdentifierOf(topic)) == topic);
}

template <typename Queries>
void CheckTopicQueries(const Queries& queries) {
  for (const v1::TopicQuery& q : queries) {
    CheckTopic(q.topic().topic());
  }
}

template <typename Topics>
void CheckTopics(const Topics& topics) {
  for (const v1::Topic& t : topics) {
    CheckTopic(t.topic());
  }
}

void CheckPublish(const v1::PublishRequest& request) {
  XB_FUZZ_CHECK(validate::CanonicalRequestSize(request) <= request.ByteSizeLong());
  for (const v1::ClientEnvelope& envelope : request.envelopes()) {
    const size_t canonical = validate::CanonicalSize(envelope);
    XB_FUZZ_CHECK(canonical <= envelope.ByteSizeLong());
    auto parsed_or = validate::ParseEnvelope(envelope);
    if (!parsed_or.ok()) {
      XB_FUZZ_CHECK(parsed_or.error().reason == v1::PublishError::REASON_MALFORMED_PAYLOAD);
      CheckPrintable(parsed_or.error().message);
      continue;
    }
    const auto& parsed = parsed_or.value();
    XB_FUZZ_CHECK(validate::ValidateRequestTopic(parsed.topic).ok());
    XB_FUZZ_CHECK(validate::KindOf(parsed.topic) == parsed.kind);
    XB_FUZZ_CHECK(parsed.stored_bytes.size() == canonical);
    XB_FUZZ_CHECK(parsed.message_hash == xb::crypto::Sha256(parsed.stored_bytes));
    XB_FUZZ_CHECK(parsed.key_package.has_value() ==
                  (parsed.kind == validate::TopicKind::kKeyPackage));
    XB_FUZZ_CHECK(parsed.identity_update.has_value() ==
                  (parsed.kind == validate::TopicKind::kIdentityUpdate));
  }
}

void CheckScw(const v1::VerifySmartContractWalletSignaturesRequest& request) {
  for (const auto& s : request.signatures()) {
    const auto account = validate::ParseCaip10(s.account_id());
    if (!account) {
      continue;
    }
    XB_FUZZ_CHECK(account->chain + ":" + account->address == s.account_id());
    const auto chain_id = validate::Eip155ChainId(*account);
    if (chain_id) {
      XB_FUZZ_CHECK(account->chain == "eip155:" + std::to_string(*chain_id));
      XB_FUZZ_CHECK(account->address.size() == 42 && account->address.starts_with("0x"));
    }
  }
}

void CheckSubscribe(const v1::SubscribeRequest& request) {
  if (request.request_case() == v1::SubscribeRequest::kUpdate) {
    CheckTopicQueries(request.update().adds());
    CheckTopics(request.update().removes());
  }
}

// Decodes `bytes` as Req the way the server does, measures what the decoded value holds, checks
// the encoding invariants, then runs `check` on it.
template <typename Req, typename Check>
void Fuzz(std::string_view bytes, Check check) {
  const std::string wire(bytes);  // the server decodes from a std::string
  const size_t before = __sanitizer_get_current_allocated_bytes();
  Req request;
  if (!request.ParseFromString(wire)) {
    return;
  }
  const size_t after = __sanitizer_get_current_allocated_bytes();
  if (g_decode_ratio != 0 && after > before) {
    const size_t held = after - before;
    if (held > g_decode_ratio * wire.size() + kDecodeSlackBytes) {
      std::fprintf(stderr, "decoding %s: %zu wire bytes hold %zu heap bytes (%.1fx)\n",
                   Req::descriptor()->full_name().c_str(), wire.size(), held,
                   static_cast<double>(held) / static_cast<double>(wire.size()));
      XB_FUZZ_CHECK(held <= g_decode_ratio * wire.size() + kDecodeSlackBytes);
    }
  }
  const std::string encoded = request.SerializeAsString();
  XB_FUZZ_CHECK(encoded.size() <= 2 * wire.size());
  Req again;
  XB_FUZZ_CHECK(again.ParseFromString(encoded));
  XB_FUZZ_CHECK(again.SerializeAsString() == encoded);
  check(request);
}

template <typename Req>
void FuzzDecodeOnly(std::string_view bytes) {
  Fuzz<Req>(bytes, [](const Req&) {});
}

using Entry = void (*)(std::string_view);

// API.md 2.1, in its order; the byte that selects each is its index here.
constexpr Entry kRequests[] = {
    // QueryService
    [](std::string_view b) {
      Fuzz<v1::QueryRequest>(b, [](const auto& r) { CheckTopicQueries(r.queries()); });
    },
    [](std::string_view b) {
      Fuzz<v1::QueryNewestRequest>(b, [](const auto& r) { CheckTopics(r.topics()); });
    },
    FuzzDecodeOnly<v1::GetRequest>,
    // PublishService
    [](std::string_view b) { Fuzz<v1::PublishRequest>(b, CheckPublish); },
    // SubscriptionService: one client frame of Subscribe, the request of SubscribeStatic
    [](std::string_view b) { Fuzz<v1::SubscribeRequest>(b, CheckSubscribe); },
    [](std::string_view b) {
      Fuzz<v1::SubscribeStaticRequest>(b, [](const auto& r) { CheckTopicQueries(r.topics()); });
    },
    // IdentityService
    FuzzDecodeOnly<v1::GetInboxIdsRequest>,
    [](std::string_view b) { Fuzz<v1::VerifySmartContractWalletSignaturesRequest>(b, CheckScw); },
    // ConfigurationService
    FuzzDecodeOnly<v1::GetConfigurationRequest>,
    // NotificationService, AttachmentService (in the proto; the services are not built)
    FuzzDecodeOnly<v1::RegisterRequest>,
    FuzzDecodeOnly<v1::UnregisterRequest>,
    FuzzDecodeOnly<v1::UpdateSubscriptionsRequest>,
    FuzzDecodeOnly<v1::CreateUploadRequest>,
    // grpc.health.v1.Health
    FuzzDecodeOnly<health::HealthCheckRequest>,
    FuzzDecodeOnly<health::HealthListRequest>,
};

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (const char* ratio = std::getenv("XB_FUZZ_DECODE_RATIO")) {
    g_decode_ratio = std::strtoull(ratio, nullptr, 10);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  xb::fuzz::Input input(data, size);
  const uint8_t selector = input.Byte();
  kRequests[selector % std::size(kRequests)](input.rest());
  return 0;
}
