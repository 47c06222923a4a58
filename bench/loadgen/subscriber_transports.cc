// MakeSubscriberWorker: --transport grpc or h2 (the only file that knows both transports).
#include <memory>

#include "h2_stream_client.h"
#include "stream_client.h"
#include "subscriber_worker.h"

namespace xb::bench {

std::unique_ptr<SubscriberWorker> MakeSubscriberWorker(const Options& o, StreamObserver* observer) {
  if (o.transport == Transport::kGrpc) {
    return std::make_unique<GrpcStreamWorker>(o.target, observer);
  }
  return std::make_unique<H2StreamWorker>(o.target, observer);
}

}  // namespace xb::bench
