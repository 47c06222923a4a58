// libFuzzer target for identity-update admission on untrusted bytes (VALIDATION.md 5): the
// IdentityUpdate protobuf, DecodeIdentityUpdate (5.2), the signature text (5.4) and the whole
// validation (PrepareIdentityUpdate + FinishIdentityUpdate: every signature kind's parser and
// verifier, replay keys and the state machine), optionally on top of one stored update.
//
// Input layout: byte 0 bit 0 set = one stored update first: bytes 1-2 give its length L
// (big-endian), the next L bytes are its IdentityUpdate protobuf; the rest is the new update's
// IdentityUpdate protobuf. Smart-contract-wallet verdicts are a function of the hash (valid iff
// its first byte is odd). Seeds (bench/fuzz.sh) are the VALIDATION.md 8.2 identity log, whose
// signatures verify, so mutations reach the state machine.
//
// Invariants checked:
//  - no crash, no sanitizer report, whatever the bytes;
//  - decoding keeps one action per protobuf action, and fails only as kMalformed;
//  - the signature text is a function of the update, framed as 5.4 says;
//  - every failure carries a non-empty printable message; an accepted update's state has the
//    update's inbox id, and its projection changes are Ethereum or passkey rows.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_input.h"
#include "validate/identity_validator.h"
#include "xmtp/backend/v1/backend.pb.h"

namespace {

using xb::validate::IdentityError;
using xb::validate::IdentityFailure;

bool Printable(std::string_view text) {
  if (text.empty()) {
    return false;
  }
  for (char c : text) {
    if (c < 0x20 || c > 0x7e) {
      return false;
    }
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  xb::fuzz::Input in(data, size);
  const uint8_t mode = in.Byte();
  std::vector<std::string> history;
  std::string_view rest = in.rest();
  if (mode & 1) {
    const size_t high = in.Byte();
    const size_t len = (high << 8) | in.Byte();
    const std::string_view stored = in.rest().substr(0, len);
    rest = in.rest().substr(stored.size());
    xmtp::backend::v1::ClientEnvelope envelope;
    if (!envelope.mutable_identity_update()->ParseFromArray(stored.data(),
                                                            static_cast<int>(stored.size()))) {
      return 0;
    }
    history.push_back(envelope.SerializeAsString());
  }
  xmtp::identity::associations::IdentityUpdate update;
  if (!update.ParseFromArray(rest.data(), static_cast<int>(rest.size()))) {
    return 0;
  }

  auto decoded = xb::validate::DecodeIdentityUpdate(update);
  if (auto* e = std::get_if<IdentityError>(&decoded)) {
    XB_FUZZ_CHECK(e->kind == IdentityFailure::kMalformed);
    XB_FUZZ_CHECK(Printable(e->message));
  } else {
    const auto& d = std::get<xb::validate::DecodedIdentityUpdate>(decoded);
    XB_FUZZ_CHECK(d.actions.size() == static_cast<size_t>(update.actions_size()));
    const std::string text = xb::validate::SignatureText(d);
    XB_FUZZ_CHECK(text == xb::validate::SignatureText(d));
    XB_FUZZ_CHECK(text.starts_with("XMTP : Authenticate to inbox\n\nInbox ID: "));
    XB_FUZZ_CHECK(text.ends_with("\n\nFor more info: https://xmtp.org/signatures"));
  }

  const xb::validate::ScwVerdictFn scw =
      [](const xb::validate::ScwCheck& c) -> std::variant<bool, IdentityError> {
    return !c.hash.empty() && (static_cast<uint8_t>(c.hash[0]) & 1) != 0;
  };
  auto prepared = xb::validate::PrepareIdentityUpdate(history, update, {});
  if (auto* e = std::get_if<IdentityError>(&prepared)) {
    XB_FUZZ_CHECK(Printable(e->message));
    return 0;
  }
  auto outcome = xb::validate::FinishIdentityUpdate(
      std::get<xb::validate::PreparedIdentityUpdate>(prepared), scw);
  if (auto* e = std::get_if<IdentityError>(&outcome)) {
    XB_FUZZ_CHECK(Printable(e->message));
    XB_FUZZ_CHECK(e->kind != IdentityFailure::kInternal &&
                  e->kind != IdentityFailure::kUnavailable);
    return 0;
  }
  const auto& ok = std::get<xb::validate::IdentityOutcome>(outcome);
  XB_FUZZ_CHECK(ok.state.inbox_id == update.inbox_id());
  for (const auto& change : ok.changes) {
    XB_FUZZ_CHECK(change.identifier_kind == xb::validate::kProjectedEthereum ||
                  change.identifier_kind == xb::validate::kProjectedPasskey);
  }
  return 0;
}
