// PostgreSQL engine tests (ctest label `pg`). They need the cluster of tests/support/pg_cluster.sh:
// XB_PG_PRIMARY (required: without it every test fails) and XB_PG_REPLICA (replica tests). Each
// test works in its own database t_<random>, dropped at the end.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "store/postgres/migrations.h"
#include "store/postgres/pool.h"
#include "store/postgres/postgres_store.h"
#include "store/postgres/test_database.h"
#include "store/read_database_wait.h"
#include "store/store_conformance.h"
#include "store/store_test_data.h"

namespace xb::store {

// The engine-neutral suite, on a fresh migrated database per test (primary only: Newest must see
// a publish at once there).
INSTANTIATE_TEST_SUITE_P(Postgres, StoreConformanceTest,
                         ::testing::Values(StoreFactory(&postgres::MakeConformanceStore)));

namespace postgres {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// ---- Test data. ----

using store::test_data::CommitLogTopic;
using store::test_data::GroupTopic;
using store::test_data::HashOf;
using store::test_data::IdentityItem;
using store::test_data::IdentityTopic;
using store::test_data::Item;
using store::test_data::KeyPackageTopic;
using store::test_data::Request;
using store::test_data::Topic;
using store::test_data::WelcomeTopic;

template <typename T>
std::string Describe(const StoreResult<T>& result) {
  if (!result.ok()) {
    return "store error kind " + std::to_string(static_cast<int>(result.error().kind)) + ": " +
           result.error().message;
  }
  return "ok";
}

// A result slot a publishing thread fills in; one it never fills reads as this error.
StoreResult<CommitPublishResult> NotPublished() {
  StoreError error;
  error.message = "not published";
  return error;
}

template <typename T>
std::optional<ErrorKind> KindOf(const StoreResult<T>& result) {
  if (!result.ok()) {
    return result.error().kind;
  }
  return std::nullopt;
}

// Polls `done` every few milliseconds until it holds or `timeout` passes: waiting on an event
// (a lock wait showing in pg_locks, replay catching up) with a deadline.
bool WaitFor(const std::function<bool()>& done, milliseconds timeout = milliseconds(20000)) {
  auto deadline = Clock::now() + timeout;
  while (!done()) {
    if (Clock::now() >= deadline) {
      return false;
    }
    std::this_thread::sleep_for(milliseconds(5));
  }
  return true;
}

// The topic lock key of STORE.md 2.4, computed by the server as the store does.
constexpr const char* kTopicKeySql =
    "SELECT ('x' || encode(substr(sha256($1::bytea), 1, 8), 'hex'))::bit(64)::bigint";

// StartCommitPublish results: filled on the combiner's leader threads, awaited on the test's.
class StartedPublishes {
 public:
  using Slot = std::optional<StoreResult<CommitPublishResult>>;

  // Starts `request` on `store`; its result lands in `into`. False when the store refused it.
  bool Start(PostgresStore& store, CommitPublishRequest request, Slot& into) {
    return store.StartCommitPublish(std::make_shared<CommitPublishRequest>(std::move(request)),
                                    [this, &into](StoreResult<CommitPublishResult> r) {
                                      std::lock_guard lock(mu_);
                                      into = std::move(r);
                                      done_.notify_all();
                                    });
  }

  // Waits up to 10 s for `ready`, which reads slots under the lock; true when it held.
  bool WaitUntil(const std::function<bool()>& ready) {
    std::unique_lock lock(mu_);
    return done_.wait_for(lock, seconds(10), ready);
  }

  // Holds off callbacks while the caller reads slots.
  std::unique_lock<std::mutex> Lock() { return std::unique_lock(mu_); }

 private:
  std::mutex mu_;
  std::condition_variable done_;
};

class PostgresStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto db = TestDatabase::Create();
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    db_ = std::move(db).value();
    auto admin = db_->Connect(Database::kPrimary);
    ASSERT_TRUE(admin.ok()) << admin.status().ToString();
    admin_ = std::move(admin).value();
  }

  void TearDown() override {
    admin_.reset();
    db_.reset();
  }

  std::unique_ptr<PostgresStore> Open(const PostgresOptions& options) {
    auto store = PostgresStore::Open(options, Clock::now() + seconds(60));
    EXPECT_TRUE(store.ok()) << store.status().ToString();
    return store.ok() ? std::move(store).value() : nullptr;
  }
  std::unique_ptr<PostgresStore> Open() { return Open(db_->Options(/*with_replica=*/false)); }

  // A pool on the primary, for calling CommitPublishBatchOn without a store's combiner.
  ConnectionPool::Options PrimaryPoolOptions() {
    ConnectionPool::Options options;
    options.url = db_->Options(false).primary_url;
    options.setting = "database.url";
    return options;
  }

  // One statement on `conn` (the admin connection by default), binary results.
  PgResult Sql(const char* sql, const Params& params, Connection* conn = nullptr) {
    Connection& c = conn ? *conn : *admin_;
    auto r = c.Exec("test", sql, params, Clock::now() + seconds(30));
    if (!r.ok()) {
      ADD_FAILURE() << sql << ": " << r.error().message;
      return PgResult();
    }
    return std::move(r).value();
  }
  PgResult Sql(const char* sql, Connection* conn = nullptr) { return Sql(sql, Params(), conn); }

  int64_t SqlInt(const char* sql, const Params& params, Connection* conn = nullptr) {
    PgResult r = Sql(sql, params, conn);
    return r && r.rows() == 1 && !r.IsNull(0, 0) ? r.Int8(0, 0) : -1;
  }
  int64_t SqlInt(const char* sql, Connection* conn = nullptr) {
    return SqlInt(sql, Params(), conn);
  }

  int64_t TopicKey(const std::string& topic) {
    Params p;
    p.Bytea(topic);
    return SqlInt(kTopicKeySql, p);
  }

  // Takes (or releases) `topic`'s publish lock on the admin session, so that a publish touching
  // the topic waits for it.
  void LockTopic(const std::string& topic) { TopicLockCall("pg_advisory_lock", topic); }
  void UnlockTopic(const std::string& topic) { TopicLockCall("pg_advisory_unlock", topic); }
  void TopicLockCall(const std::string& function, const std::string& topic) {
    Params key;
    key.Int8(TopicKey(topic));
    Sql(("SELECT " + function + "($1::int8)").c_str(), key);
  }

  // Backends of this test's database waiting for an advisory lock.
  int64_t WaitingAdvisoryLocks() {
    Params p;
    p.Text(db_->name());
    return SqlInt(
        "SELECT count(*) FROM pg_locks l JOIN pg_database d ON d.oid = l.database "
        "WHERE l.locktype = 'advisory' AND NOT l.granted AND d.datname = $1::text",
        p);
  }

  // Backends the store opened on this test's database.
  std::vector<int32_t> StoreBackends(const char* extra_condition = "true") {
    std::string sql =
        "SELECT pid FROM pg_stat_activity WHERE datname = $1::text AND "
        "application_name = 'xmtp-backend' AND pid <> pg_backend_pid() AND " +
        std::string(extra_condition);
    Params p;
    p.Text(db_->name());
    PgResult r = Sql(sql.c_str(), p);
    std::vector<int32_t> pids;
    for (int i = 0; r && i < r.rows(); ++i) {
      pids.push_back(r.Int4(i, 0));
    }
    return pids;
  }

  std::unique_ptr<TestDatabase> db_;
  std::unique_ptr<Connection> admin_;
};

// ---- Schema and migrations. ----

TEST_F(PostgresStoreTest, SchemaHasTheSequenceTablesAndSeededRows) {
  // verifies: STORE.md 2.1
  // verifies: STORE.md 2.2
  // verifies: STORE.md 2.3
  auto store = Open();
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(SqlInt("SELECT cache_size FROM pg_sequences WHERE sequencename = 'envelope_sequence'"),
            1);
  EXPECT_EQ(SqlInt("SELECT min_value FROM pg_sequences WHERE sequencename = 'envelope_sequence'"),
            1);
  EXPECT_EQ(SqlInt("SELECT count(*) FROM pg_sequences WHERE sequencename = 'envelope_sequence' "
                   "AND max_value = 9223372036854775807 AND NOT cycle"),
            1);
  EXPECT_EQ(SqlInt("SELECT closed_sequence_id FROM allocation_boundary WHERE singleton"), 0);
  EXPECT_EQ(SqlInt("SELECT sequence_id FROM push_cursor WHERE singleton"), 0);
  for (const char* index :
       {"envelopes_topic_sequence", "envelopes_push_eligible", "envelopes_topic_message_hash_key",
        "identifier_association_active", "push_recipient_renewed", "push_subscription_topic"}) {
    Params p;
    p.Text(index);
    EXPECT_EQ(SqlInt("SELECT count(*) FROM pg_indexes WHERE indexname = $1::text", p), 1) << index;
  }
  EXPECT_EQ(SqlInt("SELECT count(*) FROM pg_indexes WHERE indexname = "
                   "'identifier_association_active' AND indexdef LIKE "
                   "'%WHERE (revocation_sequence_id IS NULL)%'"),
            1);

  // OPS-001 as a database invariant: an identity-topic row with an expiry is refused.
  auto r = admin_->ExecScript(
      "test",
      "INSERT INTO envelopes VALUES (1, '\\x02'::bytea || decode(repeat('ab', 32), 'hex'), 5, 10, "
      "decode(repeat('cd', 32), 'hex'), false, '\\x00', false, NULL)",
      Clock::now() + seconds(10));
  ASSERT_TRUE(!r.ok());
  EXPECT_EQ(r.error().sqlstate, "23514");
  EXPECT_EQ(r.error().kind, ErrorKind::kInvariant);
  EXPECT_NE(r.error().message.find("envelopes_exempt_no_expiry"), std::string::npos);
}

