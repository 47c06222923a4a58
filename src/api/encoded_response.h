// Unary read responses encoded by hand, shared by xmtp.backend.v1's QueryService and the V3 reads
// (api/v3/): the response memory a read reserves before it runs, the status of a response over
// the byte budget, and queueing an encoded message (issue 28: response memory is bounded and
// counted).
#pragma once

#include <cstdint>
#include <string>

#include "api/context.h"
#include "base/status.h"
#include "config/config.h"
#include "rpc/call.h"
#include "store/store.h"

namespace xb::api {

// The response memory a read of up to `rows` stored envelopes may hold while its response is
// built: the rows read and their encoding are both in memory for a moment (issue 28).
uint64_t WorstResponseMemory(const config::LimitsConfig& limits, uint64_t rows);

// API-283: OUT_OF_RANGE "response is larger than the response budget".
Status OverResponseBudget();

// Queues one encoded response message, sharing its bytes with the connection where the dialect
// allows (no copy on the I/O thread), and keeps that much of the call's reservation.
Status QueueEncoded(std::string message, rpc::Call& call);

// A read's response encoded on the DB pool thread that read its rows, so that the I/O thread only
// hands the bytes to the connection (a 24 MB encode once held a worker for milliseconds, in front
// of every other client of that worker).
struct EncodedRead {
  std::string message;
  bool over_budget = false;  // the response would pass limits.max_response_bytes
  bool invariant = false;    // a stored row cannot be encoded
};

// The end of a read: its store error's status (STORE.md 3.2), the status of an undecodable row or
// of a response over the budget, or the message queued.
Status FinishEncodedRead(const ApiContext& ctx, store::StoreResult<EncodedRead> result,
                         rpc::Call& call);

}  // namespace xb::api
