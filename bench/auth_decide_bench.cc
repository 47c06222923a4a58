// In-process cost of one auth decision (auth::Authenticator::Decide), the part bench/auth.sh
// measures end to end: an API key, a JWT ES256 from the verified-token cache, and the same JWT
// verified from scratch (cache off).
#include <benchmark/benchmark.h>

#include "auth/authenticator.h"
#include "auth/test_signer.h"

namespace xb::auth {
namespace {

constexpr std::string_view kPath = "/xmtp.backend.v1.QueryService/Query";

struct Fixture {
  Fixture(size_t cache_entries) : key(testing::Generate(Alg::kEs256)) {
    config::AuthConfig config;
    config.enabled = true;
    config.api_keys = {{"bench", std::string(48, 'k')}, {"other", std::string(48, 'o')}};
    config.keys.push_back(
        {.kid = "k", .alg = "ES256", .public_key = testing::PublicPem(key.get())});
    config.audiences = std::vector<std::string>{"bench"};
    config.issuers = std::vector<std::string>{"https://bench"};
    config.required_scopes = {"xmtp"};
    auth = std::move(
               Authenticator::Create(config, AuthenticatorOptions{.identifier = "bench",
                                                                  .metrics = nullptr,
                                                                  .logger = nullptr,
                                                                  .now_seconds = {},
                                                                  .cache_entries = cache_entries}))
               .value();
    jwt =
        "Bearer " +
        testing::Token(Alg::kEs256, key.get(), R"({"alg":"ES256","kid":"k"})",
                       R"({"exp":4000000000,"aud":"bench","iss":"https://bench","scope":"xmtp"})");
    api_key = "Bearer " + std::string(48, 'k');
  }
  testing::Pkey key;
  std::unique_ptr<Authenticator> auth;
  std::string jwt;
  std::string api_key;
};

void BM_ApiKey(benchmark::State& state) {
  Fixture f(16384);
  for (auto _ : state) {
    benchmark::DoNotOptimize(f.auth->Decide(kPath, &f.api_key));
  }
}
BENCHMARK(BM_ApiKey);

void BM_JwtCached(benchmark::State& state) {
  Fixture f(16384);
  if (f.auth->Decide(kPath, &f.jwt).rejection) {
    state.SkipWithError("token refused");
  }
  for (auto _ : state) {
    benchmark::DoNotOptimize(f.auth->Decide(kPath, &f.jwt));
  }
}
BENCHMARK(BM_JwtCached);

void BM_JwtUncached(benchmark::State& state) {
  Fixture f(0);
  for (auto _ : state) {
    benchmark::DoNotOptimize(f.auth->Decide(kPath, &f.jwt));
  }
}
BENCHMARK(BM_JwtUncached);

}  // namespace
}  // namespace xb::auth

BENCHMARK_MAIN();
