#include "validate/key_package_validator.h"

#include <google/protobuf/stubs/logging.h>

#include <algorithm>

#include "identity/credential.pb.h"
#include "validate/mls_codes.h"
#include "validate/mls_signature.h"

namespace xb::validate {
namespace {

// RFC 9420 §5.1.2 labels of the two signed structures (§7.2 LeafNodeTBS, §10 KeyPackageTBS).
constexpr std::string_view kLeafNodeLabel = "LeafNodeTBS";
constexpr std::string_view kKeyPackageLabel = "KeyPackageTBS";

Status Invalid(std::string_view what) {
  return InvalidArgument("key package is invalid: " + std::string(what));
}

// RFC 9420 §13.5: GREASE code points are 0x0A0A, 0x1A1A, ..., 0xEAEA.
bool IsGrease(uint16_t type) {
  return (type & 0x0f0f) == 0x0a0a && (type >> 12) == ((type >> 4) & 0x0f) && type != 0xfafa;
}

// RFC 9420 §7.2: the default extension types 1-5 (application_id, ratchet_tree,
// required_capabilities, external_pub, external_senders).
bool IsRfc9420DefaultExtension(uint16_t type) { return type >= 0x0001 && type <= 0x0005; }

// VALIDATION.md 4.3 step 5: allowed in a KeyPackage are last_resort (10), app_data_dictionary
// (6) and every type that is not a known RFC 9420 type; refused are 1-5 (which belong to the
// group context or a leaf), immutable_metadata (0xf000) and GREASE values. The GREASE refusal
// follows the MLS library's current source (VALIDATION.md 10.4, open).
bool AllowedInKeyPackage(uint16_t type) {
  if (type == extension_type::kLastResort || type == extension_type::kAppDataDictionary) {
    return true;
  }
  return !IsRfc9420DefaultExtension(type) && type != extension_type::kImmutableMetadata &&
         !IsGrease(type);
}

// VALIDATION.md 4.3 step 10 (JOIN-004): the basic credential's identity must decode as
// MlsCredential. Unknown fields are ignored; a proto3 string with invalid UTF-8 fails the parse.
// The inbox id itself is not judged (API-235).
bool IsMlsCredential(std::string_view identity) {
  // protobuf reports a proto3 string with invalid UTF-8 on stderr before failing the parse; a
  // client could trigger that line at will, so it is silenced here (the refusal is the answer).
  const google::protobuf::LogSilencer silence_utf8_report;
  xmtp::identity::MlsCredential credential;
  return credential.ParseFromArray(identity.data(), static_cast<int>(identity.size()));
}

}  // namespace

// implements: JOIN-007, JOIN-008, JOIN-004, API-235 (VALIDATION.md 4.3-4.6)
Status ValidateKeyPackage(const ParsedKeyPackage& kp, uint64_t now_seconds) {
  const LeafNodeFields& leaf = kp.leaf_node;
  // Step 1.
  if (leaf.source != LeafNodeSource::kKeyPackage || !leaf.lifetime.has_value()) {
    return Invalid("leaf node source is not key_package");
  }
  // Step 2. VALIDATION.md 2.1/4.3 quirk: the reference verifies over its re-serialization, which
  // differs from the input when a vector element overran its declared length or a known
  // extension's data had bytes left over, so its signature check fails on such input.
  if (kp.non_canonical) {
    return Invalid("leaf node signature does not verify (non-canonical encoding)");
  }
  const std::string_view signature_key = kp.signature_key();
  if (!MlsVerifyWithLabel(kp.cipher_suite, signature_key, kLeafNodeLabel, kp.View(leaf.tbs),
                          kp.View(leaf.signature))) {
    return Invalid("leaf node signature does not verify");
  }
  // Step 3.
  if (kp.version != kMlsVersion10) {
    return Invalid("protocol version is not mls10");
  }
  // Step 4 (RFC 9420 §10.1).
  if (kp.View(leaf.encryption_key) == kp.View(kp.init_key)) {
    return Invalid("init key equals the leaf encryption key");
  }
  // Step 5.
  for (uint16_t type : kp.extension_types) {
    if (!AllowedInKeyPackage(type)) {
      return Invalid("extension type not allowed in a key package");
    }
  }
  // Step 6.
  if (!MlsVerifyWithLabel(kp.cipher_suite, signature_key, kKeyPackageLabel, kp.View(kp.tbs),
                          kp.View(kp.signature))) {
    return Invalid("key package signature does not verify");
  }
  // Step 7 (RFC 9420 §7.2: default extension types are supported without being listed).
  const std::vector<uint16_t>& supported = leaf.capabilities.extensions;
  for (uint16_t type : kp.extension_types) {
    if (!IsRfc9420DefaultExtension(type) &&
        std::find(supported.begin(), supported.end(), type) == supported.end()) {
      return Invalid("extension type missing from the leaf capabilities");
    }
  }
  // Step 8 (JOIN-008, API-235): no maximum lifetime, no clock-skew allowance.
  if (leaf.lifetime->not_after <= now_seconds) {
    return Invalid("lifetime has expired");
  }
  if (leaf.lifetime->not_before > now_seconds) {
    return Invalid("lifetime has not started");
  }
  // Step 9.
  if (leaf.credential_type != kCredentialTypeBasic) {
    return Invalid("credential is not a basic credential");
  }
  // Step 10.
  if (!IsMlsCredential(kp.View(leaf.credential_content))) {
    return Invalid("credential identity is not an MlsCredential");
  }
  return Status::Ok();
}

}  // namespace xb::validate
