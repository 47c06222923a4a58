// libFuzzer target for key-package admission on untrusted bytes: the RFC 9420 KeyPackage decoder
// (validate/key_package.h) and, for whatever parses, the full validation of VALIDATION.md 4.3
// (validate/key_package_validator.h: TLS re-reads, both labelled Ed25519/ECDSA signature checks,
// lifetime, capabilities, MlsCredential protobuf).
//
// Input layout: byte 0 picks the validation clock (see kClocks); the rest is
// key_package_tls_serialized. Seeds (bench/fuzz.sh) are the VALIDATION.md 8.2 vectors, so
// mutations start from packages whose signatures verify and reach every validation step.
//
// Invariants checked:
//  - no crash, no sanitizer report, no unbounded allocation, whatever the bytes;
//  - a parse failure is INVALID_ARGUMENT with a printable message;
//  - every range of a parsed package lies inside its bytes, the KeyPackageTBS starts at 0 and the
//    signature ends the input, the leaf TBS and signature lie inside the KeyPackageTBS;
//  - validation answers OK or INVALID_ARGUMENT "key package is invalid: ..." (printable), and the
//    same answer twice;
//  - an accepted package satisfies what VALIDATION.md 4.3 requires of it (version 1, source
//    key_package with a lifetime around the clock, init_key != encryption_key, basic credential,
//    canonical encoding, a 32-byte signature key when the suite is Ed25519).
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <limits>
#include <string_view>

#include "fuzz_input.h"
#include "validate/key_package.h"
#include "validate/key_package_validator.h"

namespace {

using xb::validate::ByteRange;
using xb::validate::ParsedKeyPackage;

constexpr uint64_t kClocks[] = {0, 1, 1700000000, std::numeric_limits<uint64_t>::max() - 16,
                                std::numeric_limits<uint64_t>::max()};

bool Printable(std::string_view text) {
  for (char c : text) {
    if (c < 0x20 || c > 0x7e) {
      return false;
    }
  }
  return true;
}

bool Inside(ByteRange inner, ByteRange outer) {
  return inner.offset >= outer.offset && inner.size <= outer.size &&
         inner.offset - outer.offset <= outer.size - inner.size;
}

void CheckRanges(const ParsedKeyPackage& kp, std::string_view bytes) {
  const ByteRange all{0, bytes.size()};
  const auto& leaf = kp.leaf_node;
  for (ByteRange r : {kp.init_key, kp.tbs, kp.signature, leaf.encryption_key, leaf.signature_key,
                      leaf.credential_content, leaf.parent_hash, leaf.tbs, leaf.signature}) {
    XB_FUZZ_CHECK(Inside(r, all));
  }
  XB_FUZZ_CHECK(kp.tbs.offset == 0);
  XB_FUZZ_CHECK(kp.signature.offset + kp.signature.size == bytes.size());
  XB_FUZZ_CHECK(Inside(leaf.tbs, kp.tbs));
  XB_FUZZ_CHECK(Inside(leaf.signature, kp.tbs));
  XB_FUZZ_CHECK(leaf.tbs.offset + leaf.tbs.size <= leaf.signature.offset);
  XB_FUZZ_CHECK(kp.bytes == bytes);
  XB_FUZZ_CHECK(leaf.lifetime.has_value() ==
                (leaf.source == xb::validate::LeafNodeSource::kKeyPackage));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  xb::fuzz::Input input(data, size);
  const uint64_t now = kClocks[input.Byte() % std::size(kClocks)];
  const std::string_view bytes = input.rest();

  auto parsed = xb::validate::ParseKeyPackage(bytes);
  if (!parsed.ok()) {
    XB_FUZZ_CHECK(parsed.status().code() == xb::StatusCode::kInvalidArgument);
    XB_FUZZ_CHECK(Printable(parsed.status().message()));
    return 0;
  }
  const ParsedKeyPackage& kp = *parsed;
  CheckRanges(kp, bytes);

  const xb::Status verdict = xb::validate::ValidateKeyPackage(kp, now);
  const xb::Status again = xb::validate::ValidateKeyPackage(kp, now);
  XB_FUZZ_CHECK(verdict.code() == again.code() && verdict.message() == again.message());
  if (!verdict.ok()) {
    XB_FUZZ_CHECK(verdict.code() == xb::StatusCode::kInvalidArgument);
    XB_FUZZ_CHECK(verdict.message().starts_with("key package is invalid: "));
    XB_FUZZ_CHECK(Printable(verdict.message()));
    return 0;
  }
  const auto& leaf = kp.leaf_node;
  XB_FUZZ_CHECK(kp.version == 1);
  XB_FUZZ_CHECK(!kp.non_canonical);
  XB_FUZZ_CHECK(leaf.lifetime.has_value());
  XB_FUZZ_CHECK(leaf.lifetime->not_before <= now && now < leaf.lifetime->not_after);
  XB_FUZZ_CHECK(kp.View(leaf.encryption_key) != kp.View(kp.init_key));
  XB_FUZZ_CHECK(leaf.credential_type == 1);
  if (kp.cipher_suite == 1 || kp.cipher_suite == 3 || kp.cipher_suite == 0x4d) {
    XB_FUZZ_CHECK(kp.signature_key().size() == 32);
    XB_FUZZ_CHECK(kp.View(kp.signature).size() == 64);
  }
  return 0;
}
