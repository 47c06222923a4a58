// Handlers compiled only into the test build of the binary (xmtp-backend-testing, XB_TEST_HOOKS),
// never into the shipped xmtp-backend: a unary call that takes as long as the test asks, for the
// drain tests (OPS-008).
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <functional>
#include <map>
#include <string>

#include "rpc/router.h"

namespace xb::server {

// /xb.test.v1.TestService/Sleep: request grpc.health.v1.HealthCheckRequest whose `service` is the
// sleep in milliseconds; answers HealthCheckResponse{SERVING} after it.
//
// Identity commit gate (API-232 concurrency tests): /xb.test.v1.TestService/HoldIdentityCommits
// arms it; from then on every publish carrying an identity update parks after validation, before
// its commit. /ParkedIdentityCommits answers SERVING once at least `service` (decimal) publishes
// are parked, NOT_SERVING before. /ReleaseIdentityCommits disarms and releases them all. A parked
// publish gives up waiting after 30 s.
void AddTestHooks(rpc::Router& router);

// XB_TEST_PROVIDER_PINS: comma-separated `host=127.0.0.1:port` entries (push tests: APNs, FCM and
// OAuth hosts served by loopback fakes). Empty when unset; an unusable entry is skipped with a
// line on stderr.
std::map<std::string, boost::asio::ip::tcp::endpoint, std::less<>> ProviderPinsFromEnvironment();

// The gate itself, awaited by Publish (RunOptions::before_identity_commit). Suspends.
boost::asio::awaitable<void> IdentityCommitGate();

}  // namespace xb::server
