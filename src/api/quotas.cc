#include "api/quotas.h"

#include <algorithm>
#include <utility>

#include "api/status_detail.h"
#include "google/rpc/error_details.pb.h"

namespace xb::api {

namespace {

constexpr char kRetryInfoType[] = "type.googleapis.com/google.rpc.RetryInfo";

std::unique_ptr<QuotaBuckets> BucketsFor(const config::QuotaLimit& limit, size_t max_buckets) {
  if (limit.per_second <= 0) {
    return nullptr;
  }
  return std::make_unique<QuotaBuckets>(
      QuotaRate{.per_second = limit.per_second, .burst = static_cast<double>(limit.burst)},
      max_buckets);
}

bool AnyOn(const config::QuotasConfig& c) {
  for (const config::CallerQuotas* q : {&c.principal, &c.address}) {
    if (q->publish.per_second > 0 || q->stream_opens.per_second > 0) {
      return true;
    }
  }
  return false;
}

// "250 ms", "3.5 s": the wait in the message, rounded up to the millisecond.
std::string Wait(std::chrono::nanoseconds delay) {
  const auto ms = std::chrono::ceil<std::chrono::milliseconds>(delay).count();
  if (ms < 1000) {
    return std::to_string(std::max<int64_t>(ms, 1)) + " ms";
  }
  std::string text = std::to_string(ms / 1000);
  if (const auto rest = ms % 1000; rest != 0) {
    std::string fraction = std::to_string(1000 + rest).substr(1);
    fraction.erase(fraction.find_last_not_of('0') + 1);
    text += "." + fraction;
  }
  return text + " s";
}

}  // namespace

Quotas::Quotas(const config::QuotasConfig& config, size_t max_buckets)
    : enabled_(AnyOn(config)),
      publish_{BucketsFor(config.principal.publish, max_buckets),
               BucketsFor(config.address.publish, max_buckets)},
      stream_opens_{BucketsFor(config.principal.stream_opens, max_buckets),
                    BucketsFor(config.address.stream_opens, max_buckets)} {}

QuotaCaller Quotas::CallerOf(const rpc::Call& call) const {
  QuotaCaller caller;
  if (!enabled_) {
    return caller;
  }
  // A key name and a subject are different namespaces: a subject equal to a key's name is
  // another principal.
  const rpc::Principal& principal = call.principal;
  if (!principal.api_key_name.empty()) {
    caller.principal = "k";
    caller.principal += principal.api_key_name;
  } else if (!principal.jwt_subject.empty()) {
    caller.principal = "s";
    caller.principal += principal.jwt_subject;
  }
  if (call.peer().known) {
    caller.address.assign(reinterpret_cast<const char*>(call.peer().bytes.data()),
                          call.peer().bytes.size());
  }
  return caller;
}

Status Quotas::ChargePublish(const QuotaCaller& caller, uint32_t envelopes, Clock::time_point now) {
  // One envelope is one token: a request may carry many, and they are what costs the server
  // (validation, storage, fan-out). A request of none still costs one.
  return Charge(publish_, caller, std::max<uint32_t>(envelopes, 1), now, "publish");
}

Status Quotas::ChargeStreamOpen(const QuotaCaller& caller, Clock::time_point now) {
  return Charge(stream_opens_, caller, 1, now, "stream open");
}

Status Quotas::Charge(Pair& pair, const QuotaCaller& caller, double tokens, Clock::time_point now,
                      std::string_view what) {
  const bool by_principal = pair.principal != nullptr && !caller.principal.empty();
  if (by_principal) {
    auto taken = pair.principal->Take(caller.principal, tokens, now);
    if (!taken.ok()) {
      return QuotaExhausted(std::string(what) +
                                " quota of this credential is exhausted; retry in " +
                                Wait(taken.error()),
                            taken.error());
    }
  }
  if (pair.address != nullptr && !caller.address.empty()) {
    auto taken = pair.address->Take(caller.address, tokens, now);
    if (!taken.ok()) {
      if (by_principal) {
        pair.principal->Refund(caller.principal, tokens);  // nothing taken from any bucket
      }
      return QuotaExhausted(std::string(what) +
                                " quota of this client address is exhausted; retry in " +
                                Wait(taken.error()),
                            taken.error());
    }
  }
  return Status::Ok();
}

Status ChargeStreamOpen(Quotas* quotas, const rpc::Call& call) {
  if (quotas == nullptr) {
    return Status::Ok();
  }
  return quotas->ChargeStreamOpen(quotas->CallerOf(call));
}

Status QuotaExhausted(std::string message, std::chrono::nanoseconds delay) {
  google::rpc::RetryInfo retry;
  const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(delay);
  retry.mutable_retry_delay()->set_seconds(seconds.count());
  retry.mutable_retry_delay()->set_nanos(static_cast<int32_t>((delay - seconds).count()));
  return StatusWithDetail(StatusCode::kResourceExhausted, std::move(message), kRetryInfoType,
                          retry.SerializeAsString());
}

std::optional<std::chrono::nanoseconds> RetryDelayOf(const Status& status) {
  const std::optional<std::string> value = DetailOf(status, kRetryInfoType);
  google::rpc::RetryInfo retry;
  if (!value || !retry.ParseFromString(*value)) {
    return std::nullopt;
  }
  return std::chrono::seconds(retry.retry_delay().seconds()) +
         std::chrono::nanoseconds(retry.retry_delay().nanos());
}

}  // namespace xb::api
