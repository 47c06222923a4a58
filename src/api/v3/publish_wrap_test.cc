#include "api/v3/publish_wrap.h"

#include <gtest/gtest.h>

#include "xmtp/backend/v1/backend.pb.h"

namespace xb::api::v3 {
namespace {

TEST(PublishWrap, OneEnvelopeRequestDecodesAsPublishRequest) {
  xmtp::backend::v1::KeyPackage key_package;
  key_package.set_key_package_tls_serialized(std::string(300, '\x07'));  // a two-byte length
  const std::string bytes =
      OneEnvelopeRequest(kEnvelopeKeyPackage, key_package.SerializeAsString());
  xmtp::backend::v1::PublishRequest request;
  ASSERT_TRUE(request.ParseFromString(bytes));
  ASSERT_EQ(request.envelopes_size(), 1);
  ASSERT_TRUE(request.envelopes(0).has_key_package());
  EXPECT_EQ(request.envelopes(0).key_package().key_package_tls_serialized(),
            std::string(300, '\x07'));
}

TEST(PublishWrap, LastMessageFieldTakesTheLastAndRefusesMalformed) {
  // field 1 "ab", field 2 varint 1, field 1 "xyz"
  const std::string message(
      "\x0a\x02"
      "ab"
      "\x10\x01"
      "\x0a\x03"
      "xyz",
      11);
  EXPECT_EQ(LastMessageField(message, 1), std::optional<std::string_view>("xyz"));
  EXPECT_EQ(LastMessageField(message, 3), std::nullopt);
  EXPECT_EQ(LastMessageField(std::string("\x0a\x05"
                                         "ab",
                                         4),
                             1),
            std::nullopt);  // cut short
  EXPECT_EQ(LastMessageField("", 1), std::nullopt);
}

}  // namespace
}  // namespace xb::api::v3