TEST_F(PostgresStoreTest, TopicLockKeyIsTheFirstEightHashBytesBigEndianSigned) {
  // verifies: STORE.md 2.4
  // SHA-256("abc") = ba7816bf 8f01cfea ...
  EXPECT_EQ(TopicKey("abc"), static_cast<int64_t>(0xba7816bf8f01cfeaULL));
}

TEST_F(PostgresStoreTest, MigratingTwiceIsANoOp) {
  // verifies: STORE.md 2.6
  auto first = Open();
  ASSERT_NE(first, nullptr);
  int64_t applied_ns =
      SqlInt("SELECT applied_ns FROM schema_migrations WHERE version = 20260907000000");
  EXPECT_GT(applied_ns, 0);
  auto second = Open();
  ASSERT_NE(second, nullptr);
  EXPECT_EQ(SqlInt("SELECT count(*) FROM schema_migrations"),
            static_cast<int64_t>(EmbeddedMigrations().size()));
  EXPECT_EQ(SqlInt("SELECT applied_ns FROM schema_migrations WHERE version = 20260907000000"),
            applied_ns);
  EXPECT_EQ(SqlInt("SELECT count(*) FROM allocation_boundary"), 1);
}

TEST_F(PostgresStoreTest, ConcurrentStartersMigrateOnce) {
  // verifies: STORE.md 2.6
  std::vector<std::thread> starters;
  std::atomic<int> opened{0};
  for (int i = 0; i < 4; ++i) {
    starters.emplace_back([&] {
      auto store = PostgresStore::Open(db_->Options(false), Clock::now() + seconds(60));
      if (store.ok()) {
        opened.fetch_add(1);
      } else {
        ADD_FAILURE() << store.status().ToString();
      }
    });
  }
  for (auto& t : starters) {
    t.join();
  }
  EXPECT_EQ(opened.load(), 4);
  EXPECT_EQ(SqlInt("SELECT count(*) FROM schema_migrations"),
            static_cast<int64_t>(EmbeddedMigrations().size()));
  EXPECT_EQ(SqlInt("SELECT count(*) FROM allocation_boundary"), 1);
}

TEST_F(PostgresStoreTest, ChangedMigrationRefusesToStartNamingTheVersion) {
  // verifies: STORE.md 2.6
  ASSERT_NE(Open(), nullptr);
  Sql("UPDATE schema_migrations SET checksum = sha256('edited'::bytea)");
  auto store = PostgresStore::Open(db_->Options(false), Clock::now() + seconds(60));
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(store.status().message(),
            "database migration 20260907000000 differs from the one this binary carries");
}

TEST_F(PostgresStoreTest, UnknownAppliedMigrationIsTolerated) {
  // verifies: STORE.md 2.6
  ASSERT_NE(Open(), nullptr);
  Sql("INSERT INTO schema_migrations VALUES (29990101000000, 'from a newer binary', "
      "sha256('x'::bytea), 1)");
  std::vector<std::string> warnings;
  PostgresOptions options = db_->Options(false);
  options.warning_sink = [&](std::string_view w) { warnings.emplace_back(w); };
  EXPECT_NE(Open(options), nullptr);
  EXPECT_EQ(warnings, std::vector<std::string>({"database migration 29990101000000 is unknown to "
                                                "this binary (a newer binary went first)"}));
}

TEST_F(PostgresStoreTest, OpenErrorsNameTheSettingNeverTheUrl) {
  // verifies: OPS-014
  PostgresOptions options = db_->Options(false);
  options.primary_url = "postgres://postgres:s3cret-pw@127.0.0.1:1/nowhere";
  auto store = PostgresStore::Open(options, Clock::now() + seconds(10));
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(store.status().message(), "database.url: cannot connect: connection refused");

  options.primary_url = "postgres://a:b@[not a url";
  store = PostgresStore::Open(options, Clock::now() + seconds(10));
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().message().find("not a url"), std::string::npos);
  EXPECT_EQ(store.status().message().rfind("database.url: ", 0), 0u);

  // An unreachable replica fails start-up at its first check (store/read_database_wait.h).
  options = db_->Options(false);
  options.replica_url = "postgres://postgres:s3cret-pw@127.0.0.1:1/nowhere";
  store = PostgresStore::Open(options, Clock::now() + seconds(10));
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  Result<bool> replica = store.value()->ReadDatabaseCaughtUp(Clock::now() + seconds(10));
  ASSERT_FALSE(replica.ok());
  EXPECT_EQ(replica.status().message(), "database.replica_url: cannot connect: connection refused");

  options = db_->Options(false);
  options.max_connections = 0;
  store = PostgresStore::Open(options, Clock::now() + seconds(10));
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().message(), "database.max_connections: must be at least 1");
}

// ---- The publish transaction. ----

TEST_F(PostgresStoreTest, ManyPublishersOnOverlappingTopicsNeverDeadlock) {
  // verifies: ARC-031
  // verifies: API-287
  // verifies: API-201
  PostgresOptions options = db_->Options(false);
  options.max_connections = 12;
  auto store = Open(options);
  ASSERT_NE(store, nullptr);
  std::vector<std::string> topics;
  for (uint8_t n = 0; n < 6; ++n) {
    topics.push_back(GroupTopic(n));
  }
  constexpr int kThreads = 12;
  constexpr int kPublishes = 25;
  std::vector<std::vector<std::vector<EnvelopeMeta>>> published(kThreads);
  std::vector<std::string> errors[kThreads];
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(static_cast<unsigned>(t));
      for (int i = 0; i < kPublishes; ++i) {
        // Three to five topics in a random order; every third publish carries an identity update
        // of a per-thread inbox, so the identity lock joins the order too.
        std::vector<std::string> mine = topics;
        std::shuffle(mine.begin(), mine.end(), rng);
        mine.resize(3 + rng() % 3);
        std::vector<PublishItem> items;
        for (size_t k = 0; k < mine.size(); ++k) {
          items.push_back(
              Item(mine[k], std::to_string(t) + "/" + std::to_string(i) + "/" + std::to_string(k)));
        }
        if (i % 3 == 0) {
          items.push_back(IdentityItem(IdentityTopic(static_cast<uint8_t>(100 + t)),
                                       "id" + std::to_string(t) + "/" + std::to_string(i),
                                       /*head=*/-1));
          items.back().identity_validated_head.reset();  // not head-checked here
        }
        auto r = store->CommitPublish(Request(items));
        if (!r.ok()) {
          errors[t].push_back(r.error().message);
        } else {
          published[t].push_back(r.value().metas);
        }
      }
    });
  }
  for (auto& t : threads) {
    t.join();
  }
  std::set<int64_t> ids;
  std::map<std::string, std::vector<int64_t>> by_topic_in_commit_order;
  size_t total = 0;
  for (int t = 0; t < kThreads; ++t) {
    ASSERT_TRUE(errors[t].empty()) << errors[t].front();
    for (const auto& metas : published[t]) {
      for (size_t k = 1; k < metas.size(); ++k) {
        EXPECT_LT(metas[k - 1].sequence_id, metas[k].sequence_id);
      }
      for (const auto& m : metas) {
        ids.insert(m.sequence_id);
        ++total;
      }
    }
  }
  EXPECT_EQ(ids.size(), total);
  EXPECT_EQ(store->released_open_transactions(), 0u);

  // Every acknowledged row is stored, and nothing else.
  EXPECT_EQ(SqlInt("SELECT count(*) FROM envelopes"), static_cast<int64_t>(total));
}

// The publish transaction's round trips: a pipeline whose middle statement fails reports that
// statement, runs none after it, and leaves the connection usable.
TEST_F(PostgresStoreTest, PipelineReportsTheFailingStatementAndRunsNoneAfterIt) {
  Sql("CREATE TABLE pipeline_probe (n int8 PRIMARY KEY)");
  Params one;
  one.Int8(1);
  Params two;
  two.Int8(2);
  const char* insert = "INSERT INTO pipeline_probe VALUES ($1::int8)";
  size_t failed_at = 99;
  auto ok = admin_->ExecPipeline("probe", {{.sql = insert, .params = &one}},
                                 Clock::now() + seconds(10), &failed_at);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(failed_at, 1u);

  auto failed = admin_->ExecPipeline("probe",
                                     {{.sql = "BEGIN", .params = nullptr},
                                      {.sql = insert, .params = &two},
                                      {.sql = insert, .params = &one},  // duplicate key
                                      {.sql = "SELECT 1/0", .params = nullptr},
                                      {.sql = "COMMIT", .params = nullptr}},
                                     Clock::now() + seconds(10), &failed_at);
  ASSERT_TRUE(!failed.ok());
  EXPECT_EQ(failed.error().sqlstate, "23505");
  EXPECT_EQ(failed_at, 2u);
  // The transaction is open and failed: the statements after the error did not run.
  EXPECT_EQ(admin_->transaction_status(), PQTRANS_INERROR);
  auto rolled_back = admin_->ExecScript("probe", "ROLLBACK", Clock::now() + seconds(10));
  ASSERT_TRUE(rolled_back.ok());
  EXPECT_EQ(SqlInt("SELECT count(*) FROM pipeline_probe"), 1);
  EXPECT_TRUE(admin_->usable());
}

