// Test support for the `pg` tests (never linked into the backend): a fresh database t_<random> on
// the cluster that tests/support/pg_cluster.sh started (XB_PG_PRIMARY, XB_PG_REPLICA), dropped
// again at the end of the test.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "base/status.h"
#include "store/postgres/connection.h"
#include "store/postgres/postgres_store.h"

namespace xb::store::postgres {

// The URL with its database name replaced by `database` (postgres://user@host:port/NAME?query).
std::string WithDatabase(const std::string& url, const std::string& database);

class TestDatabase {
 public:
  // Creates the database on XB_PG_PRIMARY. Fails naming XB_PG_PRIMARY when it is unset: CI
  // always provides it, so a missing cluster is a failure, never a skip.
  static Result<std::unique_ptr<TestDatabase>> Create();

  // Waits (up to 60 s) until the replica lets us connect to this database, i.e. has replayed its
  // CREATE DATABASE. Fails naming XB_PG_REPLICA when that is unset.
  Status WaitForReplica() const;
  ~TestDatabase();  // DROP DATABASE ... WITH (FORCE)
  TestDatabase(const TestDatabase&) = delete;
  TestDatabase& operator=(const TestDatabase&) = delete;

  const std::string& name() const { return name_; }
  const std::string& primary_url() const { return primary_url_; }
  const std::optional<std::string>& replica_url() const { return replica_url_; }

  // Options for PostgresStore::Open with small, test-friendly bounds; the replica only when
  // `with_replica` and the cluster has one.
  PostgresOptions Options(bool with_replica) const;

  // A direct connection (no statement timeout) to this database on the primary or the replica.
  Result<std::unique_ptr<Connection>> Connect(Database where) const;

 private:
  TestDatabase(std::string admin_url, std::string name, std::string primary_url,
               std::optional<std::string> replica_url)
      : admin_url_(std::move(admin_url)),
        name_(std::move(name)),
        primary_url_(std::move(primary_url)),
        replica_url_(std::move(replica_url)) {}

  std::string admin_url_;
  std::string name_;
  std::string primary_url_;
  std::optional<std::string> replica_url_;
};

// Runs SQL text on `conn` within 30 s; the error's message on failure.
Result<PgResult> RunSql(Connection& conn, const std::string& sql);

// Store for the conformance suite: owns its test database and drops it after closing the store.
std::unique_ptr<Store> MakeConformanceStore();

}  // namespace xb::store::postgres
