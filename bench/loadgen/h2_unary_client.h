// The libnghttp2 transport of the unary modes (--transport h2, the default): each client its own
// plain-TCP HTTP/2 connection (h2c with prior knowledge, h2_connection.h) and one call in
// flight, the clients of one driver on one epoll thread. It exists because the grpc++ client
// (grpc_unary_client.h) took about 150 us of CPU per call, on the CPU the benchmarks share with
// the server and PostgreSQL, while pgbench's client takes a fraction of that: our Publish rate
// was held down by our own client.
//
// A call is what grpc++ sends: HEADERS (POST /SERVICE/METHOD, content-type application/grpc, te
// trailers, grpc-timeout 10S as grpc++ sends its 10 s deadline) and one DATA frame with the
// length-prefixed request and END_STREAM; the same request bytes as the grpc transport
// (UnaryRequests). The response is decoded from the wire bytes far enough to count what the
// grpc transport counts (envelope_metas, envelopes, results with a sequence id), without building
// protobuf messages. The status, as grpc++ would report it: grpc-status and grpc-message from the
// trailers (or a trailers-only response); RST_STREAM codes and HTTP statuses mapped as grpc++
// maps them; a lost or refused connection UNAVAILABLE; no response message with OK INTERNAL; no
// answer within 10 s DEADLINE_EXCEEDED (the stream is reset).
//
// Connections: made on the client's first call; after GOAWAY a new one for the next call; after a
// connection failed, the next attempt waits until 1 s after the previous one began (grpc++'s
// initial reconnect backoff, without its growth), so a dead server costs each client one
// UNAVAILABLE call a second rather than a busy loop. grpc++ fails calls at once while its channel
// is in TRANSIENT_FAILURE, so its error counts after a server death are higher; the codes agree.
//
// --rate R paces the clients (closed loop otherwise): client c makes its calls clients/R seconds
// apart on a fixed grid starting c/R seconds in, still one at a time, so the offered rate is R
// while the server keeps up; a client more than 1 s behind its grid resumes from now.
#pragma once

#include "unary_run.h"

namespace xb::bench {

// The h2 UnaryDriver (unary_run.h): resolves the target, connects the clients and runs them on
// the calling thread. An epoll or read-buffer failure aborts the process.
void DriveH2Clients(const UnaryRun& run, UnaryClients clients);

}  // namespace xb::bench
