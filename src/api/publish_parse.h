// Steps 1 and 2 of a publish (API.md 3.4 processing order): the request's envelopes, read from the
// request bytes one at a time, bounded, parsed and collapsed in index order. It stops at the first
// envelope that fails (issue 28: a bad request costs in proportion to the bytes read up to its
// first error; 13 million empty envelopes once took 2 GiB of message objects before the first was
// looked at). Envelopes past a failure cannot change the answer: every later failure has a higher
// index, and the request-level bounds (re-encoded size, distinct topics) are checked on what was
// read, as they grow.
//
// Pure: may run on the CPU pool. Never suspends.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/identity_admission.h"
#include "config/config.h"
#include "store/store.h"
#include "validate/key_package.h"
#include "xmtp/backend/v1/backend.pb.h"

namespace xb::api {

// The lowest-index failure found before the store is consulted.
struct PendingFailure {
  uint32_t index = 0;
  xmtp::backend::v1::PublishError::Reason reason =
      xmtp::backend::v1::PublishError::REASON_MALFORMED_PAYLOAD;
  std::string message;
};

// A key package of the request awaiting validation: its item and the parse to validate.
struct PendingKeyPackage {
  size_t item = 0;
  validate::ParsedKeyPackage parsed;
};

struct ParsedPublish {
  // Envelopes in the request (positions), counted from its top-level fields.
  int positions = 0;
  // A request-level answer, already decided: "request is malformed", or REASON_TOO_LARGE with no
  // index (`too_large`, for the rejection metrics).
  std::optional<Status> rejected;
  std::optional<std::string> too_large;
  std::vector<store::PublishItem> items;
  std::vector<uint32_t> first_position;  // per item
  std::vector<size_t> item_of;           // per position read
  std::optional<PendingFailure> failure;
  std::vector<PendingKeyPackage> key_packages;
  std::vector<PendingIdentityUpdate> identity_updates;
};

// Reads the encoded PublishRequest `request` under `limits`.
ParsedPublish ParsePublish(std::string_view request, const config::LimitsConfig& limits);

}  // namespace xb::api
