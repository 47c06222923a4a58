// Identity-update admission cost (VALIDATION.md 5.10): decoding, signature text, verification
// (ERC-191 secp256k1 recovery + Keccak-256, installation Ed25519ph) and the state machine, on the
// spec's computed identity log (VALIDATION.md 8.2). items_per_second is identity-update
// validations per second on one core. Nothing here asserts a timing; each case checks once,
// before timing, that its input is accepted.
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "crypto/ed25519ph.h"
#include "crypto/secp256k1.h"
#include "validate/identity_signature.h"
#include "validate/identity_validator.h"
#include "validate/test_bytes.h"
#include "validate/validation_vectors_test_data.h"
#include "xmtp/backend/v1/backend.pb.h"

namespace xb::validate {
namespace {

xmtp::identity::associations::IdentityUpdate UpdateOf(std::string_view envelope_hex) {
  xmtp::backend::v1::ClientEnvelope envelope;
  envelope.ParseFromString(testing::Unhex(envelope_hex));
  return envelope.identity_update();
}

bool Admit(const std::vector<std::string>& history,
           const xmtp::identity::associations::IdentityUpdate& update) {
  auto prepared = PrepareIdentityUpdate(history, update, {});
  if (std::holds_alternative<IdentityError>(prepared)) {
    return false;
  }
  auto outcome = FinishIdentityUpdate(std::get<PreparedIdentityUpdate>(prepared), {});
  return std::holds_alternative<IdentityOutcome>(outcome);
}

// Update 1 on an empty inbox: one CreateInbox (ERC-191) and one Add (ERC-191 + Ed25519ph),
// i.e. two secp256k1 recoveries and one Ed25519ph verification per validation.
void BM_IdentityUpdateRegistration(benchmark::State& state) {
  const auto update = UpdateOf(vectors::kUpdate1Envelope);
  if (!Admit({}, update)) {
    state.SkipWithError("update 1 is not accepted");
    return;
  }
  for (auto _ : state) {
    benchmark::DoNotOptimize(Admit({}, update));
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_IdentityUpdateRegistration);

// Update 2 after update 1: the stored history is re-verified on every admission (5.10 step 6),
// so this is the cost of an inbox's second update.
void BM_IdentityUpdateWithHistory(benchmark::State& state) {
  const std::vector<std::string> history = {testing::Unhex(vectors::kUpdate1Envelope)};
  const auto update = UpdateOf(vectors::kUpdate2Envelope);
  if (!Admit(history, update)) {
    state.SkipWithError("update 2 is not accepted");
    return;
  }
  for (auto _ : state) {
    benchmark::DoNotOptimize(Admit(history, update));
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_IdentityUpdateWithHistory);

// The two primitives alone.
void BM_Erc191Recovery(benchmark::State& state) {
  const std::string hash =
      testing::Unhex("019e61bac4ac172e2db069add58a94427b472b175df01d2b94bb44ee9bf9b720");
  const std::string sig = testing::Unhex(
      "3249138830018a2cd8954058d18a3d9773ac5e62ebf4f1aee368cc392027f84854347f9fdf92a5c510202792ff"
      "078e8531a997e0bd44669fe9eba57e542132f91c");
  for (auto _ : state) {
    benchmark::DoNotOptimize(crypto::RecoverEthereumSigner(hash, sig));
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_Erc191Recovery);

void BM_InstallationEd25519ph(benchmark::State& state) {
  const auto update = UpdateOf(vectors::kUpdate1Envelope);
  const auto decoded = std::get<DecodedIdentityUpdate>(DecodeIdentityUpdate(update));
  const std::string text = SignatureText(decoded);
  const auto& add = std::get<AddAssociationAction>(decoded.actions[1]);
  const auto& s = add.new_member_signature;
  if (!crypto::Ed25519phVerify(s.public_key, text, kInstallationSignatureContext, s.bytes)) {
    state.SkipWithError("installation signature does not verify");
    return;
  }
  for (auto _ : state) {
    benchmark::DoNotOptimize(
        crypto::Ed25519phVerify(s.public_key, text, kInstallationSignatureContext, s.bytes));
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_InstallationEd25519ph);

}  // namespace
}  // namespace xb::validate
