#include "validate/inbox_id.h"

#include <gtest/gtest.h>

#include <cctype>

#include "validate/test_bytes.h"

namespace xb::validate {
namespace {

using testing::Hex;

constexpr std::string_view kInbox =
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

// verifies: TOPIC-002 — the inbox id hex-decodes to the 32-byte identifier.
TEST(InboxId, LowerCaseHexDecodes) {
  std::optional<std::string> bytes = DecodeInboxId(kInbox);
  ASSERT_TRUE(bytes.has_value());
  EXPECT_EQ(bytes->size(), 32u);
  EXPECT_EQ(Hex(*bytes), kInbox);
}

// VALIDATION.md 1.1/5.8: either letter case decodes (IDENT-003 refuses non-canonical spellings
// later, in the identity validator).
TEST(InboxId, UpperAndMixedCaseDecodeToTheSameBytes) {
  std::string upper(kInbox);
  for (char& c : upper) {
    c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  std::string mixed(kInbox);
  mixed[0] = 'E';  // "E3b0..."
  EXPECT_EQ(DecodeInboxId(upper), DecodeInboxId(kInbox));
  EXPECT_EQ(DecodeInboxId(mixed), DecodeInboxId(kInbox));
}

// verifies: TOPIC-002 — anything but 64 hex characters is refused.
TEST(InboxId, NotSixtyFourHexCharactersIsRefused) {
  const std::string inbox(kInbox);
  const std::string cases[] = {
      "",
      inbox.substr(0, 63),
      inbox + "0",
      inbox.substr(0, 62) + "0g",
      "0x" + inbox.substr(0, 62),
      "0x" + inbox,
      inbox.substr(0, 63) + " ",
      std::string(64, ' '),
      inbox.substr(0, 63) + std::string(1, '\0'),
      inbox.substr(0, 60) + "\xc3\xa9" + "00",  // 64 bytes, non-ASCII
  };
  for (const std::string& c : cases) {
    EXPECT_FALSE(DecodeInboxId(c).has_value()) << c;
  }
}

}  // namespace
}  // namespace xb::validate
