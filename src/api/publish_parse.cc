#include "api/publish_parse.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "base/thread_priority.h"
#include "base/varint.h"
#include "validate/canonical.h"
#include "validate/envelope.h"
#include "validate/wire_fields.h"

namespace xb::api {

namespace v1 = xmtp::backend::v1;

namespace {

constexpr uint32_t kEnvelopesField = 1;  // PublishRequest.envelopes

store::RetentionClass RetentionOf(const validate::ParsedEnvelope& e) {
  switch (e.kind) {
    case validate::TopicKind::kGroupMessage:
      return e.is_commit_or_proposal ? store::RetentionClass::kExempt
                                     : store::RetentionClass::kGroupMessage;
    case validate::TopicKind::kWelcome:
      return store::RetentionClass::kWelcome;
    case validate::TopicKind::kKeyPackage:
      return store::RetentionClass::kKeyPackage;
    case validate::TopicKind::kIdentityUpdate:
    case validate::TopicKind::kCommitLog:
      return store::RetentionClass::kExempt;  // OPS-001
  }
  return store::RetentionClass::kExempt;
}

// The fields the store keeps beside the payload, from the parsed envelope.
store::PublishItem ItemOf(const v1::ClientEnvelope& envelope, validate::ParsedEnvelope& parsed) {
  store::PublishItem item;
  item.topic = parsed.topic;
  item.message_hash = parsed.message_hash;
  item.is_commit_or_proposal = parsed.is_commit_or_proposal;
  item.retention = RetentionOf(parsed);
  // implements: PUSH-219 (decided once, at publish: a Welcome, a group message with should_push,
  // or a commit or proposal whatever should_push says; nothing else; never a rejection ground)
  if (envelope.has_group_message()) {
    item.push_eligible = envelope.group_message().should_push() || parsed.is_commit_or_proposal;
    const auto& hmac = envelope.group_message().sender_hmac();
    if (hmac.size() == 32) {
      store::Hash h;
      std::copy(hmac.begin(), hmac.end(), reinterpret_cast<char*>(h.data()));
      item.sender_hmac = h;
    }
  } else if (envelope.has_welcome_message()) {
    item.push_eligible = true;
  }
  item.payload = std::move(parsed.stored_bytes);
  return item;
}

// The state of one pass over the request's envelopes.
class Reader {
 public:
  Reader(const config::LimitsConfig& limits, ParsedPublish& out) : limits_(limits), out_(out) {}

  // Takes the envelope at `index` (its bytes); false once the answer is decided.
  bool Take(uint32_t index, std::string_view bytes) {
    v1::ClientEnvelope envelope;
    if (!envelope.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
      out_.rejected = InvalidArgument("request is malformed");  // DECISIONS.md
      return false;
    }
    out_.item_of.push_back(0);
    const size_t canonical = validate::CanonicalSize(envelope);
    // Step 1 (API.md 3.4), on what was read so far: the re-encoded request only grows.
    canonical_request_ += 1 + VarintSize(canonical) + canonical;
    if (canonical_request_ > limits_.max_request_bytes) {
      out_.too_large = "the publish request is too large";
      return false;
    }
    if (canonical > limits_.max_envelope_bytes) {
      return Fail(index, v1::PublishError::REASON_TOO_LARGE, "an envelope is too large");
    }
    auto parsed_or = validate::ParseEnvelope(envelope);
    if (!parsed_or.ok()) {
      return Fail(index, parsed_or.error().reason, parsed_or.error().message);
    }
    return Add(index, envelope, parsed_or.value());
  }

 private:
  bool Fail(uint32_t index, v1::PublishError::Reason reason, std::string message) {
    out_.failure = PendingFailure{index, reason, std::move(message)};
    return false;  // the lowest failing index: nothing later can answer instead
  }

  bool Add(uint32_t index, const v1::ClientEnvelope& envelope, validate::ParsedEnvelope& parsed) {
    const auto key = std::make_pair(parsed.topic, parsed.message_hash);
    if (auto it = item_by_key_.find(key); it != item_by_key_.end()) {
      out_.item_of[index] = it->second;  // API-222: an earlier index in the same request
      return true;
    }
    if (parsed.kind == validate::TopicKind::kIdentityUpdate) {
      // implements: API-233 — reported at the later index.
      auto [it, inserted] = identity_update_by_topic_.emplace(parsed.topic, parsed.message_hash);
      if (!inserted) {
        return Fail(index, v1::PublishError::REASON_INVALID_IDENTITY_UPDATE,
                    "two different identity updates for one inbox in one request");
      }
    }
    distinct_topics_.insert(parsed.topic);
    if (distinct_topics_.size() > limits_.max_publish_topics) {
      out_.too_large = "too many distinct topics in one publish";
      return false;
    }
    const size_t item = out_.items.size();
    if (parsed.kind == validate::TopicKind::kIdentityUpdate) {
      out_.identity_updates.push_back({.item = item, .update = *std::move(parsed.identity_update)});
    }
    if (parsed.key_package.has_value()) {
      out_.key_packages.push_back({.item = item, .parsed = *std::move(parsed.key_package)});
    }
    store::PublishItem stored = ItemOf(envelope, parsed);
    if (parsed.kind == validate::TopicKind::kIdentityUpdate) {
      stored.identity_validated_head = 0;  // set later, from the history snapshot
    }
    out_.item_of[index] = item;
    item_by_key_.emplace(key, item);
    out_.first_position.push_back(index);
    out_.items.push_back(std::move(stored));
    return true;
  }

  const config::LimitsConfig& limits_;
  ParsedPublish& out_;
  uint64_t canonical_request_ = 0;
  std::map<std::pair<std::string, store::Hash>, size_t> item_by_key_;
  std::map<std::string, store::Hash> identity_update_by_topic_;
  std::set<std::string> distinct_topics_;
};

// An envelope of the request: field 1, length-delimited. (A field 1 of another wire type is an
// unknown field to the parser, and ignored like one.)
bool IsEnvelope(const validate::WireField& field) {
  return field.number == kEnvelopesField && field.wire_type == 2;
}

}  // namespace

ParsedPublish ParsePublish(std::string_view request, const config::LimitsConfig& limits) {
  ParsedPublish out;
  // The positions first (no decoding, no allocation): a malformed request is refused whole, as
  // the full parse refused it, and every position is counted in a rejection.
  size_t positions = 0;
  validate::WireFieldReader counter(request);
  size_t walked = 0;
  while (auto field = counter.Next()) {
    positions += IsEnvelope(*field) ? 1 : 0;
    if (++walked % 4096 == 0) {
      OfferPoolThreadTurn();  // a large request is read on the CPU pool (base/thread_priority.h)
    }
  }
  if (!counter.ok() || positions > static_cast<size_t>(INT32_MAX)) {
    out.rejected = InvalidArgument("request is malformed");
    return out;
  }
  out.positions = static_cast<int>(positions);
  Reader reader(limits, out);
  validate::WireFieldReader fields(request);
  uint32_t index = 0;
  while (auto field = fields.Next()) {
    OfferPoolThreadTurn();
    if (IsEnvelope(*field) && !reader.Take(index++, field->bytes)) {
      break;
    }
  }
  return out;
}

}  // namespace xb::api
