#include "push/body.h"

#include <gtest/gtest.h>

#include <regex>
#include <set>

#include "push/channel.h"

namespace xb::push {
namespace {

// verifies: PUSH-235
TEST(WebhookSignature, MatchesTheSpecVector) {
  const std::string key(32, '\x07');
  const std::string body =
      WebhookBody(std::string("\x01\x02\x03", 3), 9007199254740993ULL, std::string("\x01\x01", 2));
  EXPECT_EQ(body, R"({"topic":"AQID","sequence_id":"9007199254740993","recipient_id":"0101"})");
  EXPECT_EQ(WebhookSignature(key, "fixed-id", "1700000000", body),
            "v1,IszeBLRjxb7spJ5RLi+KW0w/aK3Buioq9E6jl3MKWZw=");
}

// verifies: PUSH-259
TEST(Bodies, MatchTheBodyEncodingVector) {
  const std::string topic("\x01\x02\x03", 3);
  EXPECT_EQ(
      ApnsBody(topic, 18446744073709551615ULL),
      R"({"aps":{"content-available":1},"topic":"AQID","sequence_id":"18446744073709551615"})");
  EXPECT_EQ(
      FcmBody("tok\"en", topic, 18446744073709551615ULL),
      R"({"message":{"token":"tok\"en","data":{"topic":"AQID","sequence_id":"18446744073709551615"},)"
      R"("android":{"priority":"HIGH"},"apns":{"headers":{"apns-priority":"5",)"
      R"("apns-push-type":"background"},"payload":{"aps":{"content-available":1}}}}})");
}

// verifies: PUSH-259
// verifies: PUSH-235
TEST(NewUuidV4, IsAFreshVersion4Uuid) {
  const std::regex shape("^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$");
  std::set<std::string> seen;
  for (int i = 0; i < 100; ++i) {
    const std::string id = NewUuidV4();
    EXPECT_TRUE(std::regex_match(id, shape)) << id;
    seen.insert(id);
  }
  EXPECT_EQ(seen.size(), 100u);
}

TEST(ChannelLabel, NamesEachChannel) {
  EXPECT_EQ(ChannelLabel(Channel::kApns), "apns");
  EXPECT_EQ(ChannelLabel(Channel::kFcm), "fcm");
  EXPECT_EQ(ChannelLabel(Channel::kHttp), "http");
}

}  // namespace
}  // namespace xb::push
