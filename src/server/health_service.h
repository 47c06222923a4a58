// grpc.health.v1.Health: Check, Watch and List on the gRPC port, without a credential (OPS-004).
#pragma once

#include "rpc/router.h"
#include "server/health.h"

namespace xb::server {

// Registers the three methods. `health` must outlive the router's use.
void AddHealthService(rpc::Router& router, HealthState& health);

}  // namespace xb::server
