// xmtp.backend.v1.PublishService/Publish (API 3.4, STORE.md 3.1): parse and bound every
// envelope, collapse in-request duplicates, look up stored duplicates, validate the rest, then one
// atomic, idempotent commit on the current store.
#pragma once

#include "api/context.h"
#include "rpc/router.h"

namespace xb::api {

void AddPublishService(rpc::Router& router, const ApiContext& context);

}  // namespace xb::api
