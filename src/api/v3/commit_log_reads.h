// xmtp.mls.api.v1.MlsApi/BatchQueryCommitLog (issue 33, docs/v3-api.md 3.8): up to 20 commit-log
// reads in one call, each an ascending page of `0x04 ‖ group_id` above its own cursor, read on the
// primary in one DB pool job.
#pragma once

#include "api/context.h"
#include "rpc/router.h"

namespace xb::api::v3 {

void AddBatchQueryCommitLog(rpc::Router& router, const ApiContext& context);

}  // namespace xb::api::v3
