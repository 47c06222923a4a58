// Key-package admission cost (VALIDATION.md 4): parse (key_package.h) and full validation
// (key_package_validator.h: two strict Ed25519 labelled-signature checks plus the structural
// rules) of the VALIDATION.md 8.2 vectors. items_per_second of the single-threaded cases is
// "key-package validations per second per core". Nothing here asserts a timing; each case checks
// once, before timing, that its input gives the expected verdict.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "crypto/ed25519.h"
#include "validate/key_package.h"
#include "validate/key_package_validator.h"
#include "validate/mls_signature.h"
#include "validate/test_bytes.h"
#include "validate/validation_vectors_test_data.h"

namespace xb::validate {
namespace {

constexpr uint64_t kNow = 1700000000;  // inside every vector's lifetime

std::string Bytes(std::string_view hex) { return testing::Unhex(hex); }

std::string Case(std::string_view name) {
  for (const vectors::KeyPackageCase& c : vectors::kKeyPackageCases) {
    if (c.name == name) {
      return Bytes(c.tls);
    }
  }
  std::abort();
}

// Parse + validate, as publish admission runs them for one key package (on the CPU pool).
void AdmitKeyPackage(benchmark::State& state, const std::string& bytes, bool expect_ok) {
  {
    Result<ParsedKeyPackage> kp = ParseKeyPackage(bytes);
    if (!kp.ok() || ValidateKeyPackage(*kp, kNow).ok() != expect_ok) {
      state.SkipWithError("vector does not give the expected verdict");
      return;
    }
  }
  for (auto _ : state) {
    Result<ParsedKeyPackage> kp = ParseKeyPackage(bytes);
    Status verdict = ValidateKeyPackage(*kp, kNow);
    benchmark::DoNotOptimize(verdict);
  }
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(bytes.size()));
}

void BM_KeyPackageAdmit_Minimal(benchmark::State& state) {
  AdmitKeyPackage(state, Bytes(vectors::kKeyPackageMinimalTls), /*expect_ok=*/true);
}
void BM_KeyPackageAdmit_XmtpLike(benchmark::State& state) {
  AdmitKeyPackage(state, Bytes(vectors::kKeyPackageXmtpLike), /*expect_ok=*/true);
}
// A forged package fails at the first signature: the cheapest refusal that needs crypto.
void BM_KeyPackageAdmit_ForgedLeafSignature(benchmark::State& state) {
  std::string bytes = Bytes(vectors::kKeyPackageMinimalTls);
  const std::string leaf_sig = Bytes(vectors::kKeyPackageMinimalLeafSignature);
  bytes[bytes.find(leaf_sig)] ^= 0x01;
  AdmitKeyPackage(state, bytes, /*expect_ok=*/false);
}
// The second signature fails after the first verified: a refusal at full cost.
void BM_KeyPackageAdmit_ForgedKeyPackageSignature(benchmark::State& state) {
  AdmitKeyPackage(state, Case("neg_kp_sig_flipped"), /*expect_ok=*/false);
}

// Context for the figures above: the parse alone, and one labelled signature check.
void BM_KeyPackageParseOnly_XmtpLike(benchmark::State& state) {
  const std::string bytes = Bytes(vectors::kKeyPackageXmtpLike);
  for (auto _ : state) {
    Result<ParsedKeyPackage> kp = ParseKeyPackage(bytes);
    benchmark::DoNotOptimize(kp);
  }
  state.SetItemsProcessed(state.iterations());
}

void BM_MlsVerifyWithLabel_Ed25519(benchmark::State& state) {
  const std::string key = Bytes(vectors::kKeyPackageSignatureKey);
  const std::string tbs = Bytes(vectors::kKeyPackageMinimalLeafNodeTbs);
  const std::string sig = Bytes(vectors::kKeyPackageMinimalLeafSignature);
  if (!MlsVerifyWithLabel(3, key, "LeafNodeTBS", tbs, sig)) {
    state.SkipWithError("leaf signature does not verify");
    return;
  }
  for (auto _ : state) {
    benchmark::DoNotOptimize(MlsVerifyWithLabel(3, key, "LeafNodeTBS", tbs, sig));
  }
  state.SetItemsProcessed(state.iterations());
}

BENCHMARK(BM_KeyPackageAdmit_Minimal);
BENCHMARK(BM_KeyPackageAdmit_XmtpLike);
BENCHMARK(BM_KeyPackageAdmit_ForgedLeafSignature);
BENCHMARK(BM_KeyPackageAdmit_ForgedKeyPackageSignature);
// Two threads on the 2-core machine: whether validations scale across cores (no shared state).
BENCHMARK(BM_KeyPackageAdmit_XmtpLike)->Threads(2)->UseRealTime();
BENCHMARK(BM_KeyPackageParseOnly_XmtpLike);
BENCHMARK(BM_MlsVerifyWithLabel_Ed25519);

}  // namespace
}  // namespace xb::validate
