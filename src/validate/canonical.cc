#include "validate/canonical.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include "base/check.h"

namespace xb::validate {

using xmtp::backend::v1::ClientEnvelope;
using xmtp::backend::v1::PublishRequest;

// implements: API-211 (the backend's own encoding, API.md 2.15)
std::string Canonicalize(ClientEnvelope& envelope) {
  // Recursive: unknown fields of every nested message go too, so two inputs that differ only in
  // unknown fields have one encoding and one hash.
  envelope.DiscardUnknownFields();
  std::string out;
  {
    google::protobuf::io::StringOutputStream stream(&out);
    google::protobuf::io::CodedOutputStream coded(&stream);
    // The schema has no map fields today; deterministic mode keeps the hash stable if one appears.
    coded.SetSerializationDeterministic(true);
    // Fails only past protobuf's 2 GiB message limit, far above every request bound.
    XB_CHECK(envelope.SerializeToCodedStream(&coded));
  }
  return out;
}

std::string CanonicalEncoding(const ClientEnvelope& envelope) {
  ClientEnvelope clean = envelope;
  return Canonicalize(clean);
}

size_t CanonicalSize(const ClientEnvelope& envelope) {
  ClientEnvelope clean = envelope;
  clean.DiscardUnknownFields();
  return clean.ByteSizeLong();
}

size_t CanonicalRequestSize(const PublishRequest& request) {
  PublishRequest clean = request;
  clean.DiscardUnknownFields();
  return clean.ByteSizeLong();
}

}  // namespace xb::validate