// One combined transaction (PublishCombiner's unit of work): every request keeps its own
// outcome. A request failing admission stores nothing and does not fail the others; an item an
// earlier request of the same transaction stores is a duplicate for the later one; an item stored
// before is a duplicate for all.
TEST_F(PostgresStoreTest, CombinedTransactionKeepsEachRequestsOwnOutcome) {
  // verifies: API-220
  // verifies: API-222
  // verifies: API-223
  auto store = Open();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE((store->CommitPublish(Request({Item(GroupTopic(4), "stored before")}))).ok());
  ConnectionPool pool(PrimaryPoolOptions());

  CommitPublishRequest first = Request({Item(GroupTopic(1), "a"), Item(GroupTopic(2), "shared")});
  PublishItem failing = Item(GroupTopic(3), "fails");
  failing.pending_failure = InvalidArgument("bad payload");
  CommitPublishRequest second = Request({Item(GroupTopic(2), "shared"), failing});
  CommitPublishRequest third = Request({Item(GroupTopic(2), "shared"), Item(GroupTopic(1), "c"),
                                        Item(GroupTopic(4), "stored before")});
  // A pending failure on an item that is a duplicate does not fail its request (API-222).
  PublishItem failing_duplicate = Item(GroupTopic(2), "shared");
  failing_duplicate.pending_failure = InvalidArgument("bad payload");
  CommitPublishRequest fourth = Request({failing_duplicate});

  auto results = CommitPublishBatchOn(pool, PublishBounds{}, {&first, &second, &third, &fourth});
  ASSERT_EQ(results.size(), 4u);
  ASSERT_TRUE(results[0].ok());
  ASSERT_TRUE(!results[1].ok());
  ASSERT_TRUE(results[2].ok());
  ASSERT_TRUE(results[3].ok());

  const auto& r1 = results[0].value();
  const auto& e2 = results[1].error();
  const auto& r3 = results[2].value();
  const auto& r4 = results[3].value();
  EXPECT_EQ(e2.kind, ErrorKind::kAdmission);
  EXPECT_EQ(e2.item, 1u);
  EXPECT_EQ(e2.admission.message(), "bad payload");

  EXPECT_EQ(r1.duplicate, (std::vector<bool>{false, false}));
  EXPECT_LT(r1.metas[0].sequence_id, r1.metas[1].sequence_id);
  EXPECT_EQ(r3.duplicate, (std::vector<bool>{true, false, true}));
  EXPECT_EQ(r3.metas[0].sequence_id, r1.metas[1].sequence_id);
  EXPECT_EQ(r3.metas[0].server_ns, r1.metas[1].server_ns);
  EXPECT_GT(r3.metas[1].sequence_id, r1.metas[1].sequence_id);
  EXPECT_EQ(r4.duplicate, (std::vector<bool>{true}));
  EXPECT_EQ(r4.metas[0].sequence_id, r1.metas[1].sequence_id);

  // Stored: the earlier row plus a, shared, c. Nothing of the failed request.
  EXPECT_EQ(SqlInt("SELECT count(*) FROM envelopes"), 4);
  Params fails;
  fails.Bytea(GroupTopic(3));
  EXPECT_EQ(SqlInt("SELECT count(*) FROM envelopes WHERE topic = $1::bytea", fails), 0);
}

// The same transaction without a pending failure takes the one-round-trip path, where the
// duplicate check runs inside the insert statement: copies within a request, copies across
// requests and rows stored before all report the one stored row, and ids follow input order.
TEST_F(PostgresStoreTest, OneRoundTransactionMergesEveryKindOfDuplicate) {
  // verifies: API-221
  // verifies: API-222
  // verifies: ARC-030
  auto store = Open();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE((store->CommitPublish(Request({Item(GroupTopic(4), "stored before")}))).ok());
  ConnectionPool pool(PrimaryPoolOptions());

  CommitPublishRequest first =
      Request({Item(GroupTopic(2), "b"), Item(GroupTopic(1), "a"), Item(GroupTopic(2), "b")});
  CommitPublishRequest second = Request(
      {Item(GroupTopic(4), "stored before"), Item(GroupTopic(1), "a"), Item(GroupTopic(3), "c")});
  auto results = CommitPublishBatchOn(pool, PublishBounds{}, {&first, &second});
  ASSERT_EQ(results.size(), 2u);
  ASSERT_TRUE(results[0].ok()) << Describe(results[0]);
  ASSERT_TRUE(results[1].ok()) << Describe(results[1]);
  const auto& r1 = results[0].value();
  const auto& r2 = results[1].value();
  EXPECT_EQ(r1.duplicate, (std::vector<bool>{false, false, true}));
  EXPECT_EQ(r2.duplicate, (std::vector<bool>{true, true, false}));
  // New rows in input order: b, a, c.
  EXPECT_LT(r1.metas[0].sequence_id, r1.metas[1].sequence_id);
  EXPECT_LT(r1.metas[1].sequence_id, r2.metas[2].sequence_id);
  EXPECT_EQ(r1.metas[2].sequence_id, r1.metas[0].sequence_id);
  EXPECT_EQ(r2.metas[1].sequence_id, r1.metas[1].sequence_id);
  EXPECT_LT(r2.metas[0].sequence_id, r1.metas[0].sequence_id);  // the row stored before
  // One server_ns for the transaction's rows; each meta names its own input.
  EXPECT_EQ(r1.metas[0].server_ns, r2.metas[2].server_ns);
  EXPECT_EQ(r2.metas[2].topic, GroupTopic(3));
  EXPECT_GT(r1.metas[0].expiry_ns, r1.metas[0].server_ns);
  EXPECT_EQ(SqlInt("SELECT count(*) FROM envelopes"), 4);
  EXPECT_EQ(SqlInt("SELECT count(*) FROM topic_watermark"), 4);
  Params topic;
  topic.Bytea(GroupTopic(2));
  EXPECT_EQ(SqlInt("SELECT last_sequence_id FROM topic_watermark WHERE topic = $1::bytea", topic),
            r1.metas[0].sequence_id);
}

// Many concurrent publishers through the store's combiner, with duplicates across requests and
// requests that fail admission: every acknowledged row is stored once, every failed request
// stored nothing, and every duplicate reports the one stored id.
TEST_F(PostgresStoreTest, ConcurrentCombinedPublishesKeepEachRequestsOwnOutcome) {
  // verifies: API-220
  // verifies: API-222
  PostgresOptions options = db_->Options(false);
  options.max_connections = 16;
  auto store = Open(options);
  ASSERT_NE(store, nullptr);
  constexpr int kThreads = 16;
  constexpr int kPublishes = 30;
  struct Outcome {
    int thread;
    int round;
    StoreResult<CommitPublishResult> result = NotPublished();
  };
  std::vector<std::vector<Outcome>> outcomes(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPublishes; ++i) {
        PublishItem own = Item(GroupTopic(static_cast<uint8_t>(t % 5)),
                               "own/" + std::to_string(t) + "/" + std::to_string(i));
        if ((t + i) % 7 == 0) {
          own.pending_failure = InvalidArgument("bad payload");
        }
        // Every thread publishes the same "shared/i" in round i.
        PublishItem shared = Item(GroupTopic(9), "shared/" + std::to_string(i));
        outcomes[t].push_back(
            Outcome{t, i, store->CommitPublish(Request({std::move(own), std::move(shared)}))});
      }
    });
  }
  for (auto& thread : threads) {
    thread.join();
  }
  int64_t stored = 0;
  std::map<int, std::set<int64_t>> shared_ids;  // round -> ids reported for "shared/round"
  std::map<int, int> shared_stored_here;        // round -> requests that stored it
  std::set<int64_t> own_ids;
  for (const auto& per_thread : outcomes) {
    for (const Outcome& o : per_thread) {
      if ((o.thread + o.round) % 7 == 0) {
        ASSERT_TRUE(!o.result.ok());
        EXPECT_EQ(o.result.error().kind, ErrorKind::kAdmission);
        EXPECT_EQ(o.result.error().item, 0u);
        continue;
      }
      ASSERT_TRUE(o.result.ok()) << o.result.error().message;
      const auto& r = o.result.value();
      EXPECT_FALSE(r.duplicate[0]);
      EXPECT_TRUE(own_ids.insert(r.metas[0].sequence_id).second);
      ++stored;
      shared_ids[o.round].insert(r.metas[1].sequence_id);
      if (!r.duplicate[1]) {
        ++shared_stored_here[o.round];
        EXPECT_LT(r.metas[0].sequence_id, r.metas[1].sequence_id);
      }
    }
  }
  for (const auto& [round, ids] : shared_ids) {
    EXPECT_EQ(ids.size(), 1u) << "round " << round;
    EXPECT_EQ(shared_stored_here[round], 1) << "round " << round;
    EXPECT_FALSE(own_ids.contains(*ids.begin()));
  }
  stored += static_cast<int64_t>(shared_ids.size());
  EXPECT_EQ(SqlInt("SELECT count(*) FROM envelopes"), stored);
  EXPECT_EQ(SqlInt("SELECT count(DISTINCT sequence_id) FROM envelopes"), stored);
  EXPECT_EQ(store->released_open_transactions(), 0u);
}

