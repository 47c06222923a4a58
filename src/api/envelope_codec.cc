#include "api/envelope_codec.h"

#include <cstring>

#include "base/thread_priority.h"
#include "base/varint.h"

namespace xb::api {

namespace v1 = xmtp::backend::v1;

void ToWire(const store::EnvelopeMeta& meta, v1::EnvelopeMeta* out) {
  // implements: API-212
  out->mutable_cursor()->set_sequence_id(static_cast<uint64_t>(meta.sequence_id));
  out->set_server_ns(static_cast<uint64_t>(meta.server_ns));
  out->mutable_message_hash()->set_sha256(std::string(
      reinterpret_cast<const char*>(meta.message_hash.data()), meta.message_hash.size()));
  out->mutable_topic()->set_topic(meta.topic);
  out->set_expiry_ns(static_cast<uint64_t>(meta.expiry_ns));
  out->set_is_commit_or_proposal(meta.is_commit_or_proposal);
}

bool ToWire(const store::StoredEnvelope& row, v1::ServerEnvelope* out) {
  ToWire(row.meta, out->mutable_meta());
  return out->mutable_envelope()->ParseFromString(row.payload);
}

namespace {

// Writes into a caller's buffer that is known to be large enough.
class Cursor {
 public:
  explicit Cursor(char* at) : at_(at) {}
  void Byte(uint8_t b) { *at_++ = static_cast<char>(b); }
  void Varint(uint64_t v) {
    while (v >= 0x80) {
      Byte(static_cast<uint8_t>((v & 0x7f) | 0x80));
      v >>= 7;
    }
    Byte(static_cast<uint8_t>(v));
  }
  // One length-delimited field: tag and length; the caller writes `length` bytes next.
  void Header(uint8_t tag, size_t length) {
    Byte(tag);
    Varint(length);
  }
  void Bytes(const void* data, size_t n) {
    std::memcpy(at_, data, n);
    at_ += n;
  }
  char* at() const { return at_; }

 private:
  char* at_;
};

}  // namespace

// Hand-written so a stream row costs no message objects: the same bytes protobuf writes for
// ToWire's message (fields in number order, proto3 defaults omitted). Everything before the
// payload is written into a stack buffer first, so the output grows by two appends.
size_t WriteServerEnvelopeHead(const store::StoredEnvelopeView& row, char* head) {
  const store::StoredEnvelopeView& m = row;
  const auto id = static_cast<uint64_t>(m.sequence_id);
  const auto server_ns = static_cast<uint64_t>(m.server_ns);
  const auto expiry_ns = static_cast<uint64_t>(m.expiry_ns);
  const size_t cursor_bytes = id == 0 ? 0 : 1 + VarintSize(id);
  const size_t hash_bytes = 1 + VarintSize(m.message_hash.size()) + m.message_hash.size();
  const size_t topic_bytes = m.topic.empty() ? 0 : 1 + VarintSize(m.topic.size()) + m.topic.size();
  const size_t meta_bytes = 1 + VarintSize(cursor_bytes) + cursor_bytes +
                            (server_ns == 0 ? 0 : 1 + VarintSize(server_ns)) + 1 +
                            VarintSize(hash_bytes) + hash_bytes + 1 + VarintSize(topic_bytes) +
                            topic_bytes + (expiry_ns == 0 ? 0 : 1 + VarintSize(expiry_ns)) +
                            (m.is_commit_or_proposal ? 2 : 0);
  const size_t head_bytes =
      1 + VarintSize(meta_bytes) + meta_bytes + 1 + VarintSize(row.payload.size());
  // A topic is at most 128 bytes (STORE.md 2.1), so the head fits easily; anything else is a
  // broken invariant of the store.
  if (head_bytes > kMaxServerEnvelopeHead) {
    return 0;
  }
  Cursor c(head);
  c.Header(0x0a, meta_bytes);    // ServerEnvelope.meta = 1
  c.Header(0x0a, cursor_bytes);  // EnvelopeMeta.cursor = 1
  if (id != 0) {
    c.Byte(0x08);  // Cursor.sequence_id = 1
    c.Varint(id);
  }
  if (server_ns != 0) {
    c.Byte(0x10);  // EnvelopeMeta.server_ns = 2
    c.Varint(server_ns);
  }
  c.Header(0x1a, hash_bytes);             // EnvelopeMeta.message_hash = 3
  c.Header(0x0a, m.message_hash.size());  // MessageHash.sha256 = 1
  c.Bytes(m.message_hash.data(), m.message_hash.size());
  c.Header(0x22, topic_bytes);  // EnvelopeMeta.topic = 4
  if (!m.topic.empty()) {
    c.Header(0x0a, m.topic.size());  // Topic.topic = 1
    c.Bytes(m.topic.data(), m.topic.size());
  }
  if (expiry_ns != 0) {
    c.Byte(0x28);  // EnvelopeMeta.expiry_ns = 5
    c.Varint(expiry_ns);
  }
  if (m.is_commit_or_proposal) {
    c.Byte(0x30);  // EnvelopeMeta.is_commit_or_proposal = 6
    c.Byte(0x01);
  }
  c.Header(0x12, row.payload.size());  // ServerEnvelope.envelope = 2
  return static_cast<size_t>(c.at() - head);
}

bool EncodeServerEnvelope(const store::StoredEnvelopeView& row, std::string* out) {
  char head[kMaxServerEnvelopeHead];
  const size_t head_bytes = WriteServerEnvelopeHead(row, head);
  if (head_bytes == 0) {
    return false;
  }
  out->reserve(out->size() + head_bytes + row.payload.size());
  out->append(head, head_bytes);
  AppendInTurns(*out, row.payload);  // on a DB pool thread: base/thread_priority.h
  return true;
}

}  // namespace xb::api
