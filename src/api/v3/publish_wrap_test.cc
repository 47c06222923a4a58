#include "api/v3/publish_wrap.h"

#include <gtest/gtest.h>

#include "mls/api/v1/mls.pb.h"
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

// verifies: issue 33 (docs/v3-api.md 3.2) — each input becomes one stored Welcome, in order, with
// welcome_metadata moved from 7 to 5 and fields the schema does not define left out.
TEST(PublishWrap, WelcomesBecomeOneEnvelopeEachWithTheStoredNumbers) {
  namespace mls = xmtp::mls::api::v1;
  mls::SendWelcomeMessagesRequest request;
  auto* v1 = request.add_messages()->mutable_v1();
  v1->set_installation_key(std::string(32, 'k'));
  v1->set_data(std::string(200, 'd'));
  v1->set_hpke_public_key("hpke");
  v1->set_wrapper_algorithm(xmtp::mls::message_contents::WELCOME_WRAPPER_ALGORITHM_CURVE25519);
  v1->set_welcome_metadata("meta");
  v1->GetReflection()->MutableUnknownFields(v1)->AddLengthDelimited(5, "stray");
  auto* pointer = request.add_messages()->mutable_welcome_pointer();
  pointer->set_installation_key(std::string(32, 'p'));
  pointer->set_welcome_pointer("ptr");
  const auto bytes = WelcomesAsPublish(request.SerializeAsString());
  ASSERT_TRUE(bytes.has_value());
  xmtp::backend::v1::PublishRequest publish;
  ASSERT_TRUE(publish.ParseFromString(*bytes));
  ASSERT_EQ(publish.envelopes_size(), 2);
  const auto& stored = publish.envelopes(0).welcome_message().v1();
  EXPECT_EQ(stored.installation_key(), std::string(32, 'k'));
  EXPECT_EQ(stored.data(), std::string(200, 'd'));
  EXPECT_EQ(stored.hpke_public_key(), "hpke");
  EXPECT_EQ(static_cast<int>(stored.wrapper_algorithm()), 1);
  EXPECT_EQ(stored.welcome_metadata(), "meta");
  EXPECT_TRUE(stored.GetReflection()->GetUnknownFields(stored).empty());
  const auto& stored_pointer = publish.envelopes(1).welcome_message().welcome_pointer();
  EXPECT_EQ(stored_pointer.installation_key(), std::string(32, 'p'));
  EXPECT_EQ(stored_pointer.welcome_pointer(), "ptr");
  // An input with no version is still one (empty) Welcome, so that Publish names its index.
  mls::SendWelcomeMessagesRequest empty_input;
  empty_input.add_messages();
  const auto one = WelcomesAsPublish(empty_input.SerializeAsString());
  ASSERT_TRUE(one.has_value());
  ASSERT_TRUE(publish.ParseFromString(*one));
  ASSERT_EQ(publish.envelopes_size(), 1);
  EXPECT_TRUE(publish.envelopes(0).has_welcome_message());
  EXPECT_EQ(WelcomesAsPublish(std::string("\x0a\x04\x0a\x09", 4)), std::nullopt);
}

}  // namespace
}  // namespace xb::api::v3