TEST_F(PostgresStoreTest, ConcurrentDuplicatePublishesBothSucceedWithOneId) {
  // verifies: API-222
  // Two instances on one database: one instance never runs two transactions on a topic at once
  // (its combiner keeps the second queued), so concurrent copies come from different instances.
  auto store = Open();
  ASSERT_NE(store, nullptr);
  auto other_instance = Open();
  ASSERT_NE(other_instance, nullptr);
  const std::string topic = GroupTopic(1);
  // Hold the topic's lock so that both publishers queue on it, then let them go together.
  LockTopic(topic);

  PublishItem plain = Item(topic, "same envelope");
  PublishItem failing = plain;  // its own validation failed, but a concurrent copy commits
  failing.pending_failure = InvalidArgument("validation failed");
  StoreResult<CommitPublishResult> results[2] = {NotPublished(), NotPublished()};
  std::thread a([&] { results[0] = store->CommitPublish(Request({plain})); });
  ASSERT_TRUE(WaitFor([&] { return WaitingAdvisoryLocks() == 1; }));
  std::thread b([&] { results[1] = other_instance->CommitPublish(Request({plain})); });
  ASSERT_TRUE(WaitFor([&] { return WaitingAdvisoryLocks() == 2; }));
  UnlockTopic(topic);
  a.join();
  b.join();

  ASSERT_TRUE(results[0].ok()) << Describe(results[0]);
  ASSERT_TRUE(results[1].ok()) << Describe(results[1]);
  const auto& r0 = results[0].value();
  const auto& r1 = results[1].value();
  EXPECT_EQ(r0.metas[0].sequence_id, r1.metas[0].sequence_id);
  EXPECT_EQ(r0.metas[0].server_ns, r1.metas[0].server_ns);
  EXPECT_NE(r0.duplicate[0], r1.duplicate[0]);  // one stored it, the other found it

  // A copy whose own validation failed still succeeds once the other copy committed.
  LockTopic(topic);
  StoreResult<CommitPublishResult> late = NotPublished();
  std::thread c([&] { late = store->CommitPublish(Request({failing})); });
  ASSERT_TRUE(WaitFor([&] { return WaitingAdvisoryLocks() == 1; }));
  UnlockTopic(topic);
  c.join();
  ASSERT_TRUE(late.ok()) << Describe(late);
  EXPECT_TRUE(late.value().duplicate[0]);
  EXPECT_EQ(late.value().metas[0].sequence_id, r0.metas[0].sequence_id);
  EXPECT_EQ(SqlInt("SELECT count(*) FROM envelopes"), 1);
}

TEST_F(PostgresStoreTest, IdentityHeadThatMovedWhileWaitingIsStaleHistory) {
  // verifies: API-232
  // verifies: ARC-032
  auto store = Open();
  ASSERT_NE(store, nullptr);
  const std::string inbox = IdentityTopic(1);
  // The publisher validated against an empty history, then waits for the identity lock while
  // another identity update commits: the fresh head check under the lock sees it.
  auto holder = db_->Connect(Database::kPrimary);
  ASSERT_TRUE(holder.ok());
  Sql("BEGIN", holder->get());
  Sql("SELECT pg_advisory_xact_lock(0, 1)", holder->get());
  StoreResult<CommitPublishResult> result = NotPublished();
  std::thread publisher([&] {
    result = store->CommitPublish(
        Request({Item(GroupTopic(1), "group row"), IdentityItem(inbox, "u2", /*head=*/0)}));
  });
  ASSERT_TRUE(WaitFor([&] { return WaitingAdvisoryLocks() == 1; }));
  // What a concurrent identity publish would have committed (as the lock holder).
  Params row;
  row.Bytea(inbox);
  Sql("WITH s AS (SELECT nextval('envelope_sequence') AS id), "
      "i AS (INSERT INTO envelopes SELECT s.id, $1::bytea, 1, NULL, "
      "decode(repeat('ee', 32), 'hex'), false, '\\x01', false, NULL FROM s) "
      "INSERT INTO topic_watermark SELECT $1::bytea, s.id FROM s",
      row, holder->get());
  Sql("COMMIT", holder->get());
  publisher.join();
  ASSERT_EQ(KindOf(result), ErrorKind::kStaleHistory) << Describe(result);
  EXPECT_EQ(SqlInt("SELECT count(*) FROM envelopes"), 1);  // nothing of the request stored
  EXPECT_EQ(store->released_open_transactions(), 0u);
}

TEST_F(PostgresStoreTest, IdentityChangesAreProjectedWithGuards) {
  // verifies: STORE.md 2.2
  auto store = Open();
  ASSERT_NE(store, nullptr);
  const std::string inbox = IdentityTopic(2);
  PublishItem add = IdentityItem(inbox, "add", 0);
  add.identity_changes = {{.identifier = "0xabc", .identifier_kind = 1, .added = true},
                          {.identifier = "0xdef", .identifier_kind = 1, .added = true}};
  auto r1 = store->CommitPublish(Request({add}));
  ASSERT_TRUE(r1.ok()) << Describe(r1);
  int64_t u1 = r1.value().metas[0].sequence_id;

  PublishItem revoke = IdentityItem(inbox, "revoke", u1);
  revoke.identity_changes = {{.identifier = "0xabc", .identifier_kind = 1, .added = false}};
  auto r2 = store->CommitPublish(Request({revoke}));
  ASSERT_TRUE(r2.ok()) << Describe(r2);
  int64_t u2 = r2.value().metas[0].sequence_id;

  Params inbox_id;
  inbox_id.Bytea(std::string_view(inbox).substr(1));
  PgResult rows =
      Sql("SELECT identifier, identifier_kind::int4, association_sequence_id, "
          "coalesce(revocation_sequence_id, 0) FROM identifier_association "
          "WHERE inbox_id = $1::bytea ORDER BY identifier",
          inbox_id);
  ASSERT_EQ(rows.rows(), 2);
  EXPECT_EQ(rows.Bytes(0, 0), "0xabc");
  EXPECT_EQ(rows.Int4(0, 1), 1);
  EXPECT_EQ(rows.Int8(0, 2), u1);
  EXPECT_EQ(rows.Int8(0, 3), u2);
  EXPECT_EQ(rows.Bytes(1, 0), "0xdef");
  EXPECT_EQ(rows.Int8(1, 3), 0);

  // Re-adding with a newer update clears the revocation.
  PublishItem readd = IdentityItem(inbox, "readd", u2);
  readd.identity_changes = {{.identifier = "0xabc", .identifier_kind = 1, .added = true}};
  auto r3 = store->CommitPublish(Request({readd}));
  ASSERT_TRUE(r3.ok()) << Describe(r3);
  int64_t u3 = r3.value().metas[0].sequence_id;
  rows = Sql(
      "SELECT association_sequence_id, revocation_sequence_id IS NULL FROM identifier_association "
      "WHERE inbox_id = $1::bytea AND identifier = '0xabc'",
      inbox_id);
  ASSERT_EQ(rows.rows(), 1);
  EXPECT_EQ(rows.Int8(0, 0), u3);
  EXPECT_TRUE(rows.Bool(0, 1));
}

TEST_F(PostgresStoreTest, StatementTimeoutWhileWaitingForATopicLockIsTimeout) {
  // verifies: ARC-051
  PostgresOptions options = db_->Options(false);
  options.statement_timeout_ms = 200;
  auto store = Open(options);
  ASSERT_NE(store, nullptr);
  const std::string topic = GroupTopic(3);
  LockTopic(topic);
  auto start = Clock::now();
  auto result = store->CommitPublish(Request({Item(topic, "blocked")}));
  auto took = Clock::now() - start;
  EXPECT_EQ(KindOf(result), ErrorKind::kTimeout) << Describe(result);
  EXPECT_LT(took, seconds(3));
  UnlockTopic(topic);

  // The connection went back to the pool clean; the next publish goes through.
  auto ok = store->CommitPublish(Request({Item(topic, "after")}));
  EXPECT_TRUE(ok.ok()) << Describe(ok);
  EXPECT_EQ(store->released_open_transactions(), 0u);
}

TEST_F(PostgresStoreTest, PublishLifetimeBoundsTheLockWaitInsideThePostgresServer) {
  // verifies: ARC-051
  // verifies: STORE.md 3.3
  auto store = Open();  // statement timeout 5 s
  ASSERT_NE(store, nullptr);
  const std::string topic = GroupTopic(4);
  LockTopic(topic);
  CommitPublishRequest request = Request({Item(topic, "short-lived")});
  request.deadline = Clock::now() + milliseconds(300);
  auto start = Clock::now();
  auto result = store->CommitPublish(request);
  EXPECT_EQ(KindOf(result), ErrorKind::kTimeout) << Describe(result);
  EXPECT_LT(Clock::now() - start, seconds(2));
  // No backend of the store still waits for (or holds) a lock.
  EXPECT_EQ(WaitingAdvisoryLocks(), 0);
  UnlockTopic(topic);
  EXPECT_EQ(SqlInt("SELECT count(*) FROM envelopes"), 0);
}

TEST_F(PostgresStoreTest, ExpiredDeadlineFailsBeforeTouchingTheDatabase) {
  // verifies: STORE.md 3.3
  auto store = Open();
  ASSERT_NE(store, nullptr);
  CommitPublishRequest request = Request({Item(GroupTopic(1), "late")});
  request.deadline = Clock::now() - milliseconds(1);
  EXPECT_EQ(KindOf(store->CommitPublish(request)), ErrorKind::kTimeout);
}

