// Sender suppression (push/suppression.h, spec/PUSH.md section 7): the epoch vectors, the
// HMAC vector, every deliver case of the rule, and the informative client-side HKDF example.
#include "push/suppression.h"

#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/kdf.h>

#include <string>

#include "xmtp/backend/v1/backend.pb.h"

namespace xb::push {
namespace {

namespace v1 = xmtp::backend::v1;

constexpr int64_t kNanos = 1'000'000'000;
constexpr int64_t kServerNs = 1'700'000'000'000'000'000;  // epoch 655

std::string FromHex(std::string_view hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<char>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16)));
  }
  return out;
}

std::array<uint8_t, 32> Mac32(std::string_view hex) {
  const std::string bytes = FromHex(hex);
  std::array<uint8_t, 32> mac{};
  EXPECT_EQ(bytes.size(), mac.size());
  std::copy(bytes.begin(), bytes.end(), mac.begin());
  return mac;
}

std::string GroupMessagePayload(std::string data) {
  v1::ClientEnvelope envelope;
  envelope.mutable_group_message()->set_data(std::move(data));
  envelope.mutable_group_message()->set_should_push(true);
  return envelope.SerializeAsString();
}

constexpr std::string_view kVectorMac =
    "c41d1dbce85bb51476279410d0e57263490979fe3179ae29ea520aee186a5e0d";

// The section 7 vector: key 0x2a x 42 in slot 1 of a window based at 654, envelope at epoch 655.
struct Vector {
  std::string payload = GroupMessagePayload("suppressed payload");
  SuppressionInput Input() const {
    SuppressionInput input;
    input.server_ns = kServerNs;
    input.sender_hmac = Mac32(kVectorMac);
    input.hmac_epoch_base = 654;
    input.hmac_keys[1] = std::string(42, '\x2a');
    input.payload = payload;
    return input;
  }
};

