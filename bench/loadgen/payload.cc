// The envelopes the load client sends (loadgen.h): MLS PrivateMessages routed to group topics,
// distinct per run, client and counter, with room for a send time.
#include <cstdint>
#include <string>

#include "loadgen.h"

namespace xb::bench {
namespace {

void PutUint(std::string& out, uint64_t v, int bytes) {
  for (int s = (bytes - 1) * 8; s >= 0; s -= 8) out.push_back(static_cast<char>((v >> s) & 0xff));
}

// RFC 9420 §2.1.2 variable-length vector: 1, 2 or 4 byte length prefix.
void PutLength(std::string& out, uint64_t n) {
  if (n < 64) {
    PutUint(out, n, 1);
  } else if (n < 16384) {
    PutUint(out, 0x4000 | n, 2);
  } else {
    PutUint(out, 0x80000000u | n, 4);
  }
}

void PutVector(std::string& out, const std::string& v) {
  PutLength(out, v.size());
  out += v;
}

size_t VectorPrefix(size_t n) { return n < 64 ? 1 : (n < 16384 ? 2 : 4); }

}  // namespace

std::string GroupId(uint64_t i) {
  std::string id = std::string("xbbench", 7) + '\0';
  PutUint(id, i, 8);
  return id;
}

std::string RunGroupId(uint64_t run, uint64_t i) {
  std::string id;
  PutUint(id, run, 8);
  PutUint(id, i, 8);
  return id;
}

std::string TopicOf(const std::string& group_id) { return std::string(1, '\0') + group_id; }

std::string PrivateMessage(const std::string& group_id, uint64_t run, uint64_t client,
                           uint64_t counter, size_t payload) {
  const std::string sender_data(16, '\x5a');
  // version, wire_format, group_id<V>, epoch, content_type, authenticated_data<V> (empty),
  // encrypted_sender_data<V>, then ciphertext<V>.
  const size_t fixed = 2 + 2 + 1 + kGroupIdSize + 8 + 1 + 1 + 1 + sender_data.size();
  size_t ct_len = 32;  // run, client, counter, and 8 bytes for a send time
  if (payload > fixed + 1 + ct_len) {
    ct_len = payload - fixed - 1;
    if (VectorPrefix(ct_len) > 1) ct_len = payload - fixed - 2;
    if (VectorPrefix(ct_len) > 2) ct_len = payload - fixed - 4;
  }
  std::string m;
  m.reserve(payload + 8);
  PutUint(m, 1, 2);  // mls10
  PutUint(m, 2, 2);  // mls_private_message
  PutVector(m, group_id);
  PutUint(m, 1, 8);  // epoch
  PutUint(m, 1, 1);  // content_type: application
  PutVector(m, "");  // authenticated_data
  PutVector(m, sender_data);
  // ciphertext<V>, written in place: run, client, counter, then filler.
  PutLength(m, ct_len);
  const size_t ct_end = m.size() + ct_len;
  PutUint(m, run, 8);
  PutUint(m, client, 8);
  PutUint(m, counter, 8);
  // Xorshift filler, so rows do not compress to nothing: 8 bytes a step (a byte a step cost
  // the load client ~3 us per 1 KiB envelope, on the CPU it shares with the server).
  uint64_t x = run ^ (client << 32) ^ counter ^ 0x9e3779b97f4a7c15ull;
  size_t at = m.size();
  m.resize(ct_end);
  while (at < ct_end) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    for (int i = 0; i < 8 && at < ct_end; ++i) m[at++] = static_cast<char>(x >> (8 * i));
  }
  return m;
}

void StampSendTime(std::string& data, uint64_t ns) {
  const size_t at = data.size() - 8;
  for (int i = 0; i < 8; ++i) data[at + i] = static_cast<char>((ns >> (56 - 8 * i)) & 0xff);
}

uint64_t ReadSendTime(const char* data, size_t size) {
  if (size < 8) return 0;
  uint64_t ns = 0;
  for (size_t i = size - 8; i < size; ++i) ns = (ns << 8) | static_cast<uint8_t>(data[i]);
  return ns;
}

}  // namespace xb::bench
