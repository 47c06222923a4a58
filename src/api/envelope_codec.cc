#include "api/envelope_codec.h"

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

size_t VarintBytes(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

void PutVarint(std::string* out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

// One length-delimited field: tag, length, then the caller appends `length` bytes.
void PutHeader(std::string* out, uint8_t tag, size_t length) {
  out->push_back(static_cast<char>(tag));
  PutVarint(out, length);
}

}  // namespace

// Hand-written so a stream row costs no message objects: the same bytes protobuf writes for
// ToWire's message (fields in number order, proto3 defaults omitted).
bool EncodeServerEnvelope(const store::StoredEnvelope& row, std::string* out) {
  const auto& m = row.meta;
  const auto id = static_cast<uint64_t>(m.sequence_id);
  const auto server_ns = static_cast<uint64_t>(m.server_ns);
  const auto expiry_ns = static_cast<uint64_t>(m.expiry_ns);
  const size_t cursor_bytes = id == 0 ? 0 : 1 + VarintBytes(id);
  const size_t hash_bytes = 1 + VarintBytes(m.message_hash.size()) + m.message_hash.size();
  const size_t topic_bytes = m.topic.empty() ? 0 : 1 + VarintBytes(m.topic.size()) + m.topic.size();
  const size_t meta_bytes = 1 + VarintBytes(cursor_bytes) + cursor_bytes +
                            (server_ns == 0 ? 0 : 1 + VarintBytes(server_ns)) + 1 +
                            VarintBytes(hash_bytes) + hash_bytes + 1 + VarintBytes(topic_bytes) +
                            topic_bytes + (expiry_ns == 0 ? 0 : 1 + VarintBytes(expiry_ns)) +
                            (m.is_commit_or_proposal ? 2 : 0);
  out->reserve(out->size() + 1 + VarintBytes(meta_bytes) + meta_bytes + 1 +
               VarintBytes(row.payload.size()) + row.payload.size());
  PutHeader(out, 0x0a, meta_bytes);    // ServerEnvelope.meta = 1
  PutHeader(out, 0x0a, cursor_bytes);  // EnvelopeMeta.cursor = 1
  if (id != 0) {
    out->push_back(0x08);  // Cursor.sequence_id = 1
    PutVarint(out, id);
  }
  if (server_ns != 0) {
    out->push_back(0x10);  // EnvelopeMeta.server_ns = 2
    PutVarint(out, server_ns);
  }
  PutHeader(out, 0x1a, hash_bytes);             // EnvelopeMeta.message_hash = 3
  PutHeader(out, 0x0a, m.message_hash.size());  // MessageHash.sha256 = 1
  out->append(reinterpret_cast<const char*>(m.message_hash.data()), m.message_hash.size());
  PutHeader(out, 0x22, topic_bytes);  // EnvelopeMeta.topic = 4
  if (!m.topic.empty()) {
    PutHeader(out, 0x0a, m.topic.size());  // Topic.topic = 1
    out->append(m.topic);
  }
  if (expiry_ns != 0) {
    out->push_back(0x28);  // EnvelopeMeta.expiry_ns = 5
    PutVarint(out, expiry_ns);
  }
  if (m.is_commit_or_proposal) {
    out->push_back(0x30);  // EnvelopeMeta.is_commit_or_proposal = 6
    out->push_back(0x01);
  }
  PutHeader(out, 0x12, row.payload.size());  // ServerEnvelope.envelope = 2
  out->append(row.payload);
  return true;
}

}  // namespace xb::api
