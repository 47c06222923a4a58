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

bool EncodeServerEnvelope(const store::StoredEnvelope& row, std::string* out) {
  v1::EnvelopeMeta meta;
  ToWire(row.meta, &meta);
  const size_t meta_bytes = meta.ByteSizeLong();
  out->clear();
  out->reserve(meta_bytes + row.payload.size() + 12);
  auto varint = [out](uint64_t v) {
    while (v >= 0x80) {
      out->push_back(static_cast<char>((v & 0x7f) | 0x80));
      v >>= 7;
    }
    out->push_back(static_cast<char>(v));
  };
  out->push_back(0x0a);  // ServerEnvelope.meta = 1
  varint(meta_bytes);
  meta.AppendToString(out);
  out->push_back(0x12);  // ServerEnvelope.envelope = 2
  varint(row.payload.size());
  out->append(row.payload);
  return true;
}

}  // namespace xb::api
