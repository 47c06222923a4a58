// The parse phase of key-package admission (API.md 2.16, VALIDATION.md 4.1-4.2): the RFC 9420 §10
// KeyPackage layout, consuming every byte, with the parse failures VALIDATION.md 4.2 lists.
//
// This file does NOT validate. It verifies no signature, does not check version == 1, the
// lifetime, init_key != encryption_key, the key-package extension types, the capabilities, or the
// credential (VALIDATION.md 4.3, JOIN-007/008/004). ParsedKeyPackage is the seam for that later
// validator: it carries every range and value those checks need.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "validate/mls_leaf_node.h"
#include "validate/tls_reader.h"

namespace xb::validate {

struct ParsedKeyPackage {
  // The key_package_tls_serialized bytes, owned, so the struct can travel to a CPU pool on its own.
  // Every ByteRange below indexes into them (use View()).
  std::string bytes;

  uint16_t version = 0;       // any value parses; must be 1 (VALIDATION.md 4.3 step 3)
  uint16_t cipher_suite = 0;  // a known suite (VALIDATION.md 4.4)
  ByteRange init_key;
  LeafNodeFields leaf_node;               // leaf_node.signature_key is the installation key (topic)
  std::vector<uint16_t> extension_types;  // KeyPackage extensions, wire order, no duplicates
  ByteRange tbs;        // KeyPackageTBS: everything before the KeyPackage signature
  ByteRange signature;  // KeyPackage signature

  // VALIDATION.md 2.1/4.3 quirk: an element vector overran its declared length, or a known
  // extension's data had bytes left over. Such input parses, but the reference verifies over its
  // own re-serialization, which then differs, so the validator must answer
  // REASON_INVALID_KEY_PACKAGE (a signature failure) for it.
  bool non_canonical = false;

  std::string_view View(ByteRange range) const { return range.In(bytes); }
  std::string_view signature_key() const { return View(leaf_node.signature_key); }
};

// Parses one KeyPackage that must fill `bytes` exactly (no trailing bytes, unlike group messages).
// Fails INVALID_ARGUMENT (the caller's REASON_MALFORMED_PAYLOAD) with a fixed message on:
// truncation, a bad or non-minimal vector prefix, bytes left over, an unknown cipher_suite, a
// leaf_node_source other than 1-3, a duplicated extension type in either list, a type refused in
// a leaf node, or a known extension whose data does not parse. The 32-byte signature_key rule is
// routing (TOPIC-002) and is left to the caller: a KeyPackage inside an Add proposal has no such
// rule.
Result<ParsedKeyPackage> ParseKeyPackage(std::string_view bytes);

// Reads one KeyPackage from `reader` (used for Add proposals and by ParseKeyPackage). `out` may
// be null; when set, every field except `bytes` and `non_canonical` is filled, with ranges
// relative to reader.input().
Status ReadKeyPackage(TlsReader& reader, ParsedKeyPackage* out);

}  // namespace xb::validate
