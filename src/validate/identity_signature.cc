#include "validate/identity_signature.h"

#include <cctype>
#include <tuple>

#include "crypto/ecdsa.h"
#include "crypto/ed25519ph.h"
#include "crypto/secp256k1.h"
#include "crypto/sha256.h"
#include "validate/webauthn.h"

namespace xb::validate {
namespace {

IdentityError Invalid(std::string message) {
  return IdentityError{IdentityFailure::kInvalidSignature, std::move(message)};
}

// implements: VALIDATION.md 5.5.1
std::variant<VerifiedSignature, IdentityError> VerifyErc191(const SignatureInput& s,
                                                            std::string_view personal_hash) {
  auto signer = crypto::RecoverEthereumSigner(personal_hash, s.bytes);
  if (!signer) {
    return Invalid("erc-191 signature does not verify");
  }
  VerifiedSignature out;
  out.kind = SignatureKind::kErc191;
  out.signer = MemberId{MemberKind::kEthereum, std::move(signer->address)};
  out.replay_key.assign(reinterpret_cast<const char*>(signer->canonical_rsv.data()),
                        signer->canonical_rsv.size());
  return out;
}

// implements: VALIDATION.md 5.5.2
std::variant<VerifiedSignature, IdentityError> VerifyInstallation(const SignatureInput& s,
                                                                  std::string_view text) {
  if (s.bytes.size() != 64 ||
      !crypto::Ed25519phVerify(s.public_key, text, kInstallationSignatureContext, s.bytes)) {
    return Invalid("installation key signature does not verify");
  }
  VerifiedSignature out;
  out.kind = SignatureKind::kInstallationKey;
  out.signer = MemberId{MemberKind::kInstallation, s.public_key};
  out.replay_key = s.bytes;
  return out;
}

// implements: VALIDATION.md 5.5.3
std::variant<VerifiedSignature, IdentityError> VerifyPasskey(const SignatureInput& s,
                                                             std::string_view text) {
  auto client_data = ParseClientDataJson(s.client_data_json);
  if (!client_data) {
    return Invalid("passkey client data is not valid");
  }
  if (client_data->challenge != Base64UrlNoPad(text)) {
    return Invalid("passkey challenge does not match the signature text");
  }
  const bool key_shape =
      (s.public_key.size() == 65 && s.public_key[0] == 0x04) ||
      (s.public_key.size() == 33 && (s.public_key[0] == 0x02 || s.public_key[0] == 0x03));
  if (!key_shape) {
    return Invalid("passkey public key is not a P-256 point");
  }
  auto replay_key = P256DerToLowSRaw(s.bytes);
  if (!replay_key) {
    return Invalid("passkey signature is not strict DER");
  }
  const crypto::Sha256Digest client_hash = crypto::Sha256(s.client_data_json);
  std::string message = s.authenticator_data;
  message.append(reinterpret_cast<const char*>(client_hash.data()), client_hash.size());
  if (!crypto::EcdsaVerify(crypto::EcCurve::kP256, s.public_key, message, s.bytes,
                           crypto::EcSignatureEncoding::kDer)) {
    return Invalid("passkey signature does not verify");
  }
  VerifiedSignature out;
  out.kind = SignatureKind::kPasskey;
  out.signer = MemberId{MemberKind::kPasskey, s.public_key};
  out.replay_key = *std::move(replay_key);
  return out;
}

std::string Lower(std::string s) {
  for (char& c : s) {
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return s;
}

}  // namespace

std::variant<ScwCheck, IdentityError> ScwCheckOf(const SignatureInput& s,
                                                 std::string_view personal_hash) {
  if (!Eip155ChainId(s.account)) {
    return Invalid("smart contract wallet account id is not an eip155 account");
  }
  return ScwCheck{.chain = s.account.chain,
                  .address = s.account.address,
                  .hash = std::string(personal_hash),
                  .signature = s.bytes,
                  .block_number = s.block_number};
}

std::variant<VerifiedSignature, IdentityError> VerifySignature(const SignatureInput& signature,
                                                               std::string_view text,
                                                               std::string_view personal_hash,
                                                               const ScwVerdictFn& scw) {
  switch (signature.kind) {
    case SignatureKind::kErc191:
      return VerifyErc191(signature, personal_hash);
    case SignatureKind::kInstallationKey:
      return VerifyInstallation(signature, text);
    case SignatureKind::kPasskey:
      return VerifyPasskey(signature, text);
    case SignatureKind::kErc6492:
      break;
  }
  // implements: VALIDATION.md 5.5.4, 5.9.3 (verdict resolved by the caller's chain client)
  auto check = ScwCheckOf(signature, personal_hash);
  if (auto* e = std::get_if<IdentityError>(&check)) {
    return std::move(*e);
  }
  if (!scw) {
    return IdentityError{IdentityFailure::kUnavailable, "signature verifier unavailable"};
  }
  auto verdict = scw(std::get<ScwCheck>(check));
  if (auto* e = std::get_if<IdentityError>(&verdict)) {
    return std::move(*e);
  }
  if (!std::get<bool>(verdict)) {
    return Invalid("smart contract wallet signature does not verify");
  }
  VerifiedSignature out;
  out.kind = SignatureKind::kErc6492;
  out.signer = MemberId{MemberKind::kEthereum, Lower(signature.account.address)};
  out.chain_id = Eip155ChainId(signature.account);
  out.replay_key = signature.bytes;
  return out;
}

}  // namespace xb::validate
