// libFuzzer target for xb::rpc::FrameDecoder (src/rpc/frame.h): arbitrary bytes, fed in
// arbitrary chunks, against a message budget chosen by the input.
//
// Input layout: byte 0 picks the budget, then Input::ChunkSizes() (count byte + sizes); the rest
// is the request body.
//
// Invariants checked:
//  - the decoded messages, re-framed with AppendFrame, are exactly a prefix of the input: the
//    decoder never invents, drops or reorders bytes (so never more output bytes than input);
//  - no message exceeds the budget;
//  - a failure is OUT_OF_RANGE, UNIMPLEMENTED or INTERNAL, and sticks: later feeds return the same
//    status and produce nothing;
//  - chunking does not matter: the same bytes fed in one piece give the same messages, status
//    and mid_frame();
//  - mid_frame() is true exactly when input is left over after the messages (no error);
//  - re-encoding the messages and decoding again gives the same messages.
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_input.h"
#include "rpc/frame.h"

namespace {

using xb::Status;
using xb::StatusCode;
using xb::fuzz::Input;
using xb::rpc::FrameDecoder;

// Budgets the server can be configured with, and the edges around a frame header.
constexpr uint64_t kBudgets[] = {0, 1, 4, 5, 64, 4096, 26214400};

struct Decoded {
  std::vector<std::string> messages;
  Status status;
  bool mid_frame = false;
};

Decoded Decode(uint64_t budget, const std::vector<std::string_view>& chunks) {
  FrameDecoder decoder(budget);
  Decoded d;
  for (std::string_view chunk : chunks) {
    const size_t before = d.messages.size();
    Status s = decoder.Feed(chunk, d.messages);
    if (!d.status.ok()) {
      // A failed decoder stays failed with the same status and yields nothing more.
      XB_FUZZ_CHECK(s.code() == d.status.code() && s.message() == d.status.message());
      XB_FUZZ_CHECK(d.messages.size() == before);
    }
    if (!s.ok() && d.status.ok()) {
      d.status = std::move(s);
    }
  }
  d.mid_frame = decoder.mid_frame();
  return d;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Input in(data, size);
  const uint64_t budget = kBudgets[in.Byte() % std::size(kBudgets)];
  const std::vector<size_t> sizes = in.ChunkSizes();
  const std::string_view body = in.rest();

  std::vector<std::string_view> chunks = xb::fuzz::Split(body, sizes);
  // One more feed after the body: a failed decoder must answer it with the same status.
  chunks.push_back(body.substr(0, body.size() / 2));
  const Decoded chunked = Decode(budget, chunks);

  const StatusCode code = chunked.status.code();
  XB_FUZZ_CHECK(code == StatusCode::kOk || code == StatusCode::kOutOfRange ||
                code == StatusCode::kUnimplemented || code == StatusCode::kInternal);

  // Re-framing the messages reproduces a prefix of everything fed.
  std::string reframed;
  size_t payload_bytes = 0;
  for (const std::string& m : chunked.messages) {
    XB_FUZZ_CHECK(m.size() <= budget);
    payload_bytes += m.size();
    xb::rpc::AppendFrame(reframed, m);
  }
  std::string fed(body);
  fed.append(body.substr(0, body.size() / 2));
  XB_FUZZ_CHECK(payload_bytes <= fed.size());
  XB_FUZZ_CHECK(reframed.size() <= fed.size());
  XB_FUZZ_CHECK(std::string_view(fed).substr(0, reframed.size()) == reframed);

  // Chunking does not matter.
  const Decoded whole = Decode(budget, {std::string_view(fed)});
  XB_FUZZ_CHECK(whole.messages == chunked.messages);
  XB_FUZZ_CHECK(whole.status.code() == chunked.status.code());
  XB_FUZZ_CHECK(whole.status.message() == chunked.status.message());
  if (chunked.status.ok()) {
    XB_FUZZ_CHECK(whole.mid_frame == chunked.mid_frame);
    // Without an error, everything after the messages is an unfinished frame.
    XB_FUZZ_CHECK(chunked.mid_frame == (reframed.size() < fed.size()));
  }

  // Re-encoded messages decode to the same messages, with nothing left over.
  const Decoded again = Decode(std::numeric_limits<uint64_t>::max(), {std::string_view(reframed)});
  XB_FUZZ_CHECK(again.status.ok());
  XB_FUZZ_CHECK(!again.mid_frame);
  XB_FUZZ_CHECK(again.messages == chunked.messages);
  return 0;
}
