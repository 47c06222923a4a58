#include "validate/mls_extensions.h"

#include <algorithm>

#include "validate/mls_codes.h"
#include "validate/mls_leaf_node.h"

namespace xb::validate {
namespace {

Status ReadUint16Element(TlsReader& r) { return r.ReadUint16().status(); }
Status ReadUint32Element(TlsReader& r) { return r.ReadUint32().status(); }

// RFC 9420 §12.4.3.3: optional<Node> ratchet_tree<V>; Node = uint8 node_type, then a LeafNode
// (1) or a ParentNode (2: encryption_key<V>, parent_hash<V>, uint32 unmerged_leaves<V>).
Status ReadRatchetTree(TlsReader& r) {
  return r.ReadElements([](TlsReader& e) -> Status {
    XB_ASSIGN_OR_RETURN(const uint8_t present, e.ReadUint8());
    if (present == 0) {
      return Status::Ok();
    }
    if (present != 1) {
      return InvalidArgument("optional presence byte is not 0 or 1");
    }
    XB_ASSIGN_OR_RETURN(const uint8_t node_type, e.ReadUint8());
    if (node_type == 1) {
      return ReadLeafNode(e, nullptr);
    }
    if (node_type != 2) {
      return InvalidArgument("ratchet tree node type is unknown");
    }
    XB_RETURN_IF_ERROR(e.ReadOpaque().status());  // encryption_key
    XB_RETURN_IF_ERROR(e.ReadOpaque().status());  // parent_hash
    return e.ReadElements(ReadUint32Element);     // unmerged_leaves
  });
}

// RFC 9420 §11.1: extension_types<V>, proposal_types<V>, credential_types<V>, all uint16.
Status ReadRequiredCapabilities(TlsReader& r) {
  for (int i = 0; i < 3; ++i) {
    XB_RETURN_IF_ERROR(r.ReadElements(ReadUint16Element));
  }
  return Status::Ok();
}

// RFC 9420 §12.1.8.1: ExternalSender external_senders<V>; ExternalSender = signature_key<V>,
// Credential.
Status ReadExternalSenders(TlsReader& r) {
  return r.ReadElements([](TlsReader& e) -> Status {
    XB_RETURN_IF_ERROR(e.ReadOpaque().status());
    return ReadCredential(e, nullptr, nullptr);
  });
}

// draft-ietf-mls-extensions app_data_dictionary: ComponentData component_data<V>, ComponentData =
// uint16 component_id, opaque data<V>; component ids strictly increasing (the reference refuses
// duplicates and disorder while decoding).
Status ReadAppDataDictionary(TlsReader& r) {
  bool first = true;
  uint16_t last_id = 0;
  bool ordered = true;
  XB_RETURN_IF_ERROR(r.ReadElements([&](TlsReader& e) -> Status {
    XB_ASSIGN_OR_RETURN(const uint16_t id, e.ReadUint16());
    XB_RETURN_IF_ERROR(e.ReadOpaque().status());
    if (!first && id <= last_id) {
      ordered = false;
    }
    first = false;
    last_id = id;
    return Status::Ok();
  }));
  if (!ordered) {
    return InvalidArgument("app data dictionary is not in component order");
  }
  return Status::Ok();
}

// Reads `data` (one extension's extension_data) as the structure of `type`, when the type is
// known; unknown types stay opaque.
Status ReadKnownExtensionData(uint16_t type, std::string_view data, TlsReader& outer) {
  TlsReader r(data);
  Status s;
  switch (type) {
    case extension_type::kApplicationId:
    case extension_type::kExternalPub:
    case extension_type::kImmutableMetadata:
      s = r.ReadOpaque().status();
      break;
    case extension_type::kRatchetTree:
      s = ReadRatchetTree(r);
      break;
    case extension_type::kRequiredCapabilities:
      s = ReadRequiredCapabilities(r);
      break;
    case extension_type::kExternalSenders:
      s = ReadExternalSenders(r);
      break;
    case extension_type::kAppDataDictionary:
      if (!kParseDraftMlsExtensions) {
        return Status::Ok();
      }
      s = ReadAppDataDictionary(r);
      break;
    case extension_type::kLastResort:
      break;  // empty struct
    default:
      return Status::Ok();  // unknown (GREASE and XMTP-private types included): opaque
  }
  XB_RETURN_IF_ERROR(s);
  // VALIDATION.md 4.1/4.3: bytes left over after a known structure are ignored by the parser,
  // but the reference's re-serialization then differs from the input.
  if (!r.empty() || r.non_canonical()) {
    outer.MarkNonCanonical();
  }
  return Status::Ok();
}

bool RefusedInLeafNode(uint16_t type) {
  switch (type) {
    case extension_type::kRatchetTree:
    case extension_type::kRequiredCapabilities:
    case extension_type::kExternalPub:
    case extension_type::kExternalSenders:
    case extension_type::kLastResort:
    case extension_type::kImmutableMetadata:
      return true;
    default:
      return false;
  }
}

}  // namespace

Status ReadExtensions(TlsReader& reader, ExtensionOwner owner, std::vector<uint16_t>* types) {
  std::vector<uint16_t> seen;
  XB_RETURN_IF_ERROR(reader.ReadElements([&](TlsReader& e) -> Status {
    XB_ASSIGN_OR_RETURN(const uint16_t type, e.ReadUint16());
    XB_ASSIGN_OR_RETURN(const std::string_view data, e.ReadOpaque());
    if (owner == ExtensionOwner::kLeafNode && RefusedInLeafNode(type)) {
      return InvalidArgument("extension type is not allowed in a leaf node");
    }
    XB_RETURN_IF_ERROR(ReadKnownExtensionData(type, data, e));
    seen.push_back(type);
    return Status::Ok();
  }));
  if (types != nullptr) {
    types->insert(types->end(), seen.begin(), seen.end());
  }
  // Sorting a copy keeps the duplicate check O(n log n) for lists of any length.
  std::sort(seen.begin(), seen.end());
  if (std::adjacent_find(seen.begin(), seen.end()) != seen.end()) {
    return InvalidArgument("extension type appears twice in one list");
  }
  return Status::Ok();
}

}  // namespace xb::validate
