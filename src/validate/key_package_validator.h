// The validation phase of key-package admission (VALIDATION.md 4.3-4.6, JOIN-007/008/004,
// API-235): everything a KeyPackage that parsed (key_package.h) must still satisfy before it is
// stored. Every failure is the publish reason REASON_INVALID_KEY_PACKAGE.
//
// Costs two signature verifications (tens of microseconds): run it on the CPU pool, never on an
// I/O thread (ARCHITECTURE.md section 2).
#pragma once

#include <cstdint>

#include "base/status.h"
#include "validate/key_package.h"

namespace xb::validate {

// OK, or INVALID_ARGUMENT with a fixed plain-words message (never input bytes) naming the first
// rule broken, in the reference's order (VALIDATION.md 4.3):
//   1 leaf_node_source is not key_package;
//   2 the LeafNode signature does not verify (also: the package's encoding is non-canonical, the
//     VALIDATION.md 2.1/4.3 quirk: the reference re-serializes before verifying);
//   3 version is not 1;
//   4 leaf encryption_key equals init_key;
//   5 a KeyPackage extension type not allowed in a key package (1-5, 0xf000, GREASE);
//   6 the KeyPackage signature does not verify;
//   7 a KeyPackage extension type (other than 1-5) missing from leaf capabilities.extensions;
//   8 lifetime: not_after <= now_seconds (expired) or not_before > now_seconds (not yet valid);
//   9 credential type is not basic;
//  10 the basic credential's identity is not a protobuf xmtp.identity.MlsCredential.
// Nothing else is checked (VALIDATION.md 4.5/4.6): not the inbox id's shape, not that
// capabilities list the package's own suite/version/credential, no extension required, no
// maximum lifetime. `now_seconds` is the backend's clock, whole seconds since the Unix epoch.
// Pure function; thread-safe; never suspends.
Status ValidateKeyPackage(const ParsedKeyPackage& key_package, uint64_t now_seconds);

}  // namespace xb::validate
