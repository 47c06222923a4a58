// xmtp.backend.v1.NotificationService (spec/PUSH.md sections 2 and 4): Register, Unregister and
// UpdateSubscriptions on the current (primary) store (OPS-009), after request authentication.
// The admission table of PUSH.md 4.1 runs in its order; the first row that holds decides the
// status and nothing is changed. Status texts are fixed strings without request data (PUSH-254).
#pragma once

#include "api/context.h"
#include "rpc/router.h"

namespace xb::api {

void AddNotificationService(rpc::Router& router, const ApiContext& context);

}  // namespace xb::api
