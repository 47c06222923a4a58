#include "api/encoded_response.h"

#include <algorithm>
#include <memory>
#include <utility>

#include "api/envelope_codec.h"
#include "api/store_status.h"

namespace xb::api {

uint64_t WorstResponseMemory(const config::LimitsConfig& limits, uint64_t rows) {
  const uint64_t row = limits.max_envelope_bytes + kMaxServerEnvelopeHead + 16;
  return 2 * std::min<uint64_t>(limits.max_response_bytes + row, rows * row);
}

Status OverResponseBudget() { return OutOfRange("response is larger than the response budget"); }

Status QueueEncoded(std::string message, rpc::Call& call) {
  const size_t size = message.size();
  Status queued;
  if (call.can_share()) {
    auto keep = std::make_shared<const std::string>(std::move(message));
    queued = call.BeginMessage(size);
    if (queued.ok()) {
      call.AppendShared(*keep, keep);
      call.EndMessage();
    }
  } else {
    queued = call.WriteNow(message);
  }
  call.TrimReservation(size + rpc::kFrameHeaderBytes);
  return queued;
}

Status FinishEncodedRead(const ApiContext& ctx, store::StoreResult<EncodedRead> result,
                         rpc::Call& call) {
  if (!result.ok()) {
    return StoreErrorStatus(result.error(), ctx);
  }
  EncodedRead& encoded = result.value();
  if (encoded.invariant) {
    return UndecodableEnvelopeStatus(ctx);
  }
  if (encoded.over_budget) {
    return OverResponseBudget();
  }
  return QueueEncoded(std::move(encoded.message), call);
}

}  // namespace xb::api
