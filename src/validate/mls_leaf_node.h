// RFC 9420 LeafNode, Credential and Capabilities (§7.2, §5.3), read as VALIDATION.md 4.1 lays
// them out and with the parse-phase failures of VALIDATION.md 4.2. Parsing only: nothing here
// verifies a signature or judges a lifetime (that is the key-package validator's job).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "base/status.h"
#include "validate/mls_codes.h"
#include "validate/tls_reader.h"

namespace xb::validate {

// The five uint16 lists of a Capabilities struct, in wire order. Values are not checked.
struct Capabilities {
  std::vector<uint16_t> versions;
  std::vector<uint16_t> cipher_suites;
  std::vector<uint16_t> extensions;
  std::vector<uint16_t> proposals;
  std::vector<uint16_t> credentials;
};

// Lifetime of a leaf whose source is key_package: seconds since the Unix epoch.
struct Lifetime {
  uint64_t not_before = 0;
  uint64_t not_after = 0;
};

// Where the parts of one LeafNode sit, as ranges of the reader's input.
struct LeafNodeFields {
  ByteRange encryption_key;
  ByteRange signature_key;
  uint16_t credential_type = 0;
  // The Credential body, read as one opaque vector for every type (as the reference does); for
  // a basic credential (type 1) this is the identity, an xmtp.identity.MlsCredential (JOIN-004).
  ByteRange credential_content;
  Capabilities capabilities;
  LeafNodeSource source = LeafNodeSource::kKeyPackage;
  std::optional<Lifetime> lifetime;       // set iff source is key_package
  ByteRange parent_hash;                  // source commit only
  std::vector<uint16_t> extension_types;  // in wire order
  // From encryption_key through the extensions: the whole LeafNodeTBS for source key_package
  // (for update and commit, LeafNodeTBS appends group_id and leaf_index, which are not here).
  ByteRange tbs;
  ByteRange signature;
};

// Reads one LeafNode. Fails on truncation or a bad vector prefix, a leaf_node_source other than
// 1-3, or a leaf extension list that breaks VALIDATION.md 4.2 (duplicate type; last_resort,
// immutable_metadata, ratchet_tree, required_capabilities, external_pub or external_senders in a
// leaf; a known extension whose data does not parse). `out` may be null when only the shape
// matters.
Status ReadLeafNode(TlsReader& reader, LeafNodeFields* out);

// Reads a Credential: uint16 credential_type, then opaque credential_content<V>. Any type parses.
// Either output may be null.
Status ReadCredential(TlsReader& reader, uint16_t* type, ByteRange* content);

}  // namespace xb::validate
