// bench/loadgen: what the unary modes (loadgen.cc) and the stream modes (stream_modes.cc) share:
// options, the envelopes the load sends, channels, and /proc readings. Single-threaded helpers
// unless a comment says otherwise.
#pragma once

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace xb::bench {

using Clock = std::chrono::steady_clock;

enum class Mode {
  kPublish,
  kQuery,
  kNewest,
  kVerify,
  kSubscribeLatency,  // live publish -> receive latency through subscriber streams
  kDeliver,           // catch-up delivery rate: streams from cursor 0 on pre-published topics
  kIdleStreams,       // server RSS per idle open stream
  kStreamVerify,      // one stream of each kind, bytes and ids checked (a gate)
  // The V3 API's twins of publish and query (issue 33), h2 transport only: MlsApi
  // SendGroupMessages with publish's request bytes (the same wire format), and
  // QueryGroupMessages of one group, ascending from id 0 with --limit (query's rows).
  kV3Send,
  kV3Query,
};

// Which RPC a subscriber stream uses.
enum class StreamKind { kStatic, kBidi };

// Which client library carries the unary modes' calls (grpc_unary_client.h or
// h2_unary_client.h) and the stream modes' subscriber streams (stream_client.h or
// h2_stream_client.h; the stream modes' publishers always use grpc++ sync stubs). verify always
// uses grpc++.
enum class Transport { kGrpc, kH2 };

struct Options {
  std::string target;
  Mode mode = Mode::kPublish;
  int clients = 1;
  int threads = 1;  // unary modes: threads driving the clients (completion queues or epoll loops)
  int envelopes = 1;
  int payload = 1024;
  int topics = 64;
  int limit = 10;
  double duration_s = 5;
  double warmup_s = 1;
  long server_pid = 0;
  // Stream modes.
  int subscribers = 1;            // streams opened by the subscriber side
  double rate = 0;                // publishes per second over all publishers; 0 = closed loop
  int streams_per_channel = 100;  // subscriber streams sharing one HTTP/2 connection
  StreamKind stream = StreamKind::kStatic;
  Transport transport = Transport::kH2;  // unary and stream modes
  double grace_s = 2;                    // after the publishers stop, wait this long for deliveries
  std::string publishes_file;   // subscribe-latency: per-publish first/last delivery (empty: none)
  std::string publish_log;      // subscribe-latency: every Publish call as it ends (empty: none)
  int prefill = 10000;          // deliver: envelopes published to each topic before streaming
  double settle_s = 2;          // idle-streams: wait before each RSS reading
  double open_timeout_s = 120;  // every stream must have started within this
};

inline constexpr size_t kGroupIdSize = 16;
inline constexpr auto kCallDeadline = std::chrono::seconds(10);

// The 16-byte group id of load topic `i`: "xbbench\0" + big-endian i (fixed across runs).
std::string GroupId(uint64_t i);

// A group id unique to run `run`: big-endian run + big-endian i (fresh, empty topics).
std::string RunGroupId(uint64_t run, uint64_t i);

// API topic of a group: kind byte 0x00 + group id.
std::string TopicOf(const std::string& group_id);
inline std::string GroupTopic(uint64_t i) { return TopicOf(GroupId(i)); }

// A serialized MLS PrivateMessage (RFC 9420 §6.3) of about `payload` bytes for `group_id`;
// distinct for every (run, client, counter): they are the first 24 bytes of the ciphertext. The
// last 8 bytes are filler the stream modes overwrite with a send time (StampSendTime).
std::string PrivateMessage(const std::string& group_id, uint64_t run, uint64_t client,
                           uint64_t counter, size_t payload);

// Writes `ns` big-endian into the last 8 bytes of `data` (an MLS message from PrivateMessage,
// at least 32 bytes), and reads it back.
void StampSendTime(std::string& data, uint64_t ns);
uint64_t ReadSendTime(const char* data, size_t size);

// Nanoseconds of the steady clock since its epoch: comparable across threads of one process.
inline uint64_t SteadyNs(Clock::time_point t) {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count());
}

// A channel of its own (its own TCP connection): a distinct channel argument keeps gRPC from
// sharing one subchannel among channels.
std::shared_ptr<grpc::Channel> MakeChannel(const std::string& target, int client);

// CPU seconds (utime + stime) of `pid` so far, or -1; and of this process (getrusage).
double ProcessCpuSeconds(long pid);
double SelfCpuSeconds();

// VmRSS of `pid` in KiB, or -1.
long ResidentKib(long pid);

uint64_t RunNonce();

// The element at fraction `p` of a sorted vector (0 when empty).
uint32_t Percentile(const std::vector<uint32_t>& sorted, double p);

Clock::duration Seconds(double s);

const char* ModeName(Mode m);
const char* TransportName(Transport t);

// The unary load modes publish, query and newest (unary_run.cc) over o.transport. Returns the
// process exit status: 0 (non-OK statuses are counted, not fatal).
int RunUnaryMode(const Options& o);

// The stream modes (stream_modes.cc). Returns the process exit status: 0 when the run completed,
// 1 when it could not (streams failed to open, a gate failed), 3 when the server answered the
// stream RPC UNIMPLEMENTED (it does not serve streams yet).
int RunStreamMode(const Options& o);

}  // namespace xb::bench
