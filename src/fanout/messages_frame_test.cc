#include "fanout/messages_frame.h"

#include <gtest/gtest.h>

#include "xmtp/backend/v1/backend.pb.h"

namespace xb::fanout {
namespace {

namespace v1 = xmtp::backend::v1;

std::string Envelope(uint64_t id, size_t payload) {
  v1::ServerEnvelope e;
  e.mutable_meta()->mutable_cursor()->set_sequence_id(id);
  e.mutable_meta()->mutable_topic()->set_topic(std::string(17, '\x01'));
  e.mutable_envelope()->mutable_group_message()->set_data(std::string(payload, 'x'));
  return e.SerializeAsString();
}

// verifies: API.md 2.5 (SubscribeResponse.messages = 3, Messages.envelopes = 1)
TEST(MessagesFrameTest, BidiFrameParsesAsSubscribeResponseMessages) {
  MessagesFrame frame(3);
  const std::string a = Envelope(101, 10);
  const std::string b = Envelope(104, 300);  // a two-byte length
  EXPECT_EQ(frame.SizeWith(a.size()), frame.SizeAlone(a.size()));
  frame.Add(a);
  const size_t predicted = frame.SizeWith(b.size());
  frame.Add(b);
  const std::string bytes = frame.Take();
  EXPECT_EQ(bytes.size(), predicted);
  EXPECT_TRUE(frame.empty());
  v1::SubscribeResponse response;
  ASSERT_TRUE(response.ParseFromString(bytes));
  ASSERT_EQ(response.response_case(), v1::SubscribeResponse::kMessages);
  ASSERT_EQ(response.messages().envelopes_size(), 2);
  EXPECT_EQ(response.messages().envelopes(0).meta().cursor().sequence_id(), 101u);
  EXPECT_EQ(response.messages().envelopes(1).SerializeAsString(), b);
}

// verifies: API.md 2.5 (SubscribeStaticResponse.messages = 2)
TEST(MessagesFrameTest, StaticFrameParsesAsSubscribeStaticResponseMessages) {
  MessagesFrame frame(2);
  const std::string envelope = Envelope(7, 1024);  // added by reference
  frame.Add(envelope);
  v1::SubscribeStaticResponse response;
  ASSERT_TRUE(response.ParseFromString(frame.Take()));
  ASSERT_EQ(response.response_case(), v1::SubscribeStaticResponse::kMessages);
  EXPECT_EQ(response.messages().envelopes(0).meta().cursor().sequence_id(), 7u);
}

// The pieces Emit hands out (framing copied, envelopes by reference) are exactly the bytes
// WriteTo writes, for small and multi-byte-length envelopes alike.
TEST(MessagesFrameTest, EmittedPiecesAreTheWrittenBytes) {
  const std::string a = Envelope(1, 16);
  const std::string b = Envelope(2, 300);
  const std::string c = Envelope(3, 70000);
  MessagesFrame written(3);
  MessagesFrame emitted(3);
  for (MessagesFrame* frame : {&written, &emitted}) {
    frame->Add(a);
    frame->Add(b);
    frame->Add(c);
  }
  const size_t size = emitted.size();
  std::string pieces;
  std::vector<size_t> indexes;
  emitted.Emit([&](std::string_view framing) { pieces.append(framing); },
               [&](size_t index, std::string_view envelope) {
                 indexes.push_back(index);
                 EXPECT_EQ(envelope.data(), (index == 0 ? a : index == 1 ? b : c).data());
                 pieces.append(envelope);
               });
  EXPECT_EQ(pieces.size(), size);
  EXPECT_EQ(pieces, written.Take());
  EXPECT_EQ(indexes, (std::vector<size_t>{0, 1, 2}));
  EXPECT_TRUE(emitted.empty());
}

// A frame kept for reuse (a session's live frame) starts over after Clear: what was added before
// is in neither its size nor its bytes.
TEST(MessagesFrameTest, ClearForgetsWhatWasAdded) {
  MessagesFrame frame(2);
  const std::string a = Envelope(7, 500);
  const std::string b = Envelope(8, 20);
  frame.Add(a);
  frame.Clear();
  EXPECT_TRUE(frame.empty());
  EXPECT_EQ(frame.SizeWith(b.size()), frame.SizeAlone(b.size()));
  frame.Add(b);
  v1::SubscribeStaticResponse response;
  ASSERT_TRUE(response.ParseFromString(frame.Take()));
  ASSERT_EQ(response.messages().envelopes_size(), 1);
  EXPECT_EQ(response.messages().envelopes(0).meta().cursor().sequence_id(), 8u);
}

TEST(MessagesFrameTest, VarintSizes) {
  EXPECT_EQ(VarintSize(0), 1u);
  EXPECT_EQ(VarintSize(127), 1u);
  EXPECT_EQ(VarintSize(128), 2u);
  EXPECT_EQ(VarintSize(2097152), 4u);
  std::string out;
  AppendVarint(out, 30000);
  EXPECT_EQ(out, std::string("\xb0\xea\x01"));  // API.md 4.3: Started{30000}
}

}  // namespace
}  // namespace xb::fanout
