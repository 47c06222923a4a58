#include "store/postgres/test_database.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <random>
#include <thread>

#include "store/store_conformance.h"

namespace xb::store::postgres {
namespace {

constexpr std::chrono::seconds kSetupTimeout{60};

std::optional<std::string> Env(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') {
    return std::nullopt;
  }
  return std::string(value);
}

std::string RandomName() {
  std::random_device device;
  std::mt19937_64 rng((static_cast<uint64_t>(device()) << 32) ^ device() ^
                      static_cast<uint64_t>(getpid()));
  static constexpr char kAlphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789";
  std::string name = "t_";
  for (int i = 0; i < 16; ++i) {
    name += kAlphabet[rng() % (sizeof(kAlphabet) - 1)];
  }
  return name;
}

}  // namespace

std::string WithDatabase(const std::string& url, const std::string& database) {
  size_t scheme = url.find("://");
  size_t path = url.find('/', scheme == std::string::npos ? 0 : scheme + 3);
  size_t query = url.find('?');
  std::string rest = query == std::string::npos ? "" : url.substr(query);
  std::string base = path == std::string::npos ? url.substr(0, query) : url.substr(0, path);
  return base + "/" + database + rest;
}

Result<PgResult> RunSql(Connection& conn, const std::string& sql) {
  auto r = conn.ExecScript("test sql", sql, Clock::now() + std::chrono::seconds(30));
  if (!r.ok()) {
    return Unavailable(r.error().message);
  }
  return std::move(r).value();
}

Result<std::unique_ptr<TestDatabase>> TestDatabase::Create() {
  std::optional<std::string> primary = Env("XB_PG_PRIMARY");
  if (!primary) {
    return Status(StatusCode::kFailedPrecondition,
                  "XB_PG_PRIMARY is not set: the pg tests need the cluster of "
                  "tests/support/pg_cluster.sh (`env=$(tests/support/pg_cluster.sh start DIR) && "
                  "eval \"$env\"`; scripts/test does this)");
  }
  std::optional<std::string> replica = Env("XB_PG_REPLICA");
  auto deadline = Clock::now() + kSetupTimeout;
  std::string name = RandomName();

  auto admin = Connection::Open(*primary, "XB_PG_PRIMARY", 0, deadline);
  if (!admin.ok()) {
    return Unavailable(admin.error().message);
  }
  XB_RETURN_IF_ERROR(RunSql(*admin.value(), "CREATE DATABASE " + name).status());

  std::unique_ptr<TestDatabase> db(new TestDatabase(
      *primary, name, WithDatabase(*primary, name),
      replica ? std::optional<std::string>(WithDatabase(*replica, name)) : std::nullopt));
  return db;
}

Status TestDatabase::WaitForReplica() const {
  if (!replica_url_) {
    return Status(StatusCode::kFailedPrecondition,
                  "XB_PG_REPLICA is not set: tests/support/pg_cluster.sh starts a replica");
  }
  auto deadline = Clock::now() + kSetupTimeout;
  while (true) {
    auto conn = Connection::Open(*replica_url_, "XB_PG_REPLICA", 0, deadline);
    if (conn.ok()) {
      return Status::Ok();
    }
    if (Clock::now() >= deadline) {
      return Unavailable(conn.error().message);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

TestDatabase::~TestDatabase() {
  auto admin =
      Connection::Open(admin_url_, "XB_PG_PRIMARY", 0, Clock::now() + std::chrono::seconds(30));
  if (admin.ok()) {
    auto dropped = RunSql(*admin.value(), "DROP DATABASE IF EXISTS " + name_ + " WITH (FORCE)");
    if (!dropped.ok()) {
      ADD_FAILURE() << "dropping " << name_ << ": " << dropped.status().ToString();
    }
  } else {
    ADD_FAILURE() << "dropping " << name_ << ": " << admin.error().message;
  }
}

PostgresOptions TestDatabase::Options(bool with_replica) const {
  PostgresOptions options;
  options.primary_url = primary_url_;
  if (with_replica) {
    options.replica_url = replica_url_;
  }
  options.max_connections = 8;
  options.statement_timeout_ms = 5000;
  options.max_publish_duration_ms = 10000;
  options.max_barrier_wait_ms = 1000;
  return options;
}

Result<std::unique_ptr<Connection>> TestDatabase::Connect(Database where) const {
  std::string url = where == Database::kPrimary || !replica_url_ ? primary_url_ : *replica_url_;
  // Told apart from the store's own connections (application_name xmtp-backend).
  url += url.find('?') == std::string::npos ? "?" : "&";
  url += "application_name=xb-test";
  auto conn = Connection::Open(url, "test connection", 0, Clock::now() + std::chrono::seconds(30));
  if (!conn.ok()) {
    return Unavailable(conn.error().message);
  }
  return std::move(conn).value();
}

std::unique_ptr<Store> MakeConformanceStore() {
  auto db = TestDatabase::Create();
  if (!db.ok()) {
    ADD_FAILURE() << db.status().ToString();
    return nullptr;
  }
  auto store =
      PostgresStore::Open((*db)->Options(/*with_replica=*/false), Clock::now() + kSetupTimeout);
  if (!store.ok()) {
    ADD_FAILURE() << "PostgresStore::Open: " << store.status().ToString();
    return nullptr;
  }
  return std::make_unique<OwningStore<TestDatabase>>(std::move(db).value(),
                                                     std::move(store).value());
}

}  // namespace xb::store::postgres
