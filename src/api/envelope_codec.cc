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

}  // namespace xb::api