// verifies: PUSH-230
TEST(Suppression, EpochVectors) {
  EXPECT_EQ(HmacEpoch(kServerNs), 655);
  EXPECT_EQ(HmacEpoch(1'700'351'999 * kNanos), 655);
  EXPECT_EQ(HmacEpoch(1'700'351'999 * kNanos + 999'999'999), 655);
  EXPECT_EQ(HmacEpoch(1'700'352'000 * kNanos), 656);
  EXPECT_EQ(HmacEpoch(0), 0);
  EXPECT_EQ(HmacEpoch(2'592'000 * kNanos - 1), 0);
  EXPECT_EQ(HmacEpoch(2'592'000 * kNanos), 1);
  EXPECT_EQ(HmacEpoch(-1), -1);  // floor, not truncation
  EXPECT_EQ(HmacEpoch(INT64_MAX), INT64_MAX / kNanos / 2'592'000);
}

// verifies: PUSH-230
TEST(Suppression, TheVectorSuppressesInEverySlot) {
  const Vector v;
  EXPECT_TRUE(Suppressed(v.Input()));
  for (int64_t slot = 0; slot < 3; ++slot) {
    SuppressionInput input = v.Input();
    input.hmac_keys = {};
    input.hmac_keys[static_cast<size_t>(slot)] = std::string(42, '\x2a');
    input.hmac_epoch_base = 655 - slot;
    EXPECT_TRUE(Suppressed(input)) << slot;
  }
}

// verifies: PUSH-230
TEST(Suppression, DeliversWithoutSenderHmacOrKeyWindow) {
  const Vector v;
  SuppressionInput no_hmac = v.Input();
  no_hmac.sender_hmac.reset();
  EXPECT_FALSE(Suppressed(no_hmac));
  SuppressionInput no_base = v.Input();
  no_base.hmac_epoch_base.reset();
  EXPECT_FALSE(Suppressed(no_base));
}

// verifies: PUSH-230
TEST(Suppression, DeliversOutsideTheWindowOrOnAnEmptySlot) {
  const Vector v;
  SuppressionInput before = v.Input();  // idx = -1
  before.hmac_epoch_base = 656;
  before.hmac_keys = {std::string(42, '\x2a'), std::string(42, '\x2a'), std::string(42, '\x2a')};
  EXPECT_FALSE(Suppressed(before));
  SuppressionInput after = before;  // idx = 3
  after.hmac_epoch_base = 652;
  EXPECT_FALSE(Suppressed(after));
  SuppressionInput empty_slot = v.Input();  // idx = 1, key only in slot 0
  empty_slot.hmac_keys = {std::string(42, '\x2a'), std::nullopt, std::nullopt};
  EXPECT_FALSE(Suppressed(empty_slot));
  SuppressionInput far = v.Input();  // epoch - base overflows
  far.hmac_epoch_base = INT64_MIN;
  EXPECT_FALSE(Suppressed(far));
}

// verifies: PUSH-230
TEST(Suppression, TheEpochIsTheEnvelopesServerTime) {
  const Vector v;
  SuppressionInput last_second = v.Input();
  last_second.server_ns = 1'700'351'999 * kNanos;
  EXPECT_TRUE(Suppressed(last_second));
  SuppressionInput next_epoch = v.Input();  // epoch 656: slot 2, which is empty
  next_epoch.server_ns = 1'700'352'000 * kNanos;
  EXPECT_FALSE(Suppressed(next_epoch));
}

// verifies: PUSH-230
TEST(Suppression, DeliversWhenThePayloadIsNotAGroupMessage) {
  const Vector v;
  SuppressionInput undecodable = v.Input();
  const std::string garbage = "\xff\xff\xff";
  undecodable.payload = garbage;
  EXPECT_FALSE(Suppressed(undecodable));

  v1::ClientEnvelope welcome;
  welcome.mutable_welcome_message()->mutable_v1()->set_data("suppressed payload");
  const std::string welcome_bytes = welcome.SerializeAsString();
  SuppressionInput not_group = v.Input();
  not_group.payload = welcome_bytes;
  EXPECT_FALSE(Suppressed(not_group));

  SuppressionInput empty = v.Input();  // an envelope with no payload set
  empty.payload = "";
  EXPECT_FALSE(Suppressed(empty));
}

// verifies: PUSH-230
TEST(Suppression, DeliversOnAWrongMac) {
  const Vector v;
  SuppressionInput flipped = v.Input();
  (*flipped.sender_hmac)[31] ^= 1;
  EXPECT_FALSE(Suppressed(flipped));
  SuppressionInput other_key = v.Input();
  other_key.hmac_keys[1] = std::string(42, '\x2b');
  EXPECT_FALSE(Suppressed(other_key));
  const std::string other_data = GroupMessagePayload("suppressed payload!");
  SuppressionInput other_payload = v.Input();
  other_payload.payload = other_data;
  EXPECT_FALSE(Suppressed(other_payload));
}

// HKDF-SHA256 (RFC 5869) through OpenSSL's EVP_PKEY_HKDF.
std::string Hkdf(std::string_view salt, std::string_view ikm, std::string_view info, size_t size) {
  EVP_PKEY_CTX* ctx = EVP_PKEY_CTX_new_id(EVP_PKEY_HKDF, nullptr);
  std::string out(size, '\0');
  size_t out_size = size;
  const auto u = [](std::string_view s) {
    return reinterpret_cast<const unsigned char*>(s.data());
  };
  const bool ok = ctx != nullptr && EVP_PKEY_derive_init(ctx) > 0 &&
                  EVP_PKEY_CTX_set_hkdf_md(ctx, EVP_sha256()) > 0 &&
                  EVP_PKEY_CTX_set1_hkdf_salt(ctx, u(salt), static_cast<int>(salt.size())) > 0 &&
                  EVP_PKEY_CTX_set1_hkdf_key(ctx, u(ikm), static_cast<int>(ikm.size())) > 0 &&
                  EVP_PKEY_CTX_add1_hkdf_info(ctx, u(info), static_cast<int>(info.size())) > 0 &&
                  EVP_PKEY_derive(ctx, reinterpret_cast<unsigned char*>(out.data()), &out_size) > 0;
  EVP_PKEY_CTX_free(ctx);
  EXPECT_TRUE(ok);
  EXPECT_EQ(out_size, size);
  return out;
}

// The informative client-side example of section 7 (PUSH-258, open point 4): the key the client
// derives for epoch 655, and our HMAC of `suppressed payload` under it.
// verifies: PUSH-230
TEST(Suppression, InformativeHkdfExampleMatches) {
  std::string root_key;
  for (int i = 0; i < 42; ++i) {
    root_key.push_back(static_cast<char>(i));
  }
  const std::string group_id(16, '\x11');
  std::string info = group_id;
  for (int i = 0; i < 8; ++i) {
    info.push_back(static_cast<char>((uint64_t{655} >> (8 * i)) & 0xff));  // int64_le(655)
  }
  const std::string key = Hkdf("libXMTP HKDF salt!", root_key + group_id, info, 42);
  EXPECT_EQ(key, FromHex("95a4b960a7748267863221c72ec6eec1f485e147df9490ac1e3deef7518ddd8b112b3de9a"
                         "a7ba1701095"));

  const std::string payload = GroupMessagePayload("suppressed payload");
  SuppressionInput input;
  input.server_ns = kServerNs;
  input.sender_hmac = Mac32("37db411ff92eede1bfe223bcc16c1b1281df5c120d48f60511d054a4d9d3a791");
  input.hmac_epoch_base = 654;
  input.hmac_keys[1] = key;
  input.payload = payload;
  EXPECT_TRUE(Suppressed(input));
}

}  // namespace
}  // namespace xb::push
