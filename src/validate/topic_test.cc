#include "validate/topic.h"

#include <gtest/gtest.h>

#include "validate/test_bytes.h"
#include "xmtp/backend/v1/backend.pb.h"

namespace xb::validate {
namespace {

using testing::Hex;
using testing::Repeat;
using testing::Unhex;

const std::string kGroupId = Unhex("000102030405060708090a0b0c0d0e0f");

// verifies: TOPIC-001 — API.md 4.1, byte by byte.
TEST(Topic, ApiExamplesByteByByte) {
  const std::string group = MakeTopic(TopicKind::kGroupMessage, kGroupId);
  EXPECT_EQ(Hex(group), "00000102030405060708090a0b0c0d0e0f");
  EXPECT_EQ(group.size(), 17u);

  const std::string commit_log = MakeTopic(TopicKind::kCommitLog, kGroupId);
  EXPECT_EQ(Hex(commit_log), "04000102030405060708090a0b0c0d0e0f");
  EXPECT_EQ(commit_log.size(), 17u);

  const std::string welcome = MakeTopic(TopicKind::kWelcome, Repeat(0x11, 32));
  EXPECT_EQ(Hex(welcome), "01" + std::string(64, '1'));
  EXPECT_EQ(welcome.size(), 33u);

  const std::string key_package = MakeTopic(TopicKind::kKeyPackage, Repeat(0x22, 32));
  EXPECT_EQ(Hex(key_package), "03" + std::string(64, '2'));
  EXPECT_EQ(key_package.size(), 33u);

  const std::string identity =
      MakeTopic(TopicKind::kIdentityUpdate,
                Unhex("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"));
  EXPECT_EQ(Hex(identity), "02e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(identity.size(), 33u);

  for (const std::string& t : {group, commit_log, welcome, key_package, identity}) {
    EXPECT_TRUE(ValidateRequestTopic(t).ok()) << Hex(t);
  }
}

TEST(Topic, TopicMessageEncodingFromApiExample) {
  xmtp::backend::v1::Topic topic;
  topic.set_topic(MakeTopic(TopicKind::kGroupMessage, kGroupId));
  EXPECT_EQ(Hex(topic.SerializeAsString()), "0a1100000102030405060708090a0b0c0d0e0f");
}

// verifies: TOPIC-003 — the rejected examples of API.md 4.1 and the rest of the rule.
TEST(Topic, MalformedRequestTopicsAreInvalidArgument) {
  struct Case {
    std::string topic;
    std::string_view message;
  };
  const std::string ascii_inbox =
      "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
  const Case cases[] = {
      {"", "topic is empty"},
      {Unhex("05") + kGroupId, "topic kind is unknown"},
      {Unhex("ff") + Repeat(0, 32), "topic kind is unknown"},
      {Unhex("00") + kGroupId.substr(0, 15), "topic identifier has the wrong length for its kind"},
      {Unhex("00") + kGroupId + "x", "topic identifier has the wrong length for its kind"},
      {Unhex("00"), "topic identifier has the wrong length for its kind"},
      {Unhex("02") + ascii_inbox, "topic identifier has the wrong length for its kind"},
      {Unhex("01") + Repeat(0x11, 16), "topic identifier has the wrong length for its kind"},
      {Unhex("03") + Repeat(0x22, 31), "topic identifier has the wrong length for its kind"},
      {Unhex("04") + Repeat(0x00, 32), "topic identifier has the wrong length for its kind"},
  };
  for (const Case& c : cases) {
    Status s = ValidateRequestTopic(c.topic);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << Hex(c.topic);
    EXPECT_EQ(s.message(), c.message) << Hex(c.topic);
  }
}

TEST(Topic, KindAndIdentifierOfAValidTopic) {
  const std::string t = MakeTopic(TopicKind::kKeyPackage, Repeat(0x22, 32));
  EXPECT_EQ(KindOf(t), TopicKind::kKeyPackage);
  EXPECT_EQ(IdentifierOf(t), Repeat(0x22, 32));
  EXPECT_EQ(KindOf(MakeTopic(TopicKind::kCommitLog, kGroupId)), TopicKind::kCommitLog);
}

TEST(Topic, IdentifierLengths) {
  EXPECT_EQ(IdentifierLength(TopicKind::kGroupMessage), 16u);
  EXPECT_EQ(IdentifierLength(TopicKind::kWelcome), 32u);
  EXPECT_EQ(IdentifierLength(TopicKind::kIdentityUpdate), 32u);
  EXPECT_EQ(IdentifierLength(TopicKind::kKeyPackage), 32u);
  EXPECT_EQ(IdentifierLength(TopicKind::kCommitLog), 16u);
}

TEST(TopicDeathTest, MakeTopicRefusesAWrongLengthIdentifier) {
  EXPECT_DEATH(MakeTopic(TopicKind::kGroupMessage, Repeat(0, 32)), "invariant broken");
}

}  // namespace
}  // namespace xb::validate
