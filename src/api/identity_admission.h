// Identity-update admission inside Publish (VALIDATION.md 5.10, STORE.md 3.1 steps 3-4):
// stored duplicates skip validation; every other update is validated against its inbox's whole
// history read in one snapshot, with the smart-contract-wallet lookups it needs, and its item gets
// either a pending failure or the validated head and projection changes the store commits.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <cstdint>
#include <vector>

#include "api/context.h"
#include "identity/associations/association.pb.h"
#include "store/store.h"
#include "telemetry/trace_context.h"
#include "validate/identity_update.h"

namespace xb::api {

// An identity update of the request awaiting validation: its item and the decoded protobuf.
struct PendingIdentityUpdate {
  size_t item = 0;
  xmtp::identity::associations::IdentityUpdate update;
};

// For each pending update that is not a stored duplicate: reads History (DB pool), validates on
// the CPU pool (never on this I/O thread), resolves ERC-6492 verdicts through ctx.scw (suspending,
// never blocking), then sets items[item].identity_validated_head (API-232) and identity_changes
// (the projection diff), or items[item].pending_failure: INVALID_ARGUMENT with the PublishError of
// VALIDATION.md 5.11 at the item's first position, or UNAVAILABLE / INTERNAL. Returns a non-OK
// status only when the store read fails or the CPU pool refuses the work. Suspends.
// Each chain verification gets a scw.verify span under `parent` (OPS-019).
boost::asio::awaitable<Status> AdmitIdentityUpdates(const ApiContext& ctx,
                                                    std::vector<store::PublishItem>& items,
                                                    const std::vector<uint32_t>& first_position,
                                                    std::vector<PendingIdentityUpdate> pending,
                                                    telemetry::SpanContext parent);

// The publish status of an identity failure at request index `index` (VALIDATION.md 5.11).
Status IdentityFailureStatus(const validate::IdentityError& error, uint32_t index);

}  // namespace xb::api
