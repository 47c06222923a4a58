#include "validate/mls_leaf_node.h"

#include "validate/mls_extensions.h"

namespace xb::validate {
namespace {

Status ReadUint16List(TlsReader& r, std::vector<uint16_t>* out) {
  return r.ReadElements([out](TlsReader& e) -> Status {
    XB_ASSIGN_OR_RETURN(const uint16_t v, e.ReadUint16());
    if (out != nullptr) {
      out->push_back(v);
    }
    return Status::Ok();
  });
}

// RFC 9420 §7.2 Capabilities: versions, cipher_suites, extensions, proposals, credentials, each a
// uint16 list; values are not judged here (API-235: unknown ones included).
Status ReadCapabilities(TlsReader& r, Capabilities* out) {
  XB_RETURN_IF_ERROR(ReadUint16List(r, out ? &out->versions : nullptr));
  XB_RETURN_IF_ERROR(ReadUint16List(r, out ? &out->cipher_suites : nullptr));
  XB_RETURN_IF_ERROR(ReadUint16List(r, out ? &out->extensions : nullptr));
  XB_RETURN_IF_ERROR(ReadUint16List(r, out ? &out->proposals : nullptr));
  return ReadUint16List(r, out ? &out->credentials : nullptr);
}

}  // namespace

Status ReadCredential(TlsReader& reader, uint16_t* type, ByteRange* content) {
  XB_ASSIGN_OR_RETURN(const uint16_t credential_type, reader.ReadUint16());
  XB_ASSIGN_OR_RETURN(const std::string_view body, reader.ReadOpaque());
  if (type != nullptr) {
    *type = credential_type;
  }
  if (content != nullptr) {
    *content = reader.RangeOf(body);
  }
  return Status::Ok();
}

Status ReadLeafNode(TlsReader& reader, LeafNodeFields* out) {
  LeafNodeFields f;
  const size_t start = reader.position();
  XB_ASSIGN_OR_RETURN(const std::string_view encryption_key, reader.ReadOpaque());
  XB_ASSIGN_OR_RETURN(const std::string_view signature_key, reader.ReadOpaque());
  XB_RETURN_IF_ERROR(ReadCredential(reader, &f.credential_type, &f.credential_content));
  XB_RETURN_IF_ERROR(ReadCapabilities(reader, out ? &f.capabilities : nullptr));
  XB_ASSIGN_OR_RETURN(const uint8_t source, reader.ReadUint8());
  switch (source) {
    case static_cast<uint8_t>(LeafNodeSource::kKeyPackage): {
      XB_ASSIGN_OR_RETURN(const uint64_t not_before, reader.ReadUint64());
      XB_ASSIGN_OR_RETURN(const uint64_t not_after, reader.ReadUint64());
      f.lifetime = Lifetime{.not_before = not_before, .not_after = not_after};
      break;
    }
    case static_cast<uint8_t>(LeafNodeSource::kUpdate):
      break;
    case static_cast<uint8_t>(LeafNodeSource::kCommit): {
      XB_ASSIGN_OR_RETURN(const std::string_view parent_hash, reader.ReadOpaque());
      f.parent_hash = reader.RangeOf(parent_hash);
      break;
    }
    default:
      return InvalidArgument("leaf node source is unknown");
  }
  f.source = static_cast<LeafNodeSource>(source);
  XB_RETURN_IF_ERROR(
      ReadExtensions(reader, ExtensionOwner::kLeafNode, out ? &f.extension_types : nullptr));
  f.tbs = reader.RangeSince(start);
  XB_ASSIGN_OR_RETURN(const std::string_view signature, reader.ReadOpaque());
  if (out != nullptr) {
    f.encryption_key = reader.RangeOf(encryption_key);
    f.signature_key = reader.RangeOf(signature_key);
    f.signature = reader.RangeOf(signature);
    *out = std::move(f);
  }
  return Status::Ok();
}

}  // namespace xb::validate
