// Handlers compiled only into the test build of the binary (xmtp-backend-testing, XB_TEST_HOOKS),
// never into the shipped xmtp-backend: a unary call that takes as long as the test asks, for the
// drain tests (OPS-008).
#pragma once

#include "rpc/router.h"

namespace xb::server {

// /xb.test.v1.TestService/Sleep: request grpc.health.v1.HealthCheckRequest whose `service` is the
// sleep in milliseconds; answers HealthCheckResponse{SERVING} after it.
void AddTestHooks(rpc::Router& router);

}  // namespace xb::server
