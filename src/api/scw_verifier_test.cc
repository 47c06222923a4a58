// The parts of the SCW verifier that need no chain: the validator bytecode, the 5.9.3 call data
// and the 5.9.4 cache key. Verdicts, cache bound and RPC failures are exercised against a chain
// stub in tests/integration/test_scw.py.
#include "api/scw_verifier.h"

#include <gtest/gtest.h>

#include "api/erc6492_validator.h"
#include "crypto/sha256.h"

namespace xb::api {
namespace {

std::string Hex(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (char c : bytes) {
    out.push_back(kDigits[static_cast<uint8_t>(c) >> 4]);
    out.push_back(kDigits[static_cast<uint8_t>(c) & 0x0f]);
  }
  return out;
}

validate::ScwCheck Check(std::optional<uint64_t> block) {
  return validate::ScwCheck{.chain = "eip155:1",
                            .address = "0xAB16A96D359EC26A11E2C2B3D8F8B8942D5BFCDB",
                            .hash = std::string(32, '\x11'),
                            .signature = std::string(33, '\x22'),
                            .block_number = block};
}

// verifies: VALIDATION.md 5.9.3 (the validator constant and the ABI layout)
TEST(ScwVerifier, CallDataIsValidatorThenAbiEncodedArguments) {
  EXPECT_EQ(kErc6492ValidatorHex.size(), 2u * 1792);
  ScwVerifier verifier(ScwVerifierOptions{});
  auto data = verifier.CallData(Check(std::nullopt));
  ASSERT_TRUE(data.has_value());
  const std::string code = data->substr(0, 1792);
  const auto digest = crypto::Sha256(code);
  EXPECT_EQ(Hex(std::string_view(reinterpret_cast<const char*>(digest.data()), digest.size())),
            "ee4f10dc27735f5f8fd686ddf765fe4f124a45dd339581347f53a1b0c8dfe24c");
  const std::string args = data->substr(1792);
  ASSERT_EQ(args.size(), 4u * 32 + 64);  // 33 signature bytes padded to 64
  EXPECT_EQ(Hex(args.substr(0, 32)),
            "000000000000000000000000ab16a96d359ec26a11e2c2b3d8f8b8942d5bfcdb");
  EXPECT_EQ(args.substr(32, 32), std::string(32, '\x11'));
  EXPECT_EQ(Hex(args.substr(64, 32)), std::string(62, '0') + "60");
  EXPECT_EQ(Hex(args.substr(96, 32)), std::string(62, '0') + "21");
  EXPECT_EQ(args.substr(128, 33), std::string(33, '\x22'));
  EXPECT_EQ(args.substr(161), std::string(31, '\0'));

  auto bad = Check(std::nullopt);
  bad.address = "0x1234";
  EXPECT_FALSE(verifier.CallData(bad).has_value());
}

// verifies: VALIDATION.md 5.9.4 (key over chain, address as given, hash, signature, block)
TEST(ScwVerifier, CacheKeySeparatesEveryField) {
  const std::string base = ScwCacheKey(Check(7));
  EXPECT_EQ(base.size(), 32u);
  EXPECT_EQ(base, ScwCacheKey(Check(7)));
  EXPECT_NE(base, ScwCacheKey(Check(8)));
  EXPECT_NE(base, ScwCacheKey(Check(std::nullopt)));
  auto lower = Check(7);
  lower.address = "0xab16a96d359ec26a11e2c2b3d8f8b8942d5bfcdb";
  EXPECT_NE(base, ScwCacheKey(lower));  // the account id strings as given
  auto other_chain = Check(7);
  other_chain.chain = "eip155:10";
  EXPECT_NE(base, ScwCacheKey(other_chain));
  ScwVerifier verifier(ScwVerifierOptions{.max_cache_entries = 3});
  EXPECT_EQ(verifier.cache_size(), 0u);
}

}  // namespace
}  // namespace xb::api
