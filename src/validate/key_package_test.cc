#include "validate/key_package.h"

#include <gtest/gtest.h>

#include "validate/mls_test_builders.h"
#include "validate/test_bytes.h"
#include "validate/validation_vectors_test_data.h"

namespace xb::validate {
namespace {

using testing::Extension;
using testing::Extensions;
using testing::Hex;
using testing::KeyPackage;
using testing::KeyPackageSpec;
using testing::LeafNode;
using testing::Repeat;
using testing::U16;
using testing::U16List;
using testing::U32;
using testing::U8;
using testing::Unhex;
using testing::Vec;

bool Parses(std::string_view bytes) { return ParseKeyPackage(bytes).ok(); }

// The builder (written from RFC 9420 by hand) reproduces the VALIDATION.md 8.2 minimal package
// once given its signatures: a check on the builder that the other tests rely on.
TEST(KeyPackage, BuilderReproducesTheMinimalVector) {
  KeyPackageSpec spec;
  spec.leaf.signature = Unhex(vectors::kKeyPackageMinimalLeafSignature);
  spec.signature = Unhex(vectors::kKeyPackageMinimalKeyPackageSignature);
  EXPECT_EQ(Hex(KeyPackage(spec)), vectors::kKeyPackageMinimalTls);
}

TEST(KeyPackage, MinimalVectorFields) {
  const std::string bytes = Unhex(vectors::kKeyPackageMinimalTls);
  Result<ParsedKeyPackage> kp = ParseKeyPackage(bytes);
  ASSERT_TRUE(kp.ok()) << kp.status().ToString();
  EXPECT_EQ(kp->bytes, bytes);
  EXPECT_EQ(kp->version, 1);
  EXPECT_EQ(kp->cipher_suite, 3);
  EXPECT_EQ(Hex(kp->View(kp->init_key)), vectors::kKeyPackageInitKey);
  EXPECT_EQ(Hex(kp->View(kp->leaf_node.encryption_key)), vectors::kKeyPackageEncryptionKey);
  EXPECT_EQ(Hex(kp->signature_key()), vectors::kKeyPackageSignatureKey);
  EXPECT_EQ(kp->leaf_node.credential_type, 1);
  EXPECT_EQ(Hex(kp->View(kp->leaf_node.credential_content)), vectors::kKeyPackageMlsCredential);
  EXPECT_EQ(kp->leaf_node.capabilities.versions, std::vector<uint16_t>{1});
  EXPECT_EQ(kp->leaf_node.capabilities.cipher_suites, std::vector<uint16_t>{3});
  EXPECT_TRUE(kp->leaf_node.capabilities.extensions.empty());
  EXPECT_TRUE(kp->leaf_node.capabilities.proposals.empty());
  EXPECT_EQ(kp->leaf_node.capabilities.credentials, std::vector<uint16_t>{1});
  EXPECT_EQ(kp->leaf_node.source, LeafNodeSource::kKeyPackage);
  ASSERT_TRUE(kp->leaf_node.lifetime.has_value());
  EXPECT_EQ(kp->leaf_node.lifetime->not_before, 0u);
  EXPECT_EQ(kp->leaf_node.lifetime->not_after, 0xffffffffffffffffu);
  EXPECT_TRUE(kp->leaf_node.extension_types.empty());
  EXPECT_TRUE(kp->extension_types.empty());
  // The ranges the signature checks need (VALIDATION.md 4.3 steps 2 and 6).
  EXPECT_EQ(Hex(kp->View(kp->leaf_node.tbs)), vectors::kKeyPackageMinimalLeafNodeTbs);
  EXPECT_EQ(Hex(kp->View(kp->leaf_node.signature)), vectors::kKeyPackageMinimalLeafSignature);
  EXPECT_EQ(Hex(kp->View(kp->signature)), vectors::kKeyPackageMinimalKeyPackageSignature);
  EXPECT_EQ(kp->tbs.offset, 0u);
  EXPECT_EQ(kp->tbs.size, bytes.size() - 2 - 64);  // all but the 0x4040-prefixed signature
  EXPECT_FALSE(kp->non_canonical);
}

TEST(KeyPackage, XmtpLikeVector) {
  Result<ParsedKeyPackage> kp = ParseKeyPackage(Unhex(vectors::kKeyPackageXmtpLike));
  ASSERT_TRUE(kp.ok()) << kp.status().ToString();
  EXPECT_EQ(kp->leaf_node.extension_types, std::vector<uint16_t>{1});
  EXPECT_EQ(kp->extension_types, (std::vector<uint16_t>{10, 0xff04}));
  EXPECT_EQ(kp->leaf_node.capabilities.extensions,
            (std::vector<uint16_t>{10, 1, 0xf000, 6, 0xff02, 0xff00, 0xff01, 0xff03, 0xff04}));
  EXPECT_EQ(kp->leaf_node.capabilities.proposals, (std::vector<uint16_t>{7, 8}));
  EXPECT_EQ(Hex(kp->signature_key()), vectors::kKeyPackageSignatureKey);
  EXPECT_FALSE(kp->non_canonical);
}

// The VALIDATION.md 8.2 key-package cases at the parse phase: MALFORMED_PAYLOAD cases fail here;
// accepted and INVALID_KEY_PACKAGE cases parse (their rejection belongs to the validator).
TEST(KeyPackage, ValidationVectorCasesAtTheParsePhase) {
  for (const vectors::KeyPackageCase& c : vectors::kKeyPackageCases) {
    const bool parses = Parses(Unhex(c.tls));
    EXPECT_EQ(parses, c.expect != "REASON_MALFORMED_PAYLOAD") << c.name;
  }
}

TEST(KeyPackage, ValidationCasesKeepWhatTheValidatorNeeds) {
  for (const vectors::KeyPackageCase& c : vectors::kKeyPackageCases) {
    Result<ParsedKeyPackage> kp = ParseKeyPackage(Unhex(c.tls));
    if (c.name == "neg_version_2") {
      EXPECT_EQ(kp->version, 2);
    } else if (c.name == "neg_x509_credential") {
      EXPECT_EQ(kp->leaf_node.credential_type, 2);
    } else if (c.name == "neg_expired") {
      EXPECT_EQ(kp->leaf_node.lifetime->not_after, 1u);
    } else if (c.name == "neg_cs2_with_ed25519_key") {
      EXPECT_EQ(kp->cipher_suite, 2);
    } else if (c.name == "neg_init_equals_enc") {
      EXPECT_EQ(kp->View(kp->init_key), kp->View(kp->leaf_node.encryption_key));
    } else if (c.name == "neg_last_resort_not_in_caps") {
      EXPECT_EQ(kp->extension_types, std::vector<uint16_t>{10});
    }
  }
}

TEST(KeyPackage, TrailingByteIsMalformed) {
  Result<ParsedKeyPackage> kp = ParseKeyPackage(Unhex(vectors::kKeyPackageMinimalTls) + U8(0));
  ASSERT_FALSE(kp.ok());
  EXPECT_EQ(kp.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(kp.status().message(), "bytes follow the key package");
}

TEST(KeyPackage, EveryStrictPrefixIsMalformed) {
  const std::string bytes = Unhex(vectors::kKeyPackageXmtpLike);
  for (size_t n = 0; n < bytes.size(); ++n) {
    ASSERT_FALSE(Parses(std::string_view(bytes).substr(0, n))) << n;
  }
}

// VALIDATION.md 4.4: 0x0001-0x0007 and 0x004D parse; anything else is malformed.
TEST(KeyPackage, CipherSuites) {
  for (uint16_t suite : {1, 2, 3, 4, 5, 6, 7, 0x4d}) {
    KeyPackageSpec spec;
    spec.cipher_suite = suite;
    EXPECT_TRUE(Parses(KeyPackage(spec))) << suite;
  }
  for (uint16_t suite : {0, 8, 9, 0x4c, 0x4e, 0x0a0a, 0xffff}) {
    KeyPackageSpec spec;
    spec.cipher_suite = suite;
    Result<ParsedKeyPackage> kp = ParseKeyPackage(KeyPackage(spec));
    ASSERT_FALSE(kp.ok()) << suite;
    EXPECT_EQ(kp.status().message(), "key package cipher suite is unknown");
  }
}

TEST(KeyPackage, AnyVersionParses) {
  KeyPackageSpec spec;
  spec.version = 0xfe;
  Result<ParsedKeyPackage> kp = ParseKeyPackage(KeyPackage(spec));
  ASSERT_TRUE(kp.ok());
  EXPECT_EQ(kp->version, 0xfe);
}

// The signature_key length is routing (TOPIC-002, envelope.cc), not a parse rule.
TEST(KeyPackage, SignatureKeyOfAnyLengthParses) {
  for (size_t n : {size_t{0}, size_t{31}, size_t{33}, size_t{65}}) {
    KeyPackageSpec spec;
    spec.leaf.signature_key = Repeat(0x04, n);
    Result<ParsedKeyPackage> kp = ParseKeyPackage(KeyPackage(spec));
    ASSERT_TRUE(kp.ok()) << n;
    EXPECT_EQ(kp->signature_key().size(), n);
  }
}

TEST(KeyPackage, LeafNodeSources) {
  {
    KeyPackageSpec spec;
    spec.leaf.source = 2;  // update: nothing follows
    spec.leaf.source_body = "";
    Result<ParsedKeyPackage> kp = ParseKeyPackage(KeyPackage(spec));
    ASSERT_TRUE(kp.ok());
    EXPECT_EQ(kp->leaf_node.source, LeafNodeSource::kUpdate);
    EXPECT_FALSE(kp->leaf_node.lifetime.has_value());
  }
  {
    KeyPackageSpec spec;
    spec.leaf.source = 3;  // commit: parent_hash<V>
    spec.leaf.source_body = Vec(Repeat(0x99, 32));
    Result<ParsedKeyPackage> kp = ParseKeyPackage(KeyPackage(spec));
    ASSERT_TRUE(kp.ok());
    EXPECT_EQ(kp->leaf_node.source, LeafNodeSource::kCommit);
    EXPECT_EQ(kp->View(kp->leaf_node.parent_hash), Repeat(0x99, 32));
    EXPECT_FALSE(kp->leaf_node.lifetime.has_value());
  }
  for (uint8_t source : {0, 4, 0xff}) {
    KeyPackageSpec spec;
    spec.leaf.source = source;
    Result<ParsedKeyPackage> kp = ParseKeyPackage(KeyPackage(spec));
    ASSERT_FALSE(kp.ok()) << int{source};
    EXPECT_EQ(kp.status().message(), "leaf node source is unknown");
  }
}

TEST(KeyPackage, AnyCredentialTypeParsesAsOneOpaqueVector) {
  KeyPackageSpec spec;
  spec.leaf.credential_type = 2;  // x509
  spec.leaf.credential_content = Vec("cert-1") + Vec("cert-2");
  Result<ParsedKeyPackage> kp = ParseKeyPackage(KeyPackage(spec));
  ASSERT_TRUE(kp.ok());
  EXPECT_EQ(kp->leaf_node.credential_type, 2);
  EXPECT_EQ(kp->View(kp->leaf_node.credential_content), Vec("cert-1") + Vec("cert-2"));
}

// VALIDATION.md 4.2: these types are refused in a leaf node.
TEST(KeyPackage, ExtensionTypesRefusedInALeafNode) {
  for (uint16_t type : {2, 3, 4, 5, 10, 0xf000}) {
    KeyPackageSpec spec;
    spec.leaf.extensions = Extensions({Extension(type, "")});
    Result<ParsedKeyPackage> kp = ParseKeyPackage(KeyPackage(spec));
    ASSERT_FALSE(kp.ok()) << type;
    EXPECT_EQ(kp.status().message(), "extension type is not allowed in a leaf node");
  }
}

TEST(KeyPackage, ExtensionTypesAllowedInALeafNode) {
  KeyPackageSpec spec;
  spec.leaf.extensions =
      Extensions({Extension(1, Vec("inbox")), Extension(6, Vec(U16(1) + Vec("x"))),
                  Extension(0x0a0a, "grease"), Extension(0xff00, "xmtp"), Extension(0, "")});
  Result<ParsedKeyPackage> kp = ParseKeyPackage(KeyPackage(spec));
  ASSERT_TRUE(kp.ok()) << kp.status().ToString();
  EXPECT_EQ(kp->leaf_node.extension_types, (std::vector<uint16_t>{1, 6, 0x0a0a, 0xff00, 0}));
}

// VALIDATION.md 4.2: KeyPackage extensions refuse only duplicates at parse time; the type rules
// are validation (4.3 step 5).
TEST(KeyPackage, AnyKeyPackageExtensionTypeParses) {
  const std::string leaf = LeafNode(KeyPackageSpec{}.leaf);
  KeyPackageSpec spec;
  spec.extensions = Extensions({
      Extension(1, Vec("app")),
      Extension(
          2, Vec(U8(1) + U8(1) + leaf + U8(0) + U8(1) + U8(2) + Vec("ek") + Vec("") + Vec(U32(1)))),
      Extension(3, U16List({10}) + U16List({}) + U16List({1})),
      Extension(4, Vec(Repeat(0x44, 32))),
      Extension(5, Vec(Vec(Repeat(0x55, 32)) + U16(1) + Vec("sender"))),
      Extension(10, ""),
      Extension(0xf000, Vec("meta")),
      Extension(0xff04, Unhex("0803")),
  });
  Result<ParsedKeyPackage> kp = ParseKeyPackage(KeyPackage(spec));
  ASSERT_TRUE(kp.ok()) << kp.status().ToString();
  EXPECT_EQ(kp->extension_types, (std::vector<uint16_t>{1, 2, 3, 4, 5, 10, 0xf000, 0xff04}));
  EXPECT_FALSE(kp->non_canonical);
}

TEST(KeyPackage, DuplicateExtensionTypeIsMalformed) {
  {
    KeyPackageSpec spec;
    spec.extensions = Extensions({Extension(10, ""), Extension(0xff04, ""), Extension(10, "")});
    Result<ParsedKeyPackage> kp = ParseKeyPackage(KeyPackage(spec));
    ASSERT_FALSE(kp.ok());
    EXPECT_EQ(kp.status().message(), "extension type appears twice in one list");
  }
  {
    KeyPackageSpec spec;
    spec.leaf.extensions = Extensions({Extension(0xff00, "a"), Extension(0xff00, "b")});
    EXPECT_FALSE(Parses(KeyPackage(spec)));
  }
  {
    // The same type in the leaf and in the package is two lists, not a duplicate.
    KeyPackageSpec spec;
    spec.leaf.extensions = Extensions({Extension(0xff00, "a")});
    spec.extensions = Extensions({Extension(0xff00, "b")});
    EXPECT_TRUE(Parses(KeyPackage(spec)));
  }
}

TEST(KeyPackage, KnownExtensionWhoseDataDoesNotParseIsMalformed) {
  const std::string bad_data[] = {
      "",                 // application_id needs key_id<V>
      U8(5) + "ab",       // key_id runs past extension_data
      U16(0x4001) + "x",  // non-minimal prefix inside
  };
  for (const std::string& data : bad_data) {
    KeyPackageSpec spec;
    spec.extensions = Extensions({Extension(1, data)});
    EXPECT_FALSE(Parses(KeyPackage(spec))) << Hex(data);
  }
  {
    KeyPackageSpec spec;  // ratchet tree node type 3
    spec.extensions = Extensions({Extension(2, Vec(U8(1) + U8(3)))});
    EXPECT_FALSE(Parses(KeyPackage(spec)));
  }
  {
    KeyPackageSpec spec;  // ratchet tree presence byte 2
    spec.extensions = Extensions({Extension(2, Vec(U8(2)))});
    EXPECT_FALSE(Parses(KeyPackage(spec)));
  }
  {
    KeyPackageSpec spec;  // app_data_dictionary out of component order (draft layout)
    spec.extensions = Extensions({Extension(6, Vec(U16(5) + Vec("") + U16(4) + Vec("")))});
    EXPECT_FALSE(Parses(KeyPackage(spec)));
  }
  {
    KeyPackageSpec spec;  // app_data_dictionary with a repeated component
    spec.extensions = Extensions({Extension(6, Vec(U16(5) + Vec("") + U16(5) + Vec("")))});
    EXPECT_FALSE(Parses(KeyPackage(spec)));
  }
  {
    // Unknown types are opaque: the same bytes are fine there.
    KeyPackageSpec spec;
    spec.extensions = Extensions({Extension(0xff03, U8(5) + "ab")});
    EXPECT_TRUE(Parses(KeyPackage(spec)));
  }
}

// VALIDATION.md 4.1/4.3 quirk: bytes left over inside a known extension's data parse, and are
// flagged for the validator (REASON_INVALID_KEY_PACKAGE).
TEST(KeyPackage, LeftoverBytesInAKnownExtensionParseButAreFlagged) {
  {
    KeyPackageSpec spec;
    spec.extensions = Extensions({Extension(10, "x")});  // last_resort is an empty struct
    Result<ParsedKeyPackage> kp = ParseKeyPackage(KeyPackage(spec));
    ASSERT_TRUE(kp.ok());
    EXPECT_TRUE(kp->non_canonical);
  }
  {
    KeyPackageSpec spec;
    spec.leaf.extensions = Extensions({Extension(1, Vec("inbox") + "zz")});
    Result<ParsedKeyPackage> kp = ParseKeyPackage(KeyPackage(spec));
    ASSERT_TRUE(kp.ok());
    EXPECT_TRUE(kp->non_canonical);
  }
  {
    // Leftovers in an unknown type are just its opaque data.
    KeyPackageSpec spec;
    spec.extensions = Extensions({Extension(0xff04, Vec("x") + "zz")});
    Result<ParsedKeyPackage> kp = ParseKeyPackage(KeyPackage(spec));
    ASSERT_TRUE(kp.ok());
    EXPECT_FALSE(kp->non_canonical);
  }
}

// VALIDATION.md 2.1 quirk: a uint16 list declaring an odd length reads a whole last element and
// parses on; the package is flagged non-canonical.
TEST(KeyPackage, CapabilityListOverrunParsesButIsFlagged) {
  KeyPackageSpec spec;
  spec.leaf.capabilities = U8(1) + U16(1) + U16List({3}) + U16List({}) + U16List({}) + U16List({1});
  Result<ParsedKeyPackage> kp = ParseKeyPackage(KeyPackage(spec));
  ASSERT_TRUE(kp.ok()) << kp.status().ToString();
  EXPECT_EQ(kp->leaf_node.capabilities.versions, std::vector<uint16_t>{1});
  EXPECT_TRUE(kp->non_canonical);
}

TEST(KeyPackage, BadVectorPrefixesAreMalformed) {
  const std::string good = KeyPackage(KeyPackageSpec{});
  // init_key (32 bytes) written with a two-byte prefix.
  std::string non_minimal = good.substr(0, 4) + U16(0x4020) + good.substr(5);
  EXPECT_FALSE(Parses(non_minimal));
  // A 0b11 prefix on init_key.
  std::string invalid = good;
  invalid[4] = static_cast<char>(0xe0);
  EXPECT_FALSE(Parses(invalid));
}

TEST(KeyPackage, ParsedKeyPackageOwnsItsBytes) {
  ParsedKeyPackage copy;
  {
    const std::string bytes = Unhex(vectors::kKeyPackageMinimalTls);
    Result<ParsedKeyPackage> kp = ParseKeyPackage(bytes);
    ASSERT_TRUE(kp.ok());
    copy = *kp;
  }
  EXPECT_EQ(Hex(copy.signature_key()), vectors::kKeyPackageSignatureKey);
}

}  // namespace
}  // namespace xb::validate
