// RFC 9420 code points the backend's MLS parser reads (API.md 2.16, VALIDATION.md 2 and 4), and
// the one switch for the draft MLS extensions whose support is an open item (VALIDATION.md 10.4).
#pragma once

#include <cstdint>

namespace xb::validate {

inline constexpr uint16_t kMlsVersion10 = 1;  // ProtocolVersion mls10

enum class WireFormat : uint16_t {
  kPublicMessage = 1,
  kPrivateMessage = 2,
  kWelcome = 3,
  kGroupInfo = 4,
  kKeyPackage = 5,
};

enum class ContentType : uint8_t {
  kApplication = 1,
  kProposal = 2,
  kCommit = 3,
};

enum class SenderType : uint8_t {
  kMember = 1,
  kExternal = 2,
  kNewMemberProposal = 3,
  kNewMemberCommit = 4,
};

enum class LeafNodeSource : uint8_t {
  kKeyPackage = 1,
  kUpdate = 2,
  kCommit = 3,
};

// ExtensionType values whose extension_data the parser reads as a structure (VALIDATION.md 4.1).
// Every other value is kept as opaque bytes.
namespace extension_type {
inline constexpr uint16_t kApplicationId = 0x0001;
inline constexpr uint16_t kRatchetTree = 0x0002;
inline constexpr uint16_t kRequiredCapabilities = 0x0003;
inline constexpr uint16_t kExternalPub = 0x0004;
inline constexpr uint16_t kExternalSenders = 0x0005;
inline constexpr uint16_t kAppDataDictionary = 0x0006;  // draft, see kParseDraftMlsExtensions
inline constexpr uint16_t kLastResort = 0x000a;
inline constexpr uint16_t kImmutableMetadata = 0xf000;
}  // namespace extension_type

namespace proposal_type {
inline constexpr uint16_t kAdd = 1;
inline constexpr uint16_t kUpdate = 2;
inline constexpr uint16_t kRemove = 3;
inline constexpr uint16_t kPsk = 4;
inline constexpr uint16_t kReinit = 5;
inline constexpr uint16_t kExternalInit = 6;
inline constexpr uint16_t kGroupContextExtensions = 7;
inline constexpr uint16_t kAppDataUpdate = 8;  // draft, see kParseDraftMlsExtensions
inline constexpr uint16_t kAppEphemeral = 9;   // draft, see kParseDraftMlsExtensions
inline constexpr uint16_t kSelfRemove = 10;
}  // namespace proposal_type

inline constexpr uint16_t kCredentialTypeBasic = 1;

// VALIDATION.md 10.4 (open): whether the reference's MLS library was built with the draft
// extensions (extension 6 app_data_dictionary, proposals 8 app_data_update and 9 app_ephemeral).
// XMTP clients list extension 6 and proposal 8 in their key-package capabilities (VALIDATION.md
// 4.7), which they would not do without the feature, so the parser reads them as structures.
// With false they are read like any unknown type (opaque extension data, custom proposal).
inline constexpr bool kParseDraftMlsExtensions = true;

// VALIDATION.md 4.4: the suites a KeyPackage (or ReInit proposal) may name; any other value
// fails the parse.
constexpr bool IsKnownCipherSuite(uint16_t suite) {
  return (suite >= 0x0001 && suite <= 0x0007) || suite == 0x004d;
}

}  // namespace xb::validate
