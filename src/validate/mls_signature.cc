#include "validate/mls_signature.h"

#include "base/check.h"
#include "crypto/ecdsa.h"
#include "crypto/ed25519.h"
#include "validate/tls_reader.h"

namespace xb::validate {
namespace {

// RFC 9420 §5.1.2.
constexpr std::string_view kLabelPrefix = "MLS 1.0 ";

// The shortest §2.1.2 prefix for `length` (VALIDATION.md 2.1: the reader refuses longer ones).
void AppendVectorLength(std::string& out, size_t length) {
  XB_CHECK(length <= kMaxVectorLength);
  if (length <= 0x3f) {
    out.push_back(static_cast<char>(length));
  } else if (length <= 0x3fff) {
    out.push_back(static_cast<char>(0x40 | (length >> 8)));
    out.push_back(static_cast<char>(length & 0xff));
  } else {
    out.push_back(static_cast<char>(0x80 | (length >> 24)));
    out.push_back(static_cast<char>((length >> 16) & 0xff));
    out.push_back(static_cast<char>((length >> 8) & 0xff));
    out.push_back(static_cast<char>(length & 0xff));
  }
}

}  // namespace

std::string MlsSignContent(std::string_view label, std::string_view content) {
  std::string out;
  out.reserve(kLabelPrefix.size() + label.size() + content.size() + 8);
  AppendVectorLength(out, kLabelPrefix.size() + label.size());
  out.append(kLabelPrefix);
  out.append(label);
  AppendVectorLength(out, content.size());
  out.append(content);
  return out;
}

bool MlsVerifyWithLabel(uint16_t cipher_suite, std::string_view public_key, std::string_view label,
                        std::string_view content, std::string_view signature) {
  const std::string sign_content = MlsSignContent(label, content);
  switch (cipher_suite) {
    case 0x0001:
    case 0x0003:
    case 0x004d:
      return crypto::Ed25519VerifyStrict(public_key, sign_content, signature);
    case 0x0002:
      return crypto::EcdsaVerify(crypto::EcCurve::kP256, public_key, sign_content, signature,
                                 crypto::EcSignatureEncoding::kDer);
    case 0x0007:
      return crypto::EcdsaVerify(crypto::EcCurve::kP384, public_key, sign_content, signature,
                                 crypto::EcSignatureEncoding::kDer);
    case 0x0005:
      return crypto::EcdsaVerify(crypto::EcCurve::kP521, public_key, sign_content, signature,
                                 crypto::EcSignatureEncoding::kDer);
    default:
      return false;  // Ed448 (0x0004, 0x0006): no scheme at the reference; unknown suites
  }
}

}  // namespace xb::validate
