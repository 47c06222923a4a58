// The reads of xmtp.mls.api.v1.MlsApi (issue 33, docs/v3-api.md 3.4-3.6, 3.8): one store, two
// views. Each reads the rows an xmtp.backend.v1 Query or QueryNewest of the same topic reads, and
// writes them as V3 messages (api/v3/rows.h) on the DB pool thread that read them, as the v1 reads
// do, with V3's paging (2.2) and its short page under the byte budget (G2).
#pragma once

#include "api/context.h"
#include "rpc/router.h"

namespace xb::api::v3 {

// QueryGroupMessages, QueryWelcomeMessages, FetchKeyPackages, GetNewestGroupMessage and
// BatchQueryCommitLog.
void AddMlsReads(rpc::Router& router, const ApiContext& context);

}  // namespace xb::api::v3
