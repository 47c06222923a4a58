// RFC 9420 Proposal (§12.1) and Commit (§12.4) bodies, read in full as the reference parser reads
// them inside a PublicMessage (VALIDATION.md 2.4). Shape only: nothing is validated or applied.
#pragma once

#include "base/status.h"
#include "validate/tls_reader.h"

namespace xb::validate {

// Reads one Proposal: uint16 proposal_type, then the body for that type (VALIDATION.md 2.4
// table; unknown types, GREASE included, carry an opaque payload<V>). Fails on truncation, a bad
// vector prefix, or a body that does not parse (an unknown cipher suite in ReInit, a PSK type
// other than external/resumption, a resumption usage other than 1-3, a bad nested KeyPackage or
// LeafNode or extension list).
Status ReadProposal(TlsReader& reader);

// Reads one Commit: ProposalOrRef proposals<V> (uint8 1 → Proposal, 2 → opaque reference<V>),
// then optional<UpdatePath> (uint8 0 absent / 1 present).
Status ReadCommit(TlsReader& reader);

}  // namespace xb::validate