TEST_F(PostgresStoreTest, RequestWhoseLifetimeEndsWhileQueuedFailsAloneAndStoresNothing) {
  // verifies: STORE.md 3.3 (the lifetime bounds the wait for a transaction too)
  PostgresOptions two_leaders = db_->Options(false);
  two_leaders.publish_transactions = 2;
  auto store = Open(two_leaders);
  ASSERT_NE(store, nullptr);
  const std::string topic = GroupTopic(5);
  const std::string other = GroupTopic(8);
  LockTopic(topic);
  LockTopic(other);
  // Both leaders wait on a held topic lock, each with its own transaction.
  StoreResult<CommitPublishResult> first = NotPublished(), second = NotPublished();
  std::thread a([&] { first = store->CommitPublish(Request({Item(topic, "first")})); });
  ASSERT_TRUE(WaitFor([&] { return WaitingAdvisoryLocks() == 1; }));
  std::thread b([&] { second = store->CommitPublish(Request({Item(other, "second")})); });
  ASSERT_TRUE(WaitFor([&] { return WaitingAdvisoryLocks() == 2; }));
  // Two more requests queue behind them through the asynchronous entry, so that the next free
  // leader takes both: one outlives its deadline there, the other does not.
  StartedPublishes started;
  StartedPublishes::Slot late, live;
  CommitPublishRequest expiring = Request({Item(GroupTopic(6), "late")});
  expiring.deadline = Clock::now() + milliseconds(200);
  ASSERT_TRUE(started.Start(*store, std::move(expiring), late));
  ASSERT_TRUE(started.Start(*store, Request({Item(GroupTopic(7), "live")}), live));
  std::this_thread::sleep_for(milliseconds(400));
  UnlockTopic(topic);
  UnlockTopic(other);
  a.join();
  b.join();
  ASSERT_TRUE(started.WaitUntil([&] { return late.has_value() && live.has_value(); }));
  EXPECT_TRUE(first.ok()) << Describe(first);
  EXPECT_TRUE(second.ok()) << Describe(second);
  EXPECT_TRUE(live->ok()) << Describe(*live);
  // Failed while queued, before any transaction (inside one it would fail a statement instead).
  ASSERT_EQ(KindOf(*late), ErrorKind::kTimeout) << Describe(*late);
  EXPECT_NE(late->error().message.find("waiting for a transaction"), std::string::npos)
      << Describe(*late);
  EXPECT_EQ(SqlInt("SELECT count(*) FROM envelopes"), 3);
  EXPECT_EQ(SqlInt("SELECT count(*) FROM envelopes WHERE payload = 'late'::bytea"), 0);
  EXPECT_EQ(store->released_open_transactions(), 0u);
}

// Leaders never run two transactions on one topic at once: a request on a topic another
// leader's transaction holds stays queued (in order behind it), and a free leader takes a later
// request on another topic instead of waiting for that transaction's locks.
TEST_F(PostgresStoreTest, ARequestOnAFreeTopicIsNotHeldBehindTwoOnABusyOne) {
  // verifies: STORE.md 3.1 (group commit keeps the per-topic order of ARC-031)
  PostgresOptions two_leaders = db_->Options(false);
  two_leaders.publish_transactions = 2;
  auto store = Open(two_leaders);
  ASSERT_NE(store, nullptr);
  const std::string busy = GroupTopic(5);
  LockTopic(busy);
  StartedPublishes started;
  StartedPublishes::Slot first, second, free;
  ASSERT_TRUE(started.Start(*store, Request({Item(busy, "first")}), first));
  ASSERT_TRUE(WaitFor([&] { return WaitingAdvisoryLocks() == 1; }));
  ASSERT_TRUE(started.Start(*store, Request({Item(busy, "second")}), second));
  ASSERT_TRUE(started.Start(*store, Request({Item(GroupTopic(6), "free")}), free));
  ASSERT_TRUE(started.WaitUntil([&] { return free.has_value(); }));
  {
    auto lock = started.Lock();
    EXPECT_TRUE(free->ok()) << Describe(*free);
    EXPECT_FALSE(first.has_value());
    EXPECT_FALSE(second.has_value());
  }
  // The second request on the busy topic never reached the database while the first held it.
  EXPECT_EQ(WaitingAdvisoryLocks(), 1);
  UnlockTopic(busy);
  ASSERT_TRUE(started.WaitUntil([&] { return first.has_value() && second.has_value(); }));
  ASSERT_TRUE(first->ok()) << Describe(*first);
  ASSERT_TRUE(second->ok()) << Describe(*second);
  EXPECT_LT(first->value().metas[0].sequence_id, second->value().metas[0].sequence_id);
  EXPECT_EQ(SqlInt("SELECT count(*) FROM envelopes"), 3);
}

TEST_F(PostgresStoreTest, StartCommitPublishTakesGroupMessagesButNotIdentityUpdates) {
  // verifies: STORE.md 3.1 (the asynchronous entry stores exactly what CommitPublish would)
  auto store = Open();
  ASSERT_NE(store, nullptr);
  StartedPublishes started;
  StartedPublishes::Slot result;
  ASSERT_TRUE(
      started.Start(*store, Request({Item(GroupTopic(1), "a"), Item(GroupTopic(2), "b")}), result));
  ASSERT_TRUE(started.WaitUntil([&] { return result.has_value(); }));
  ASSERT_TRUE(result->ok()) << Describe(*result);
  const auto& stored = result->value();
  ASSERT_EQ(stored.metas.size(), 2u);
  EXPECT_LT(stored.metas[0].sequence_id, stored.metas[1].sequence_id);
  EXPECT_EQ(SqlInt("SELECT count(*) FROM envelopes"), 2);
  // Refused, so the caller runs CommitPublish: an empty request and an identity update.
  EXPECT_FALSE(store->StartCommitPublish(std::make_shared<CommitPublishRequest>(),
                                         [](StoreResult<CommitPublishResult>) { FAIL(); }));
  PublishItem identity =
      Item(std::string(1, '\x02') + std::string(32, '\x07'), "update", RetentionClass::kExempt);
  identity.identity_validated_head = 0;
  EXPECT_FALSE(
      store->StartCommitPublish(std::make_shared<CommitPublishRequest>(Request({identity})),
                                [](StoreResult<CommitPublishResult>) { FAIL(); }));
}

TEST_F(PostgresStoreTest, ClientDeadlineCancelsAStatementTheServerDoesNotEnd) {
  // verifies: STORE.md 3.3
  auto conn = db_->Connect(Database::kPrimary);  // no server-side statement timeout
  ASSERT_TRUE(conn.ok());
  auto start = Clock::now();
  auto r = (*conn)->Exec("sleep", "SELECT pg_sleep(30)", Clock::now() + milliseconds(200));
  ASSERT_TRUE(!r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::kTimeout);
  EXPECT_LT(Clock::now() - start, seconds(3));
  // The cancel was answered: the connection stays usable.
  ASSERT_TRUE((*conn)->usable());
  EXPECT_EQ(SqlInt("SELECT 7::int8", conn->get()), 7);
}

TEST_F(PostgresStoreTest, OverflowAfterAllocationRollsBackAndCountsNothing) {
  // verifies: OPS-020
  auto store = Open();
  ASSERT_NE(store, nullptr);
  CommitPublishRequest request = Request({Item(GroupTopic(1), "a")});
  request.retention.group_message = std::numeric_limits<int64_t>::max() / 1000000000;
  EXPECT_EQ(KindOf(store->CommitPublish(request)), ErrorKind::kOverflow);
  EXPECT_EQ(SqlInt("SELECT count(*) FROM envelopes"), 0);
  EXPECT_EQ(SqlInt("SELECT count(*) FROM topic_watermark"), 0);
  EXPECT_EQ(store->released_open_transactions(), 0u);
}

// ARC-034 held inside the server: the watermark check shares the round trip with the COMMIT, so a
// topic whose watermark cannot advance (here one set above every id the sequence will draw) must
// abort the transaction before that COMMIT runs.
TEST_F(PostgresStoreTest, AWatermarkThatCannotAdvanceFailsThePublishAndStoresNothing) {
  // verifies: ARC-034
  auto store = Open();
  ASSERT_NE(store, nullptr);
  const std::string stuck = GroupTopic(1);
  Params topic;
  topic.Bytea(stuck);
  Sql("INSERT INTO topic_watermark (topic, last_sequence_id) VALUES ($1::bytea, 9000000000000)",
      topic);
  auto failed = store->CommitPublish(Request({Item(GroupTopic(2), "a"), Item(stuck, "b")}));
  EXPECT_EQ(KindOf(failed), ErrorKind::kInvariant);
  EXPECT_EQ(SqlInt("SELECT count(*) FROM envelopes"), 0);
  EXPECT_EQ(SqlInt("SELECT count(*) FROM topic_watermark"), 1);
  EXPECT_EQ(store->released_open_transactions(), 0u);
  // The connection was left clean: the next publish commits.
  auto stored = store->CommitPublish(Request({Item(GroupTopic(2), "a")}));
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ(SqlInt("SELECT count(*) FROM envelopes"), 1);
}

// ---- Connections and the pool. ----

TEST_F(PostgresStoreTest, BackendTerminatedDuringAPublishIsConnectionThenThePoolRecovers) {
  // verifies: STORE.md 3.2
  PostgresOptions options = db_->Options(false);
  options.max_connections = 1;
  auto store = Open(options);
  ASSERT_NE(store, nullptr);
  const std::string topic = GroupTopic(5);
  LockTopic(topic);
  StoreResult<CommitPublishResult> result = NotPublished();
  std::thread publisher([&] { result = store->CommitPublish(Request({Item(topic, "x")})); });
  ASSERT_TRUE(WaitFor([&] { return WaitingAdvisoryLocks() == 1; }));
  std::vector<int32_t> pids = StoreBackends("wait_event_type = 'Lock'");
  ASSERT_EQ(pids.size(), 1u);
  Params pid;
  pid.Int4(pids[0]);
  Sql("SELECT pg_terminate_backend($1::int4, 5000)", pid);
  publisher.join();
  EXPECT_EQ(KindOf(result), ErrorKind::kConnection) << Describe(result);
  UnlockTopic(topic);

  auto again = store->CommitPublish(Request({Item(topic, "x")}));
  ASSERT_TRUE(again.ok()) << Describe(again);
  EXPECT_FALSE(again.value().duplicate[0]);  // the first never committed
}

