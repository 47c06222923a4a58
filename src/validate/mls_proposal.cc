#include "validate/mls_proposal.h"

#include "validate/key_package.h"
#include "validate/mls_codes.h"
#include "validate/mls_extensions.h"
#include "validate/mls_leaf_node.h"

namespace xb::validate {
namespace {

// RFC 9420 §8.4 PreSharedKeyID: uint8 psktype (1 external: psk_id<V>; 2 resumption: uint8 usage,
// psk_group_id<V>, uint64 psk_epoch), then psk_nonce<V>.
Status ReadPreSharedKeyId(TlsReader& r) {
  XB_ASSIGN_OR_RETURN(const uint8_t psk_type, r.ReadUint8());
  if (psk_type == 1) {
    XB_RETURN_IF_ERROR(r.ReadOpaque().status());
  } else if (psk_type == 2) {
    XB_ASSIGN_OR_RETURN(const uint8_t usage, r.ReadUint8());
    // ResumptionPSKUsage: application(1), reinit(2), branch(3); the reference's decoder refuses
    // the reserved 0 and every undefined value.
    if (usage < 1 || usage > 3) {
      return InvalidArgument("resumption psk usage is unknown");
    }
    XB_RETURN_IF_ERROR(r.ReadOpaque().status());
    XB_RETURN_IF_ERROR(r.ReadUint64().status());
  } else {
    return InvalidArgument("psk type is unknown");
  }
  return r.ReadOpaque().status();  // psk_nonce
}

// RFC 9420 §7.6 UpdatePath: LeafNode leaf_node, UpdatePathNode nodes<V>; UpdatePathNode =
// encryption_key<V>, HPKECiphertext encrypted_path_secret<V>; HPKECiphertext = kem_output<V>,
// ciphertext<V>.
Status ReadUpdatePath(TlsReader& r) {
  XB_RETURN_IF_ERROR(ReadLeafNode(r, nullptr));
  return r.ReadElements([](TlsReader& node) -> Status {
    XB_RETURN_IF_ERROR(node.ReadOpaque().status());
    return node.ReadElements([](TlsReader& ct) -> Status {
      XB_RETURN_IF_ERROR(ct.ReadOpaque().status());
      return ct.ReadOpaque().status();
    });
  });
}

}  // namespace

Status ReadProposal(TlsReader& reader) {
  XB_ASSIGN_OR_RETURN(const uint16_t type, reader.ReadUint16());
  switch (type) {
    case proposal_type::kAdd:
      return ReadKeyPackage(reader, nullptr);
    case proposal_type::kUpdate:
      return ReadLeafNode(reader, nullptr);
    case proposal_type::kRemove:
      return reader.ReadUint32().status();
    case proposal_type::kPsk:
      return ReadPreSharedKeyId(reader);
    case proposal_type::kReinit: {
      XB_RETURN_IF_ERROR(reader.ReadOpaque().status());  // group_id
      XB_RETURN_IF_ERROR(reader.ReadUint16().status());  // version: any value
      XB_ASSIGN_OR_RETURN(const uint16_t cipher_suite, reader.ReadUint16());
      if (!IsKnownCipherSuite(cipher_suite)) {
        return InvalidArgument("reinit cipher suite is unknown");
      }
      return ReadExtensions(reader, ExtensionOwner::kOther, nullptr);
    }
    case proposal_type::kExternalInit:
      return reader.ReadOpaque().status();  // kem_output
    case proposal_type::kGroupContextExtensions:
      return ReadExtensions(reader, ExtensionOwner::kOther, nullptr);
    case proposal_type::kSelfRemove:
      return Status::Ok();
    case proposal_type::kAppDataUpdate:
      if (kParseDraftMlsExtensions) {
        XB_RETURN_IF_ERROR(reader.ReadUint16().status());  // component_id
        XB_ASSIGN_OR_RETURN(const uint8_t op, reader.ReadUint8());
        if (op == 1) {
          return reader.ReadOpaque().status();  // update: data
        }
        if (op == 2) {
          return Status::Ok();  // remove
        }
        return InvalidArgument("app data update operation is unknown");
      }
      break;
    case proposal_type::kAppEphemeral:
      if (kParseDraftMlsExtensions) {
        XB_RETURN_IF_ERROR(reader.ReadUint16().status());  // component_id
        return reader.ReadOpaque().status();               // data
      }
      break;
    default:
      break;
  }
  // Any other type, GREASE included, is a custom proposal with an opaque payload.
  return reader.ReadOpaque().status();
}

Status ReadCommit(TlsReader& reader) {
  XB_RETURN_IF_ERROR(reader.ReadElements([](TlsReader& e) -> Status {
    XB_ASSIGN_OR_RETURN(const uint8_t kind, e.ReadUint8());
    if (kind == 1) {
      return ReadProposal(e);
    }
    if (kind == 2) {
      return e.ReadOpaque().status();  // ProposalRef
    }
    return InvalidArgument("proposal-or-ref type is unknown");
  }));
  XB_ASSIGN_OR_RETURN(const uint8_t has_path, reader.ReadUint8());
  if (has_path == 0) {
    return Status::Ok();
  }
  if (has_path != 1) {
    return InvalidArgument("optional presence byte is not 0 or 1");
  }
  return ReadUpdatePath(reader);
}

}  // namespace xb::validate
