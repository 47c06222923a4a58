#include "store/postgres/postgres_store.h"

#include <algorithm>
#include <string>

#include "store/postgres/migrations.h"
#include "store/postgres/publish.h"

namespace xb::store::postgres {
namespace {

Status BadOption(std::string_view key, std::string_view rule) {
  return InvalidArgument(std::string(key) + ": " + std::string(rule));
}

Status CheckOptions(const PostgresOptions& o) {
  if (o.primary_url.empty()) {
    return BadOption("database.url", "is required");
  }
  if (o.replica_url && o.replica_url->empty()) {
    return BadOption("database.replica_url", "must not be empty when set");
  }
  if (o.max_connections < 1) {
    return BadOption("database.max_connections", "must be at least 1");
  }
  if (o.statement_timeout_ms < 1) {
    return BadOption("database.max_statement_timeout_ms", "must be at least 1");
  }
  if (o.max_publish_duration_ms < 1) {
    return BadOption("publishing.max_publish_duration_ms", "must be at least 1");
  }
  if (o.max_barrier_wait_ms < 1) {
    return BadOption("publishing.max_barrier_wait_ms", "must be at least 1");
  }
  return Status::Ok();
}

ConnectionPool::Options PoolOptions(const PostgresOptions& o, std::string url,
                                    std::string setting) {
  return ConnectionPool::Options{.url = std::move(url),
                                 .setting = std::move(setting),
                                 .max_connections = static_cast<size_t>(o.max_connections),
                                 .statement_timeout_ms = o.statement_timeout_ms,
                                 .warning_sink = o.warning_sink,
                                 .on_released_open_transaction = o.on_released_open_transaction};
}

// A replica that has not replayed CREATE DATABASE yet, or is still starting, is waited for.
bool ReplicaNotReadyYet(const DbError& error) {
  return error.sqlstate == "3D000" || error.sqlstate == "57P03";
}

}  // namespace

PostgresStore::PostgresStore(PostgresOptions options)
    : options_(std::move(options)),
      primary_(PoolOptions(options_, options_.primary_url, "database.url")),
      publisher_(primary_,
                 PublishBounds{.statement_timeout_ms = options_.statement_timeout_ms,
                               .max_publish_duration_ms = options_.max_publish_duration_ms},
                 CombinerLimits{.max_transactions = options_.publish_transactions}) {
  if (options_.replica_url) {
    replica_ = std::make_unique<ConnectionPool>(
        PoolOptions(options_, *options_.replica_url, "database.replica_url"));
  }
  push_ = std::make_unique<PostgresPushStore>(
      primary_, ReadPool(),
      PostgresPushStore::Options{.primary_url = options_.primary_url,
                                 .statement_timeout_ms = options_.statement_timeout_ms});
}

PostgresStore::~PostgresStore() = default;

// implements: STORE.md 2.6 (startup: migrate on the primary under the lock, then note the position
// the replica must replay)
Result<std::unique_ptr<PostgresStore>> PostgresStore::Open(PostgresOptions options,
                                                           Clock::time_point deadline) {
  XB_RETURN_IF_ERROR(CheckOptions(options));
  std::unique_ptr<PostgresStore> store(new PostgresStore(std::move(options)));
  {
    // A dedicated connection: the session lock (0, 4) dies with it, also on every failure path.
    // No statement_timeout on it; the startup deadline bounds the lock wait and the DDL.
    auto conn = Connection::Open(store->options_.primary_url, "database.url",
                                 /*statement_timeout_ms=*/0, deadline);
    if (!conn.ok()) {
      return ToStatus(conn.error());
    }
    auto migrated = ApplyMigrations(*conn.value(), EmbeddedMigrations(), deadline);
    if (!migrated.ok()) {
      return migrated.status();
    }
    // STORE.md 2.6: an applied version this binary does not know is logged and tolerated.
    if (store->options_.warning_sink) {
      for (int64_t version : migrated->unknown) {
        store->options_.warning_sink("database migration " + std::to_string(version) +
                                     " is unknown to this binary (a newer binary went first)");
      }
    }
  }
  if (store->replica_) {
    XB_RETURN_IF_ERROR(store->CaptureStartupPosition(deadline));
  }
  return store;
}

Status PostgresStore::CaptureStartupPosition(Clock::time_point deadline) {
  auto lease = primary_.Acquire(deadline);
  if (!lease.ok()) {
    return ToStatus(lease.error());
  }
  auto r =
      (*lease.value())
          .Exec("database.url: WAL position", "SELECT pg_current_wal_insert_lsn()::text", deadline);
  if (!r.ok()) {
    return ToStatus(r.error());
  }
  startup_position_ = std::string(r.value().Bytes(0, 0));
  return Status::Ok();
}

// implements: STORE.md 2.6 and 6 (start-up waits until the replica replayed the migrations)
Result<bool> PostgresStore::ReadDatabaseCaughtUp(Clock::time_point deadline) {
  if (!replica_) {
    return true;
  }
  auto lease = replica_->Acquire(deadline);
  if (!lease.ok()) {
    if (ReplicaNotReadyYet(lease.error())) {
      return false;
    }
    return ToStatus(lease.error());
  }
  constexpr const char* kReplayed =
      "SELECT NOT pg_is_in_recovery() OR coalesce(pg_last_wal_replay_lsn() >= $1::text::pg_lsn, "
      "false)";
  Params params;
  params.Text(startup_position_);
  auto r =
      (*lease.value()).Exec("database.replica_url: replay position", kReplayed, params, deadline);
  if (!r.ok()) {
    return ToStatus(r.error());
  }
  return r.value().Bool(0, 0);
}

StoreResult<CommitPublishResult> PostgresStore::CommitPublish(const CommitPublishRequest& request) {
  auto result = publisher_.Commit(request);
  NotifyCommitted(result);
  return result;
}

bool PostgresStore::StartCommitPublish(std::shared_ptr<const CommitPublishRequest> request,
                                       CommitPublishDone done) {
  return publisher_.Start(std::move(request),
                          [this, done = std::move(done)](StoreResult<CommitPublishResult> result) {
                            NotifyCommitted(result);
                            done(std::move(result));
                          });
}

void PostgresStore::NotifyCommitted(const StoreResult<CommitPublishResult>& result) {
  // This instance's own commits wake its tailer at once (publishes through other instances are
  // found by the poll timer). Only rows stored now count.
  if (result.ok()) {
    const CommitPublishResult* committed = &result.value();
    int64_t last = 0;
    for (size_t i = 0; i < committed->metas.size(); ++i) {
      if (!committed->duplicate[i]) {
        last = std::max(last, committed->metas[i].sequence_id);
      }
    }
    if (last > 0) {
      std::lock_guard lock(listener_mu_);
      if (listener_) {
        listener_(last);
      }
    }
  }
}

void PostgresStore::SetCommitListener(std::function<void(int64_t last_id)> listener,
                                      std::function<bool()> /*urgent*/) {
  std::lock_guard lock(listener_mu_);
  listener_ = std::move(listener);
}

uint64_t PostgresStore::released_open_transactions() const {
  return primary_.released_open_transactions() +
         (replica_ ? replica_->released_open_transactions() : 0);
}

}  // namespace xb::store::postgres