TEST_F(PostgresStoreTest, IdleConnectionTheServerEndedIsReplacedWithoutAnError) {
  // verifies: STORE.md 2.5
  PostgresOptions options = db_->Options(false);
  options.max_connections = 1;
  auto store = Open(options);
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE((store->Get(1)).ok());
  // (The migration connection Open closed may take a moment to leave pg_stat_activity.)
  ASSERT_TRUE(WaitFor([&] { return StoreBackends().size() == 1; }));
  std::vector<int32_t> pids = StoreBackends();
  ASSERT_EQ(pids.size(), 1u);
  Params pid;
  pid.Int4(pids[0]);
  Sql("SELECT pg_terminate_backend($1::int4, 5000)", pid);
  // Nothing had been sent on it, so the pool drops it at acquisition and opens another.
  auto r = store->Get(1);
  EXPECT_TRUE(r.ok()) << Describe(r);
  std::vector<int32_t> now = StoreBackends();
  ASSERT_EQ(now.size(), 1u);
  EXPECT_NE(now[0], pids[0]);
}

TEST_F(PostgresStoreTest, ReleasedOpenTransactionIsRolledBackAndCounted) {
  // verifies: STORE.md 2.5
  // verifies: ARC-060
  std::vector<std::string> warnings;
  ConnectionPool pool({.url = db_->primary_url(),
                       .setting = "database.url",
                       .max_connections = 1,
                       .statement_timeout_ms = 5000,
                       .warning_sink = [&](std::string_view w) { warnings.emplace_back(w); }});
  auto deadline = [] { return Clock::now() + seconds(10); };
  {
    auto lease = pool.Acquire(deadline());
    ASSERT_TRUE(lease.ok());
    auto& conn = *lease.value();
    ASSERT_FALSE(!(conn.ExecScript("t", "BEGIN; CREATE TABLE leaked (x int)", deadline())).ok());
  }
  EXPECT_EQ(pool.released_open_transactions(), 1u);
  ASSERT_EQ(warnings.size(), 1u);
  {
    // A failed transaction is rolled back too.
    auto lease = pool.Acquire(deadline());
    ASSERT_TRUE(lease.ok());
    auto& conn = *lease.value();
    EXPECT_EQ(conn.transaction_status(), PQTRANS_IDLE);
    (void)conn.ExecScript("t", "BEGIN; SELECT 1/0", deadline());
    EXPECT_EQ(conn.transaction_status(), PQTRANS_INERROR);
  }
  EXPECT_EQ(pool.released_open_transactions(), 2u);
  EXPECT_EQ(pool.open_connections(), 1u);  // the same connection, reused
  // The leaked table was rolled back with its transaction.
  EXPECT_EQ(SqlInt("SELECT count(*) FROM pg_tables WHERE tablename = 'leaked'"), 0);
  {
    auto lease = pool.Acquire(deadline());
    ASSERT_TRUE(lease.ok());
    EXPECT_EQ(lease.value()->transaction_status(), PQTRANS_IDLE);
  }
}

TEST_F(PostgresStoreTest, PoolAcquisitionTimesOutWhenEveryConnectionIsLeased) {
  // verifies: STORE.md 3.2
  ConnectionPool pool({.url = db_->primary_url(),
                       .setting = "database.url",
                       .max_connections = 1,
                       .statement_timeout_ms = 5000,
                       .warning_sink = {}});
  auto held = pool.Acquire(Clock::now() + seconds(10));
  ASSERT_TRUE(held.ok());
  auto second = pool.Acquire(Clock::now() + milliseconds(100));
  ASSERT_TRUE(!second.ok());
  EXPECT_EQ(second.error().kind, ErrorKind::kPoolTimeout);
}

// ---- The closed allocation boundary. ----

TEST_F(PostgresStoreTest, BoundaryAdvancesToTheLastAllocatedIdAndNeverGoesDown) {
  // verifies: API-203
  // verifies: API-291
  auto store = Open();
  ASSERT_NE(store, nullptr);
  auto first = store->AdvanceBoundary();
  ASSERT_TRUE(first.ok()) << Describe(first);
  EXPECT_FALSE(first.value().lock_timeout);
  EXPECT_EQ(first.value().boundary, 0);  // an unused sequence

  auto published = store->CommitPublish(
      Request({Item(GroupTopic(1), "a"), Item(GroupTopic(2), "b"), Item(GroupTopic(1), "c")}));
  ASSERT_TRUE(published.ok()) << Describe(published);
  int64_t last = published.value().metas[2].sequence_id;
  auto second = store->AdvanceBoundary();
  ASSERT_TRUE(second.ok()) << Describe(second);
  EXPECT_EQ(second.value().boundary, last);

  // Ids drawn by a publish that rolled back are settled too: they can never be stored.
  CommitPublishRequest overflowing = Request({Item(GroupTopic(1), "d"), Item(GroupTopic(3), "e")});
  overflowing.retention.group_message = std::numeric_limits<int64_t>::max() / 1000000000;
  ASSERT_EQ(KindOf(store->CommitPublish(overflowing)), ErrorKind::kOverflow);
  auto third = store->AdvanceBoundary();
  ASSERT_TRUE(third.ok()) << Describe(third);
  EXPECT_EQ(third.value().boundary, last + 2);
  auto read = store->ReadBoundary(Database::kPrimary);
  ASSERT_TRUE(read.ok());
  EXPECT_EQ(*read, last + 2);

  // A stored boundary above the sequence is never lowered: the attempt is an error.
  Sql("UPDATE allocation_boundary SET closed_sequence_id = 1000");
  auto backwards = store->AdvanceBoundary();
  EXPECT_EQ(KindOf(backwards), ErrorKind::kInvariant);
  EXPECT_EQ(*store->ReadBoundary(Database::kPrimary), 1000);
}

TEST_F(PostgresStoreTest, BoundaryReportsLockTimeoutWhileAPublisherHoldsTheBarrier) {
  // verifies: STORE.md 4.1
  PostgresOptions options = db_->Options(false);
  options.max_barrier_wait_ms = 100;
  auto store = Open(options);
  ASSERT_NE(store, nullptr);
  auto published = store->CommitPublish(Request({Item(GroupTopic(1), "a")}));
  ASSERT_TRUE(published.ok());

  auto publisher = db_->Connect(Database::kPrimary);
  ASSERT_TRUE(publisher.ok());
  Sql("BEGIN", publisher->get());
  Sql("SELECT pg_advisory_xact_lock_shared(0, 2)", publisher->get());
  auto start = Clock::now();
  auto blocked = store->AdvanceBoundary();
  ASSERT_TRUE(blocked.ok()) << Describe(blocked);
  EXPECT_TRUE(blocked.value().lock_timeout);
  EXPECT_LT(Clock::now() - start, seconds(3));
  EXPECT_EQ(*store->ReadBoundary(Database::kPrimary), 0);  // nothing changed
  Sql("COMMIT", publisher->get());

  auto free = store->AdvanceBoundary();
  ASSERT_TRUE(free.ok()) << Describe(free);
  EXPECT_FALSE(free.value().lock_timeout);
  EXPECT_EQ(free.value().boundary, published.value().metas[0].sequence_id);
}

TEST_F(PostgresStoreTest, BoundaryWaitsForAPublisherThatHoldsTheBarrier) {
  // verifies: STORE.md 4.2
  auto store = Open();  // barrier wait 1 s
  ASSERT_NE(store, nullptr);
  auto publisher = db_->Connect(Database::kPrimary);
  ASSERT_TRUE(publisher.ok());
  // A publisher drew an id under the shared barrier and has not committed yet.
  Sql("BEGIN", publisher->get());
  Sql("SELECT pg_advisory_xact_lock_shared(0, 2)", publisher->get());
  int64_t drawn = SqlInt("SELECT nextval('envelope_sequence')", publisher->get());
  StoreResult<BoundaryAdvance> result = StoreError{};
  std::thread task([&] { result = store->AdvanceBoundary(); });
  ASSERT_TRUE(WaitFor([&] { return WaitingAdvisoryLocks() == 1; }));
  Sql("ROLLBACK", publisher->get());
  task.join();
  ASSERT_TRUE(result.ok()) << Describe(result);
  EXPECT_FALSE(result.value().lock_timeout);
  EXPECT_EQ(result.value().boundary,
            drawn);  // settled: rolled back, never to be stored
}

// ---- The tailer's connection. ----

TEST_F(PostgresStoreTest, TailerConnectionIsNamedAndFailsAsConnectionOnceTerminated) {
  // verifies: STORE.md 2.5 (the tailer's dedicated connection, application_name)
  // verifies: STORE.md 5.3 (a lost connection is a poll failure)
  auto store = Open();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE((store->CommitPublish(Request({Item(GroupTopic(1), "a")}))).ok());
  Params db_name;
  db_name.Text(db_->name());
  constexpr const char* kTailers =
      "SELECT pid FROM pg_stat_activity WHERE application_name = 'xmtp-backend tailer' AND "
      "datname = $1::text";
  auto terminate = [&](int32_t pid) {
    Params p;
    p.Int4(pid);
    Sql("SELECT pg_terminate_backend($1::int4)", p);
    ASSERT_TRUE(WaitFor([&] {
      Params q;
      q.Int4(pid);
      return SqlInt("SELECT count(*) FROM pg_stat_activity WHERE pid = $1::int4", q) == 0;
    }));
  };

  // Terminated while idle: the next Begin fails.
  {
    auto opened = store->OpenTailReader();
    ASSERT_TRUE(opened.ok()) << Describe(opened);
    std::unique_ptr<TailReader> reader = std::move(opened).value();
    auto begin = reader->Begin();
    ASSERT_TRUE(begin.ok()) << Describe(begin);
    ASSERT_TRUE((reader->End()).ok());

    PgResult tailers = Sql(kTailers, db_name);
    ASSERT_EQ(tailers.rows(), 1);
    terminate(tailers.Int4(0, 0));
    EXPECT_EQ(KindOf(reader->Begin()), ErrorKind::kConnection);
    EXPECT_EQ(KindOf(reader->Forward(0, 10)), ErrorKind::kConnection);  // unusable from now on
  }
  // Terminated inside a snapshot: the next scan fails.
  {
    auto opened = store->OpenTailReader();
    ASSERT_TRUE(opened.ok()) << Describe(opened);
    std::unique_ptr<TailReader> reader = std::move(opened).value();
    ASSERT_TRUE((reader->Begin()).ok());
    PgResult tailers = Sql(kTailers, db_name);
    ASSERT_EQ(tailers.rows(), 1);
    terminate(tailers.Int4(0, 0));
    EXPECT_EQ(KindOf(reader->Forward(0, 10)), ErrorKind::kConnection);
    EXPECT_EQ(KindOf(reader->Begin()), ErrorKind::kConnection);
  }
  // The store's pools are untouched: reads still work, and a new tailer connects.
  EXPECT_TRUE((store->Heads({GroupTopic(1)})).ok());
  auto again = store->OpenTailReader();
  ASSERT_TRUE(again.ok()) << Describe(again);
  auto begin = again.value()->Begin();
  EXPECT_TRUE(begin.ok()) << Describe(begin);
}

