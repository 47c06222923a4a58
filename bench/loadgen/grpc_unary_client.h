// The grpc++ transport of the unary modes (--transport grpc): generated async stubs, each client
// with its own channel (its own HTTP/2 connection) and one call outstanding, the clients of one
// driver polled from one completion queue. A thread per client with sync stubs cost about 200 us
// of CPU per call on the core the benchmarks share with PostgreSQL; this drive about 150 us,
// which h2_unary_client.h was written to cut.
#pragma once

#include "unary_run.h"

namespace xb::bench {

// The grpc UnaryDriver (unary_run.h): creates the clients' channels and runs them on the
// calling thread, every call with a 10 s deadline (kCallDeadline).
void DriveGrpcClients(const UnaryRun& run, UnaryClients clients);

}  // namespace xb::bench
