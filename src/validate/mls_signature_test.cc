#include "validate/mls_signature.h"

#include <gtest/gtest.h>

#include "validate/test_bytes.h"
#include "validate/validation_vectors_test_data.h"

namespace xb::validate {
namespace {

using testing::Unhex;

// The RFC 9420 interop vectors (mlswg/mls-implementations test-vectors/crypto-basics.json,
// "sign_with_label"): an independent implementation's SignWithLabel output. `pub` there carries
// its TLS length prefix; it is stripped here. Label "SignWithLabel" for every suite.
struct InteropVector {
  uint16_t suite;
  const char* pub;  // without the vl prefix
  const char* content;
  const char* signature;
};

const InteropVector kInterop[] = {
    {1, "fa69d57b300537d17953e7292ceff3dd3a6b0284d1e5aa5bc35db01dd9ce78a4",
     "ac833a785a00dc0a8e4d777d7b37ad403a33916334306730d4ce2e359e49169c",
     "8227e8cb94513227ebca109f6846c1c2d2952e11871e46bb571a9b0173e9cca9a1937e6855183e40596691679"
     "08a36614bad713f914766f5d7ea8393c995d009"},
    {2,
     "04c34a23c7884124df356b402f32d1ae210e0ca2822a5690fb9b29ec25672d4255f4cb3b9ac86f387c8f5b9f85"
     "94305856bbc4354e28e930ad38163f0adb82af7d",
     "ad516cbb32ac5540b7a72ebb77767bb0802adf0825aec91b895e42f22dcfbe5a",
     "3044022036fec778d5fdee4b2807152ad2aaad6cf3c9f37e61e08c2739bb13bacd760ad1022023ab960430c9ef"
     "89a90de9d7449018c7c61269f538cdeb96a5d89fe96416e08d"},
    {3, "0060dd83fadcb2055773a74f4f1f0cc6ebffc47d5eadcb036a960495169da50f",
     "e310c8359a2858fb77e91ddab46e94d5dac71914a631c0f80a3efa495033d0f9",
     "27c24992dd39e24b7bbca1164b430f67d0508a96b0c59e153b27d68313d31b57226a6c939f2c8e80c58947d926"
     "167498514b4ba7ba6c8441418cef32b360700d"},
    {5,
     "0400ad7eed2f369823787e69ab2ed85824b9090fa5aa5fb4a959a791c9b04f8f50922533cdfeed65421d05b66b"
     "63b33a610dc6a919116027ca9cbee3d135577c116dbf010b6ceea9e5173e28c5fa97f86d1abe57ab1f89ee9f06"
     "ab5ac081425a4674cbf3748886d38f948e4ca396f472582b706a200b35a610240a61017ba07a31e6fafb3f",
     "691584ed462cc9086b3cb41afadfedbd93120201ae07b1efbab4a4045e3e8f53f097ebbd9813b7b1927bcc2892"
     "18a22950b9709e28350afeae02eab55364df47",
     "308188024200e6f475132c74781a14e9a18c7c73394837cb9aa2b1fa202f39a4d27b4634b70476d2a49468d58b"
     "068701c5032fd03d7fb5009ac046f3dfaea0b1cd138c3095081f0242012a4990d33833c9806f7b44b6bbf10a52"
     "5aff4fe1f100ba28076ea61bd0dc47ae67711a752378bf9d221422657c7dc915c2398e4b5aef224df9fa552e05"
     "d1aafe83"},
    {7,
     "0492e83466eb23d93cb6d40bd71dc9cfe4fee84a008e60bd538bc2bcb5f03985e69518ae7cea61a335e07b7b4a"
     "d55c7887a42088b74589e4a70feb846ab1ea7f6236946061de60e151427916865c343d947770640af1b67c54b0"
     "ab44386584d431",
     "3a11d18a7ec7a2589f811fc9e9b93db4f2ce6dbb7e166ab787f562b5049c659a5ba5f3566d543f92eb4ac7b10c"
     "4fbe67",
     "3065023003b31d5c742965c4f1e6bc2f763dc20ef3c5050930cde8f64b5cfcda78a99e772565a7b03266ade07e"
     "591a687469c15e0231009e8ec391232200c556d12961b397eae0d822858a40feed450bd5dd99d9020cfe8b60e1"
     "bb9613ab420423d87c1e8cb584"},
};

bool IsSha256EcdsaOnLargerCurve(const InteropVector& v) { return v.suite == 5 || v.suite == 7; }

TEST(MlsVerifyWithLabel, AcceptsRfc9420InteropVectors) {
  for (const InteropVector& v : kInterop) {
    if (IsSha256EcdsaOnLargerCurve(v)) {
      continue;
    }
    EXPECT_TRUE(MlsVerifyWithLabel(v.suite, Unhex(v.pub), "SignWithLabel", Unhex(v.content),
                                   Unhex(v.signature)))
        << "suite " << v.suite;
  }
}

TEST(MlsVerifyWithLabel, RejectsInteropVectorsWithOneByteChanged) {
  for (const InteropVector& v : kInterop) {
    const std::string pub = Unhex(v.pub);
    const std::string content = Unhex(v.content);
    const std::string sig = Unhex(v.signature);
    std::string bad_content = content;
    bad_content[3] = static_cast<char>(bad_content[3] ^ 0x01);
    EXPECT_FALSE(MlsVerifyWithLabel(v.suite, pub, "SignWithLabel", bad_content, sig)) << v.suite;
    std::string bad_sig = sig;
    bad_sig[sig.size() - 5] = static_cast<char>(bad_sig[sig.size() - 5] ^ 0x01);
    EXPECT_FALSE(MlsVerifyWithLabel(v.suite, pub, "SignWithLabel", content, bad_sig)) << v.suite;
    // The label is part of what is signed.
    EXPECT_FALSE(MlsVerifyWithLabel(v.suite, pub, "SignWithLabeL", content, sig)) << v.suite;
    // A raw content signature (no SignContent wrapping) is not a labelled signature.
    EXPECT_FALSE(MlsVerifyWithLabel(v.suite, pub, "", content, sig)) << v.suite;
  }
}

// The interop file's suite 5 (P-521) and suite 7 (P-384) signatures were made over SHA-256, not
// the SHA-512 / SHA-384 RFC 9420 §5.1.1 names for those suites (python3-cryptography verifies
// them with ECDSA(SHA256()) and with nothing else). This backend follows the RFC, so it refuses
// them. It cannot matter at admission: those suites' keys are never 32 bytes (VALIDATION.md 4.4).
TEST(MlsVerifyWithLabel, InteropP521AndP384VectorsHashedWithSha256AreRefused) {
  for (const InteropVector& v : kInterop) {
    if (IsSha256EcdsaOnLargerCurve(v)) {
      EXPECT_FALSE(MlsVerifyWithLabel(v.suite, Unhex(v.pub), "SignWithLabel", Unhex(v.content),
                                      Unhex(v.signature)))
          << v.suite;
    }
  }
}

// Made with python3-cryptography 38: ECDSA over SignContent("LeafNodeTBS", content) with SHA-384
// (P-384, suite 7) and SHA-512 (P-521, suite 5), the RFC 9420 §5.1.1 pairing.
TEST(MlsVerifyWithLabel, AcceptsP384AndP521SignaturesFromIndependentTool) {
  const std::string content = "xmtp-backend labelled content";
  const std::string p384 = Unhex(
      "04ec3a4e415b4e19a4568618029f427fa5da9a8bc4ae92e02e06aae5286b300c64def8f0ea9055866064a2545154"
      "80bc138015d9b72d7d57244ea8ef9ac0c621896708a59367f9dfb9f54ca84b3f1c9db1288b231c3ae0d4fe7344fd"
      "2533264720");
  const std::string p384_sig = Unhex(
      "3064023055cda610df6e62ca974096c60977eb38f3938757ab755dd62e630c22721a56327a976371c97c909336"
      "2d144b83ec307102300678f656b9d6f73db485ea74ed45ef594ed7456d485d5f3c8c9861996d411f1cbab69c10"
      "10581cf7f4364b983d65130f");
  const std::string p521 = Unhex(
      "0401894550d0785932e00eaa23b694f213f8c3121f86dc97a04e5a7167db4e5bcd371123d46e45db6b5d5370a7f2"
      "0fb633155d38ffa16d2bd761dcac474b9a2f5023a400493101c962cd4d2fddf782285e64584139c2f91b47f87ff8"
      "2354d6630f746a28a0db25741b5b34a828008b22acc23f924faafbd4d33f81ea66956dfeaa2bfdfcf5");
  const std::string p521_sig = Unhex(
      "308188024200e83c3565a5c0fcf4c97cf5f3ab953586b5f2f2c86d287274256ca4573ff6e0da33c7ff7c20499c"
      "76124a5632da2b789f486e0a156444c2941e46ec2a72b78a0206024201d6dc2ef0f86f6e9a950386ed2f4c4cbc"
      "153ec34871e285d41fc70facd5dcafa52a508a279ed1867ecdcb7bc3978d6ead0d6e881c3775321fd257ee70ef"
      "7d1ca081");
  EXPECT_TRUE(MlsVerifyWithLabel(7, p384, "LeafNodeTBS", content, p384_sig));
  EXPECT_TRUE(MlsVerifyWithLabel(5, p521, "LeafNodeTBS", content, p521_sig));
  EXPECT_FALSE(MlsVerifyWithLabel(7, p384, "KeyPackageTBS", content, p384_sig));
  EXPECT_FALSE(MlsVerifyWithLabel(5, p521, "LeafNodeTBS", content + ".", p521_sig));
  EXPECT_FALSE(MlsVerifyWithLabel(5, p384, "LeafNodeTBS", content, p384_sig));
}

TEST(MlsVerifyWithLabel, RejectsASuiteWithAnotherScheme) {
  const InteropVector& ed = kInterop[0];
  // The Ed25519 vector named as a P-256 suite, and the P-256 vector named as an Ed25519 suite.
  EXPECT_FALSE(MlsVerifyWithLabel(2, Unhex(ed.pub), "SignWithLabel", Unhex(ed.content),
                                  Unhex(ed.signature)));
  const InteropVector& p256 = kInterop[1];
  EXPECT_FALSE(MlsVerifyWithLabel(1, Unhex(p256.pub), "SignWithLabel", Unhex(p256.content),
                                  Unhex(p256.signature)));
}

TEST(MlsVerifyWithLabel, Ed448SuitesAndUnknownSuitesNeverVerify) {
  const InteropVector& ed = kInterop[0];
  for (uint16_t suite : {uint16_t{4}, uint16_t{6}, uint16_t{0}, uint16_t{9}, uint16_t{0xffff}}) {
    EXPECT_FALSE(MlsVerifyWithLabel(suite, Unhex(ed.pub), "SignWithLabel", Unhex(ed.content),
                                    Unhex(ed.signature)))
        << suite;
  }
}

TEST(MlsSignContent, MatchesTheMinimalKeyPackageVector) {
  // VALIDATION.md 8.2: SignContent of the minimal package's LeafNodeTBS (165 bytes, so a 2-byte
  // length prefix 40a5).
  const std::string tbs = Unhex(vectors::kKeyPackageMinimalLeafNodeTbs);
  ASSERT_EQ(tbs.size(), 165u);
  EXPECT_EQ(testing::Hex(MlsSignContent("LeafNodeTBS", tbs)),
            "134d4c5320312e30204c6561664e6f6465544253"
            "40a5" +
                testing::Hex(tbs));
}

TEST(MlsSignContent, UsesTheShortestPrefixForEachLength) {
  EXPECT_EQ(testing::Hex(MlsSignContent("", "")), "084d4c5320312e302000");
  const std::string c63(63, 'x');
  EXPECT_EQ(MlsSignContent("", c63).substr(9, 1), std::string(1, '\x3f'));
  const std::string c64(64, 'x');
  EXPECT_EQ(testing::Hex(MlsSignContent("", c64).substr(9, 2)), "4040");
  const std::string c16384(16384, 'x');
  EXPECT_EQ(testing::Hex(MlsSignContent("", c16384).substr(9, 4)), "80004000");
}

}  // namespace
}  // namespace xb::validate