// ---- The pruning pass's index (issue 35). ----

// verifies: STORE.md 9.2 rule 5 — the pass's partial index is built at the first prepare (not by
// the migrations: a deployment that does not prune never pays for it), found valid afterwards,
// and an invalid one a failed CONCURRENTLY build left behind is built again.
TEST_F(PostgresStoreTest, PreparePruningBuildsTheIndexOnceAndRebuildsAnInvalidOne) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  constexpr const char* kIndex =
      "SELECT CASE WHEN indisvalid THEN indexrelid::int8 ELSE -2 END FROM pg_index "
      "WHERE indexrelid = to_regclass('envelopes_expiry')";
  EXPECT_EQ(SqlInt(kIndex), -1);  // no row: the migrations made none
  auto ready = store->PreparePruning();
  ASSERT_TRUE(ready.ok()) << ready.error().message;
  EXPECT_TRUE(ready.value());
  const int64_t built = SqlInt(kIndex);
  EXPECT_GT(built, 0);
  ASSERT_TRUE(store->PreparePruning().ok());
  EXPECT_EQ(SqlInt(kIndex), built);  // found, not built again

  Sql("UPDATE pg_index SET indisvalid = false WHERE indexrelid = 'envelopes_expiry'::regclass");
  EXPECT_EQ(SqlInt(kIndex), -2);
  ready = store->PreparePruning();
  ASSERT_TRUE(ready.ok()) << ready.error().message;
  EXPECT_TRUE(ready.value());
  const int64_t rebuilt = SqlInt(kIndex);
  EXPECT_GT(rebuilt, 0);
  EXPECT_NE(rebuilt, built);
}

// verifies: STORE.md 9.2 rule 5 (one instance at a time: key (0, 5)); a drain stops a build
TEST_F(PostgresStoreTest, PreparePruningWaitsItsTurnAndStopsWhenCancelled) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  Sql("SELECT pg_advisory_lock(0, 5)");  // another instance's pass
  auto busy = store->PreparePruning();
  ASSERT_TRUE(busy.ok()) << busy.error().message;
  EXPECT_FALSE(busy.value());
  Sql("SELECT pg_advisory_unlock(0, 5)");

  store->CancelPreparePruning();
  auto cancelled = store->PreparePruning();
  ASSERT_FALSE(cancelled.ok());
  EXPECT_NE(cancelled.error().message.find("cancelled"), std::string::npos);
  EXPECT_EQ(SqlInt("SELECT count(*) FROM pg_index WHERE indexrelid = "
                   "to_regclass('envelopes_expiry')"),
            0);
}

// ---- The replica. ----

// Replay pauses are cluster-wide: tests that pause serialize on a lock in the `postgres`
// database, and always resume.
class ReplayPause {
 public:
  ReplayPause(Connection& admin, Connection& replica) : admin_(admin), replica_(replica) {}
  ~ReplayPause() { Resume(); }
  Status Pause() {
    auto deadline = Clock::now() + seconds(60);
    auto r = admin_.Exec("test", "SELECT pg_advisory_lock(0, 77)", deadline);
    if (!r.ok()) {
      return Unavailable(r.error().message);
    }
    locked_ = true;
    r = replica_.Exec("test", "SELECT pg_wal_replay_pause()", deadline);
    if (!r.ok()) {
      return Unavailable(r.error().message);
    }
    paused_ = true;
    // Paused means replay has actually stopped, not just been asked to.
    bool stopped = WaitFor([&] {
      auto s = replica_.Exec("test", "SELECT pg_get_wal_replay_pause_state() = 'paused'",
                             Clock::now() + seconds(10));
      return s.ok() && s.value().Bool(0, 0);
    });
    return stopped ? Status::Ok() : Unavailable("replay did not pause");
  }
  void Resume() {
    auto deadline = Clock::now() + seconds(30);
    if (paused_) {
      (void)replica_.Exec("test", "SELECT pg_wal_replay_resume()", deadline);
      paused_ = false;
    }
    if (locked_) {
      (void)admin_.Exec("test", "SELECT pg_advisory_unlock(0, 77)", deadline);
      locked_ = false;
    }
  }

 private:
  Connection& admin_;
  Connection& replica_;
  bool locked_ = false;
  bool paused_ = false;
};

class PostgresReplicaTest : public PostgresStoreTest {
 protected:
  void SetUp() override {
    PostgresStoreTest::SetUp();
    if (HasFatalFailure()) {
      return;
    }
    Status replica = db_->WaitForReplica();
    ASSERT_TRUE(replica.ok()) << replica.ToString();
    auto conn = db_->Connect(Database::kReadDatabase);
    ASSERT_TRUE(conn.ok()) << conn.status().ToString();
    replica_ = std::move(conn).value();
    // The pause lock lives in the cluster's `postgres` database, shared by every test database.
    auto cluster = Connection::Open(WithDatabase(db_->primary_url(), "postgres"), "admin", 0,
                                    Clock::now() + seconds(30));
    ASSERT_TRUE(cluster.ok());
    cluster_ = std::move(cluster).value();
  }
  void TearDown() override {
    replica_.reset();
    cluster_.reset();
    PostgresStoreTest::TearDown();
  }

  std::unique_ptr<Connection> replica_;
  std::unique_ptr<Connection> cluster_;
};

TEST_F(PostgresReplicaTest, NewestReadsTheReplicaAsAnEarlierView) {
  // verifies: OPS-009
  // verifies: OPS-010
  // verifies: API-201
  auto store = Open(db_->Options(/*with_replica=*/true));
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->has_replica());
  const std::string t = GroupTopic(1);
  const std::string u = GroupTopic(2);
  auto first = store->CommitPublish(Request({Item(t, "t1")}));
  ASSERT_TRUE(first.ok()) << Describe(first);
  int64_t t1 = first.value().metas[0].sequence_id;
  ASSERT_TRUE(WaitFor([&] {
    auto n = store->Newest({t}, false);
    return n.ok() && n.value().size() == 1;
  }));

  ReplayPause pause(*cluster_, *replica_);
  Status paused = pause.Pause();
  ASSERT_TRUE(paused.ok()) << paused.ToString();
  auto second = store->CommitPublish(Request({Item(t, "t2"), Item(u, "u1")}));
  ASSERT_TRUE(second.ok()) << Describe(second);
  int64_t t2 = second.value().metas[0].sequence_id;

  // The replica lacks a suffix of each topic: t's newest is still t1, u is absent.
  auto lagged = store->Newest({u, t}, /*with_payload=*/true);
  ASSERT_TRUE(lagged.ok()) << Describe(lagged);
  const auto& rows = lagged.value();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].meta.sequence_id, t1);
  EXPECT_EQ(rows[0].payload, "t1");
  // Query and Get read the primary: they see the new rows at once (API-202, OPS-009).
  auto page = store->Query({{t, 0}, {u, 0}}, 10);
  ASSERT_TRUE(page.ok());
  EXPECT_EQ(page.value().envelopes.size(), 3u);
  auto got = store->Get(t2);
  ASSERT_TRUE(got.ok());
  EXPECT_TRUE(got.value().has_value());
  // The boundary on the read database lags the same way.
  auto advance = store->AdvanceBoundary();
  ASSERT_TRUE(advance.ok()) << Describe(advance);
  const BoundaryAdvance advanced = advance.value();
  EXPECT_EQ(*store->ReadBoundary(Database::kPrimary), advanced.boundary);
  EXPECT_EQ(*store->ReadBoundary(Database::kReadDatabase), 0);

  pause.Resume();
  EXPECT_TRUE(WaitFor([&] {
    auto n = store->Newest({u, t}, false);
    if (!n.ok()) {
      return false;
    }
    const auto& v = n.value();
    return v.size() == 2 && v[1].meta.sequence_id == t2;
  }));
  EXPECT_TRUE(WaitFor([&] {
    auto b = store->ReadBoundary(Database::kReadDatabase);
    return b.ok() && *b == advanced.boundary;
  }));
}

