// Test-only builders for RFC 9420 structures (LeafNode §7.2, KeyPackage §10, Extension §13.4,
// PublicMessage §6.2, PrivateMessage §6.3), written from the RFC layouts with test_bytes.h alone,
// never with the parser under test. Defaults reproduce the "minimal" key package of VALIDATION.md
// 8.2 apart from the signatures (key_package_test.cc checks that).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

#include "validate/test_bytes.h"

namespace xb::validate::testing {

// One Extension: uint16 extension_type, opaque extension_data<V>.
inline std::string Extension(uint16_t type, std::string_view data) { return U16(type) + Vec(data); }

// An extension list: the encoded extensions, concatenated, as one vector.
inline std::string Extensions(std::initializer_list<std::string> extensions) {
  std::string body;
  for (const std::string& e : extensions) {
    body += e;
  }
  return Vec(body);
}

// A uint16 list as a vector.
inline std::string U16List(std::initializer_list<uint16_t> values) {
  std::string body;
  for (uint16_t v : values) {
    body += U16(v);
  }
  return Vec(body);
}

// MlsCredential{inbox_id = "3f32…8cb7"}: 0a 40 + 64 ASCII bytes.
inline std::string DefaultCredentialIdentity() {
  return Unhex("0a40") + "3f32eda0e45ae49c871fdd6facebe8f29e11b788d830ced24989d64db11b8cb7";
}

struct LeafNodeSpec {
  std::string encryption_key =
      Unhex("79a631eede1bf9c98f12032cdeadd0e7a079398fc786b88cc846ec89af85a51a");
  std::string signature_key =
      Unhex("03a107bff3ce10be1d70dd18e74bc09967e4d6309ba50d5f1ddc8664125531b8");
  uint16_t credential_type = 1;
  std::string credential_content = DefaultCredentialIdentity();
  // versions [1], cipher_suites [3], extensions [], proposals [], credentials [1].
  std::string capabilities = U16List({1}) + U16List({3}) + U16List({}) + U16List({}) + U16List({1});
  uint8_t source = 1;
  std::string source_body = U64(0) + U64(0xffffffffffffffffu);  // Lifetime 0 .. 2^64-1
  std::string extensions = Extensions({});
  std::string signature = Repeat(0x4d, 64);
};

inline std::string LeafNodeTbs(const LeafNodeSpec& s) {
  return Vec(s.encryption_key) + Vec(s.signature_key) + U16(s.credential_type) +
         Vec(s.credential_content) + s.capabilities + U8(s.source) + s.source_body + s.extensions;
}

inline std::string LeafNode(const LeafNodeSpec& s) { return LeafNodeTbs(s) + Vec(s.signature); }

struct KeyPackageSpec {
  uint16_t version = 1;
  uint16_t cipher_suite = 3;
  std::string init_key = Unhex("358072d6365880d1aeea329adf9121383851ed21a28e3b75e965d0d2cd166254");
  LeafNodeSpec leaf;
  std::string extensions = Extensions({});
  std::string signature = Repeat(0xf8, 64);
};

inline std::string KeyPackageTbs(const KeyPackageSpec& s) {
  return U16(s.version) + U16(s.cipher_suite) + Vec(s.init_key) + LeafNode(s.leaf) + s.extensions;
}

inline std::string KeyPackage(const KeyPackageSpec& s) {
  return KeyPackageTbs(s) + Vec(s.signature);
}

// MLSMessage header: uint16 version, uint16 wire_format.
inline std::string MlsHeader(uint16_t wire_format, uint16_t version = 1) {
  return U16(version) + U16(wire_format);
}

inline std::string PrivateMessage(std::string_view group_id, uint64_t epoch, uint8_t content_type,
                                  std::string_view aad = "", std::string_view sender_data = "sd",
                                  std::string_view ciphertext = "ct") {
  return MlsHeader(2) + Vec(group_id) + U64(epoch) + U8(content_type) + Vec(aad) +
         Vec(sender_data) + Vec(ciphertext);
}

// Sender encodings (RFC 9420 §6).
inline std::string MemberSender(uint32_t leaf_index) { return U8(1) + U32(leaf_index); }
inline std::string ExternalSender(uint32_t sender_index) { return U8(2) + U32(sender_index); }
inline std::string NewMemberProposalSender() { return U8(3); }
inline std::string NewMemberCommitSender() { return U8(4); }

// A PublicMessage: FramedContent (group_id, epoch, sender, authenticated_data, content_type,
// `body` already encoded), then `auth_and_tags` already encoded (signature<V>, confirmation_tag<V>
// for a commit, membership_tag<V> for a member sender).
inline std::string PublicMessage(std::string_view group_id, std::string_view sender,
                                 uint8_t content_type, std::string_view body,
                                 std::string_view auth_and_tags) {
  return MlsHeader(1) + Vec(group_id) + U64(7) + std::string(sender) + Vec("") + U8(content_type) +
         std::string(body) + std::string(auth_and_tags);
}

inline std::string Signature() { return Vec(Repeat(0x5a, 64)); }
inline std::string Tag() { return Vec(Repeat(0x7a, 32)); }

}  // namespace xb::validate::testing
