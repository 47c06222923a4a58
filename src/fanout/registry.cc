#include "fanout/registry.h"

#include <algorithm>
#include <boost/asio/post.hpp>
#include <functional>
#include <iterator>
#include <utility>

namespace xb::fanout {

bool Registry::Open(SessionState& session) {
  std::lock_guard lock(mu_);
  if (!ready_ || shut_down_) {
    return false;
  }
  session.open = true;
  sessions_.push_back(&session);
  return true;
}

void Registry::RemoveLocked(const RegistrationPtr& reg) {
  auto it = by_topic_.find(reg->topic);
  if (it == by_topic_.end()) {
    return;
  }
  auto& regs = it->second;
  auto pos = std::find(regs.begin(), regs.end(), reg);
  if (pos == regs.end()) {
    return;
  }
  *pos = std::move(regs.back());
  regs.pop_back();
  if (regs.empty()) {
    by_topic_.erase(it);
  }
  metrics_.stream().topics_registered.Dec();
  registered_.fetch_sub(1, std::memory_order_relaxed);
}

void Registry::Close(SessionState& session) {
  std::lock_guard lock(mu_);
  for (const auto& reg : session.registrations) {
    RemoveLocked(reg);
  }
  session.registrations.clear();
  session.inbox.clear();
  if (session.open) {
    session.open = false;
    auto pos = std::find(sessions_.begin(), sessions_.end(), &session);
    if (pos != sessions_.end()) {
      *pos = sessions_.back();
      sessions_.pop_back();
    }
  }
}

bool Registry::Add(SessionState& session, const std::vector<RegistrationPtr>& added) {
  std::lock_guard lock(mu_);
  if (session.failure || !session.open) {
    return false;
  }
  for (const auto& reg : added) {
    by_topic_[reg->topic].push_back(reg);
    session.registrations.push_back(reg);
  }
  metrics_.stream().topics_registered.Add(static_cast<int64_t>(added.size()));
  registered_.fetch_add(static_cast<int64_t>(added.size()), std::memory_order_relaxed);
  return true;
}

void Registry::Remove(SessionState& session, const std::vector<RegistrationPtr>& removed) {
  std::lock_guard lock(mu_);
  for (const auto& reg : removed) {
    auto pos = std::find(session.registrations.begin(), session.registrations.end(), reg);
    if (pos == session.registrations.end()) {
      continue;  // already cleared by a failed generation
    }
    *pos = std::move(session.registrations.back());
    session.registrations.pop_back();
    RemoveLocked(reg);
  }
}

void Registry::SetTargets(const std::vector<RegistrationPtr>& regs,
                          const std::vector<int64_t>& targets) {
  std::lock_guard lock(mu_);
  for (size_t i = 0; i < regs.size() && i < targets.size(); ++i) {
    regs[i]->needed = std::max(regs[i]->needed, targets[i]);
  }
}

int64_t Registry::Needed(const Registration& reg) {
  std::lock_guard lock(mu_);
  return reg.needed;
}

bool Registry::TrySwitchLive(Registration& reg) {
  std::lock_guard lock(mu_);
  if (reg.needed <= reg.floor) {
    reg.live = true;
  }
  return reg.live;
}

bool Registry::TrySwitchLiveAll(const std::vector<RegistrationPtr>& regs) {
  std::lock_guard lock(mu_);
  for (const RegistrationPtr& reg : regs) {
    if (reg->active && reg->needed > reg->floor) {
      return false;
    }
  }
  for (const RegistrationPtr& reg : regs) {
    if (reg->active && !reg->history_only) {
      reg->live = true;
    }
  }
  return true;
}

void Registry::Drain(SessionState& session, std::vector<LiveItem>* live,
                     std::optional<Ending>* failure) {
  std::lock_guard lock(mu_);
  live->swap(session.inbox);
  session.inbox.clear();
  session.inbox_bytes = 0;
  *failure = session.failure ? std::optional<Ending>(*session.failure) : std::nullopt;
}

std::vector<bool> Registry::Interested(const std::vector<store::RowHead>& rows) const {
  std::vector<bool> out(rows.size(), false);
  std::lock_guard lock(mu_);
  if (by_topic_.empty()) {
    return out;
  }
  for (size_t i = 0; i < rows.size(); ++i) {
    out[i] = by_topic_.contains(rows[i].topic);
  }
  return out;
}

// implements: STORE.md 5.5 (dispatch never blocks; catching-up registrations get a coalesced
// notice, live ones the shared row)
void Registry::Dispatch(const std::vector<RowPtr>& rows) {
  std::vector<SessionState*> touched;
  {
    std::lock_guard lock(mu_);
    if (by_topic_.empty()) {
      return;
    }
    for (const RowPtr& row : rows) {
      auto it = by_topic_.find(row->topic);
      if (it == by_topic_.end()) {
        continue;
      }
      for (const RegistrationPtr& reg : it->second) {
        SessionState* session = reg->session;
        if (reg->live) {
          if (session->failure) {
            continue;
          }
          session->inbox_bytes += row->encoded.size();
          if (session->inbox_bytes > max_inbox_bytes_) {
            session->failure = std::make_unique<Ending>(
                Ending{Status(StatusCode::kResourceExhausted,
                              "the stream's output is full: the client is not reading"),
                       telemetry::StreamEndReason::kBackpressure});
            session->inbox.clear();
          } else {
            session->inbox.push_back(LiveItem{reg, row});
          }
        } else if (row->sequence_id > reg->needed) {
          reg->needed = row->sequence_id;  // the session's catch-up queue picks it up
        } else {
          continue;
        }
        if (!session->touched) {
          session->touched = true;
          touched.push_back(session);
        }
      }
    }
    for (SessionState* session : touched) {
      session->touched = false;
    }
    WakeLocked(touched);
  }
}

void Registry::WakeLocked(const std::vector<SessionState*>& sessions) {
  // Sorted by (group, dispatch order): each group's sessions adjacent, in the order reached.
  struct Pending {
    const void* group;
    size_t order;
    SessionState* session;
    bool operator<(const Pending& other) const {
      // std::less: `<` between pointers to unrelated objects has no specified order.
      if (group != other.group) {
        return std::less<const void*>()(group, other.group);
      }
      return order < other.order;
    }
  };
  using Batch = std::vector<Pending>;
  std::vector<std::pair<boost::asio::any_io_executor, Batch>> batches;  // one per executor
  for (SessionState* session : sessions) {
    if (!session->ClaimWake()) {
      continue;
    }
    if (!session->executor_) {
      session->RunWake();
      continue;
    }
    auto batch = std::find_if(batches.begin(), batches.end(),
                              [&](const auto& b) { return b.first == session->executor_; });
    if (batch == batches.end()) {
      batches.emplace_back(session->executor_, Batch());
      batch = std::prev(batches.end());
    }
    batch->second.push_back(Pending{session->group_, batch->second.size(), session});
  }
  for (auto& [executor, batch] : batches) {
    std::sort(batch.begin(), batch.end());
    std::vector<WakeEntry> entries;
    entries.reserve(batch.size());
    for (const Pending& pending : batch) {
      entries.push_back(WakeEntry{pending.group, pending.session->weak_from_this()});
    }
    boost::asio::post(executor, [executor, entries = std::move(entries)]() mutable {
      RunWakeGroups(executor, std::move(entries), 0);
    });
  }
}

// One group (connection) per turn: its sessions queue their frames and wake their connection,
// whose write is posted before the next turn. The connection then writes while its streams are
// still in cache, and its subscribers do not wait for every other connection's wake-ups (a topic
// with 1,000 subscribers on 10 connections: 10 writes spread over the fan-out instead of all
// after it). Small groups share a turn, up to kWakesPerTurn sessions, so that 1,000 connections
// of one stream each cost a few hand-offs, not 1,000.
void Registry::RunWakeGroups(const boost::asio::any_io_executor& executor,
                             std::vector<WakeEntry> entries, size_t next) {
  const size_t turn_start = next;
  while (next < entries.size() && next - turn_start < kWakesPerTurn) {
    const void* group = entries[next].group;
    for (; next < entries.size() && entries[next].group == group; ++next) {
      if (auto session = entries[next].session.lock()) {
        session->RunWake();
      }
    }
  }
  if (next < entries.size()) {
    boost::asio::post(executor, [executor, entries = std::move(entries), next]() mutable {
      RunWakeGroups(executor, std::move(entries), next);
    });
  }
}

void Registry::SetReady() {
  std::lock_guard lock(mu_);
  if (!shut_down_) {
    ready_ = true;
    metrics_.tailer().ready.Set(1);
  }
}

void Registry::FailAll(const Ending& ending) {
  std::vector<SessionState*> sessions;
  {
    std::lock_guard lock(mu_);
    ready_ = false;
    metrics_.tailer().ready.Set(0);
    for (SessionState* session : sessions_) {
      session->open = false;
      if (!session->failure) {
        session->failure = std::make_unique<Ending>(ending);
      }
      session->registrations.clear();
      session->inbox.clear();
      session->inbox_bytes = 0;
    }
    int64_t registered = 0;
    for (const auto& [topic, regs] : by_topic_) {
      registered += static_cast<int64_t>(regs.size());
    }
    metrics_.stream().topics_registered.Add(-registered);
    registered_.fetch_sub(registered, std::memory_order_relaxed);
    by_topic_.clear();
    sessions.swap(sessions_);
    WakeLocked(sessions);
  }
}

void Registry::Shutdown(const Ending& ending) {
  {
    std::lock_guard lock(mu_);
    shut_down_ = true;
  }
  FailAll(ending);
}

bool Registry::ready() const {
  std::lock_guard lock(mu_);
  return ready_ && !shut_down_;
}

}  // namespace xb::fanout