TEST_F(PostgresReplicaTest, NewestOnPrimaryAndQueryBeforeSeeWhatThePausedReplicaLacks) {
  // verifies: issue 33 G6 / Q3 (a key package uploaded a moment ago is found at once)
  // verifies: issue 33 G1 (QueryBefore reads the primary)
  auto store = Open(db_->Options(/*with_replica=*/true));
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->has_replica());
  const std::string k = KeyPackageTopic(1);
  auto first = store->CommitPublish(Request({Item(k, "k1", RetentionClass::kKeyPackage)}));
  ASSERT_TRUE(first.ok()) << Describe(first);
  const int64_t k1 = first.value().metas[0].sequence_id;
  ASSERT_TRUE(WaitFor([&] {
    auto n = store->Newest({k}, false);
    return n.ok() && n.value().size() == 1;
  }));

  ReplayPause pause(*cluster_, *replica_);
  Status paused = pause.Pause();
  ASSERT_TRUE(paused.ok()) << paused.ToString();
  auto second = store->CommitPublish(Request({Item(k, "k2", RetentionClass::kKeyPackage)}));
  ASSERT_TRUE(second.ok()) << Describe(second);
  const int64_t k2 = second.value().metas[0].sequence_id;

  auto lagged = store->Newest({k}, /*with_payload=*/true);
  ASSERT_TRUE(lagged.ok()) << Describe(lagged);
  ASSERT_EQ(lagged.value().size(), 1u);
  EXPECT_EQ(lagged.value()[0].meta.sequence_id, k1);  // the replica has not replayed k2
  auto primary = store->NewestOnPrimary({k}, /*with_payload=*/true);
  ASSERT_TRUE(primary.ok()) << Describe(primary);
  ASSERT_EQ(primary.value().size(), 1u);
  EXPECT_EQ(primary.value()[0].meta.sequence_id, k2);
  EXPECT_EQ(primary.value()[0].payload, "k2");
  auto page = store->QueryBefore(k, 0, 10, UINT64_MAX);
  ASSERT_TRUE(page.ok()) << Describe(page);
  ASSERT_EQ(page.value().envelopes.size(), 2u);
  EXPECT_EQ(page.value().envelopes[0].meta.sequence_id, k2);
  EXPECT_EQ(page.value().envelopes[1].meta.sequence_id, k1);
}

TEST_F(PostgresReplicaTest, StreamReadsUseTheReplica) {
  // verifies: STORE.md 6 (head capture, catch-up history and the tailer on the read database)
  auto store = Open(db_->Options(/*with_replica=*/true));
  ASSERT_NE(store, nullptr);
  const std::string t = GroupTopic(1);
  const std::string u = GroupTopic(2);
  auto first = store->CommitPublish(Request({Item(t, "t1")}));
  ASSERT_TRUE(first.ok()) << Describe(first);
  const int64_t t1 = first.value().metas[0].sequence_id;
  auto advance = store->AdvanceBoundary();
  ASSERT_TRUE(advance.ok()) << Describe(advance);
  ASSERT_EQ(advance.value().boundary, t1);
  ASSERT_TRUE(WaitFor([&] {
    auto b = store->ReadBoundary(Database::kReadDatabase);
    return b.ok() && *b == t1;
  }));

  ReplayPause pause(*cluster_, *replica_);
  Status paused = pause.Pause();
  ASSERT_TRUE(paused.ok()) << paused.ToString();
  auto second = store->CommitPublish(Request({Item(t, "t2"), Item(u, "u1")}));
  ASSERT_TRUE(second.ok()) << Describe(second);
  advance = store->AdvanceBoundary();
  ASSERT_TRUE(advance.ok()) << Describe(advance);
  EXPECT_GT(advance.value().boundary, t1);  // on the primary

  // The replica has not replayed the second publish: every stream read shows the earlier view.
  auto heads = store->Heads({t, u});
  ASSERT_TRUE(heads.ok()) << Describe(heads);
  EXPECT_EQ(heads.value(), std::vector<int64_t>({t1, 0}));
  auto caught_up = store->CatchUp({{t, 0, kMaxSequenceId}, {u, 0, kMaxSequenceId}}, 64, 1 << 20);
  ASSERT_TRUE((caught_up.ok())) << Describe(caught_up);
  const auto& ranges = caught_up.value();
  ASSERT_EQ(ranges.size(), 2u);
  ASSERT_EQ(ranges[0].size(), 1u);
  EXPECT_EQ(ranges[0][0].meta.sequence_id, t1);
  EXPECT_TRUE(ranges[1].empty());

  auto opened = store->OpenTailReader();
  ASSERT_TRUE(opened.ok()) << Describe(opened);
  std::unique_ptr<TailReader> reader = std::move(opened).value();
  auto begin = reader->Begin();
  ASSERT_TRUE(begin.ok()) << Describe(begin);
  EXPECT_EQ(begin.value(), t1);  // the boundary as the replica shows it
  auto forward = reader->Forward(0, 10);
  ASSERT_TRUE(forward.ok()) << Describe(forward);
  ASSERT_EQ(forward.value().size(), 1u);
  EXPECT_EQ(forward.value()[0].sequence_id, t1);
  ASSERT_TRUE((reader->End()).ok());
  // The tailer's connection is on the replica, not the primary.
  Params db_name;
  db_name.Text(db_->name());
  constexpr const char* kTailers =
      "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'xmtp-backend tailer' AND "
      "datname = $1::text";
  EXPECT_EQ(SqlInt(kTailers, db_name, replica_.get()), 1);
  EXPECT_EQ(SqlInt(kTailers, db_name), 0);
}

// Start-up's awaited wait for the read database (store/read_database_wait.h), run to completion.
// With `cancel_after`, the wait's timer is cancelled then, as a termination signal would.
Status AwaitReadDatabase(Store& store, Clock::time_point deadline,
                         milliseconds poll_interval = milliseconds(10),
                         std::optional<milliseconds> cancel_after = std::nullopt) {
  boost::asio::io_context io{1};
  boost::asio::steady_timer timer(io);
  boost::asio::steady_timer signal(io);  // destroyed before io
  Status waited = Status(StatusCode::kUnknown, "not run");
  boost::asio::co_spawn(
      io,
      [&]() -> boost::asio::awaitable<void> {
        waited = co_await WaitForReadDatabase(store, timer, poll_interval, deadline);
      },
      boost::asio::detached);
  if (cancel_after) {
    signal.expires_after(*cancel_after);
    signal.async_wait([&timer](boost::system::error_code) { timer.cancel(); });
  }
  io.run();
  return waited;
}

TEST_F(PostgresReplicaTest, StartupWaitsForTheReplicaToReplayTheMigrations) {
  // verifies: STORE.md 2.6
  // verifies: STORE.md 6
  {
    ReplayPause pause(*cluster_, *replica_);
    Status paused = pause.Pause();
    ASSERT_TRUE(paused.ok()) << paused.ToString();
    std::atomic<bool> returned{false};
    Result<std::unique_ptr<PostgresStore>> opened = Status(StatusCode::kUnknown, "not run");
    Status caught_up = Status(StatusCode::kUnknown, "not run");
    std::thread starter([&] {
      const Clock::time_point deadline = Clock::now() + seconds(60);
      opened = PostgresStore::Open(db_->Options(/*with_replica=*/true), deadline);
      if (opened.ok()) {
        caught_up = AwaitReadDatabase(*opened.value(), deadline);
      }
      returned.store(true);
    });
    // The primary is migrated, the replica cannot have replayed it: start-up is still waiting.
    // (Catalog rows are transactional: the table shows once the migration has committed.)
    ASSERT_TRUE(WaitFor([&] {
      return SqlInt("SELECT count(*) FROM pg_class WHERE relname = 'push_cursor'") == 1;
    }));
    EXPECT_FALSE(returned.load());
    pause.Resume();
    starter.join();
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    ASSERT_TRUE(caught_up.ok()) << caught_up.ToString();
    // The wait ended only once the replica had replayed the migrations.
    EXPECT_EQ(SqlInt("SELECT count(*) FROM schema_migrations", replica_.get()),
              static_cast<int64_t>(EmbeddedMigrations().size()));
  }
  {
    // Bounded by the startup deadline: the replica lags the primary's newest WAL position.
    auto store = Open();
    ASSERT_NE(store, nullptr);
    ReplayPause pause(*cluster_, *replica_);
    Status paused = pause.Pause();
    ASSERT_TRUE(paused.ok()) << paused.ToString();
    ASSERT_TRUE((store->CommitPublish(Request({Item(GroupTopic(1), "wal")}))).ok());
    auto start = Clock::now();
    const Clock::time_point deadline = Clock::now() + seconds(2);
    auto lagging = PostgresStore::Open(db_->Options(/*with_replica=*/true), deadline);
    ASSERT_TRUE(lagging.ok()) << lagging.status().ToString();
    Status waited = AwaitReadDatabase(*lagging.value(), deadline);
    ASSERT_FALSE(waited.ok());
    EXPECT_EQ(waited.code(), StatusCode::kDeadlineExceeded);
    // The deadline may fire between polls or inside a poll's statement: either way the error
    // names the setting.
    EXPECT_TRUE(waited.message().starts_with("database.replica_url")) << waited.message();
    EXPECT_LT(Clock::now() - start, seconds(5));
  }
}

TEST_F(PostgresReplicaTest, StartupWaitEndsCancelledWhenItsTimerIsCancelled) {
  ReplayPause pause(*cluster_, *replica_);
  Status paused = pause.Pause();
  ASSERT_TRUE(paused.ok()) << paused.ToString();
  auto store = Open();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE((store->CommitPublish(Request({Item(GroupTopic(2), "wal")}))).ok());
  const Clock::time_point deadline = Clock::now() + seconds(60);
  auto lagging = PostgresStore::Open(db_->Options(/*with_replica=*/true), deadline);
  ASSERT_TRUE(lagging.ok()) << lagging.status().ToString();
  // A termination signal during start-up cancels the timer between two checks (a 30 s poll).
  const auto start = Clock::now();
  Status waited = AwaitReadDatabase(*lagging.value(), deadline, seconds(30), milliseconds(200));
  EXPECT_EQ(waited.code(), StatusCode::kCancelled) << waited.ToString();
  EXPECT_LT(Clock::now() - start, seconds(10));
}

}  // namespace
}  // namespace postgres
}  // namespace xb::store
