#include "validate/key_package.h"

#include "validate/mls_codes.h"
#include "validate/mls_extensions.h"

namespace xb::validate {

Status ReadKeyPackage(TlsReader& reader, ParsedKeyPackage* out) {
  const size_t start = reader.position();
  XB_ASSIGN_OR_RETURN(const uint16_t version, reader.ReadUint16());
  XB_ASSIGN_OR_RETURN(const uint16_t cipher_suite, reader.ReadUint16());
  if (!IsKnownCipherSuite(cipher_suite)) {
    return InvalidArgument("key package cipher suite is unknown");
  }
  XB_ASSIGN_OR_RETURN(const std::string_view init_key, reader.ReadOpaque());
  XB_RETURN_IF_ERROR(ReadLeafNode(reader, out ? &out->leaf_node : nullptr));
  XB_RETURN_IF_ERROR(
      ReadExtensions(reader, ExtensionOwner::kOther, out ? &out->extension_types : nullptr));
  const ByteRange tbs = reader.RangeSince(start);
  XB_ASSIGN_OR_RETURN(const std::string_view signature, reader.ReadOpaque());
  if (out != nullptr) {
    out->version = version;
    out->cipher_suite = cipher_suite;
    out->init_key = reader.RangeOf(init_key);
    out->tbs = tbs;
    out->signature = reader.RangeOf(signature);
  }
  return Status::Ok();
}

Result<ParsedKeyPackage> ParseKeyPackage(std::string_view bytes) {
  ParsedKeyPackage parsed;
  TlsReader reader(bytes);
  XB_RETURN_IF_ERROR(ReadKeyPackage(reader, &parsed));
  // VALIDATION.md 4.2: exactly one KeyPackage, nothing after it.
  if (!reader.empty()) {
    return InvalidArgument("bytes follow the key package");
  }
  parsed.non_canonical = reader.non_canonical();
  parsed.bytes.assign(bytes);
  return parsed;
}

}  // namespace xb::validate
