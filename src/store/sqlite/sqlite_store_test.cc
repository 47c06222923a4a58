#include "store/sqlite/sqlite_store.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "store/push_conformance.h"
#include "store/sqlite/connection.h"
#include "store/sqlite/reads.h"
#include "store/sqlite/test_support.h"
#include "store/store_conformance.h"
#include "store/store_test_data.h"

namespace xb::store::sqlite {
namespace {

// A SqliteStore in its own temporary directory, removed after the store closes.
std::unique_ptr<Store> MakeTempSqliteStore() {
  auto dir = std::make_unique<TempDir>();
  auto store = SqliteStore::Open({.path = dir->File("xmtp.db"), .max_readers = 4});
  if (!store.ok()) {
    ADD_FAILURE() << store.status().ToString();
    return nullptr;
  }
  return std::make_unique<OwningStore<TempDir>>(std::move(dir), std::move(store).value());
}

INSTANTIATE_TEST_SUITE_P(Sqlite, StoreConformanceTest,
                         ::testing::Values(StoreFactory(&MakeTempSqliteStore)),
                         [](const auto&) { return std::string("Sqlite"); });
INSTANTIATE_TEST_SUITE_P(Sqlite, PushConformanceTest,
                         ::testing::Values(StoreFactory(&MakeTempSqliteStore)),
                         [](const auto&) { return std::string("Sqlite"); });

// ---- Engine-specific tests. ----

using test_data::CommitLogTopic;
using test_data::GroupTopic;
using test_data::HashOf;
using test_data::IdentityItem;
using test_data::IdentityTopic;
using test_data::Item;
using test_data::KeyPackageTopic;
using test_data::Request;
using test_data::Topic;
using test_data::WelcomeTopic;

class SqliteStoreTest : public ::testing::Test {
 protected:
  SqliteOptions Options() const { return {.path = dir_.File("xmtp.db"), .max_readers = 2}; }
  std::unique_ptr<SqliteStore> MustOpen() {
    auto store = SqliteStore::Open(Options());
    EXPECT_TRUE(store.ok()) << store.status().ToString();
    return store.ok() ? std::move(store).value() : nullptr;
  }
  // A direct connection to the database file, for inspecting it while no store is open.
  std::unique_ptr<Connection> Raw() {
    auto conn = Connection::Open(dir_.File("xmtp.db"), Connection::Role::kWriter, 1000);
    EXPECT_TRUE(conn.ok()) << conn.status().ToString();
    return conn.ok() ? std::move(conn).value() : nullptr;
  }
  int64_t ScalarInt(Connection& conn, const char* sql) {
    StatementUse row = conn.Use(sql, "test");
    EXPECT_TRUE(row.Step()) << sql;
    return row.ColumnInt64(0);
  }

  TempDir dir_;
};

TEST_F(SqliteStoreTest, SecondOpenOfTheSameFileIsRefusedWithoutNamingThePath) {
  // verifies: STORE.md 8 (one process per database file)
  std::unique_ptr<SqliteStore> first = MustOpen();
  ASSERT_NE(first, nullptr);
  auto second = SqliteStore::Open(Options());
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(second.status().message(),
            "database.url: the database is in use by another backend process");
  first.reset();
  EXPECT_NE(MustOpen(), nullptr);  // the lock went with the first store
}

TEST_F(SqliteStoreTest, MissingDirectoryIsRefused) {
  auto store = SqliteStore::Open({.path = dir_.File("absent/xmtp.db")});
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(store.status().message(), "database.url: the database directory does not exist");
}

TEST_F(SqliteStoreTest, FileThatIsNotADatabaseIsRefused) {
  std::ofstream(dir_.File("xmtp.db")) << std::string(8192, 'x');
  auto store = SqliteStore::Open(Options());
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(store.status().message().rfind("database.url: ", 0), 0u) << store.status().message();
  EXPECT_EQ(store.status().message().find(dir_.path()), std::string::npos);
}

TEST_F(SqliteStoreTest, ReopenKeepsDataAndTheBoundaryNeverDecreases) {
  // verifies: API-291
  // verifies: API-288
  int64_t last = 0;
  {
    std::unique_ptr<SqliteStore> store = MustOpen();
    ASSERT_NE(store, nullptr);
    EXPECT_EQ(store->LastCommittedId(), 0);
    auto result = store->CommitPublish(
        Request({Item(GroupTopic(1), "a"), Item(GroupTopic(2), "b"), Item(GroupTopic(1), "c")}));
    ASSERT_TRUE(IsOk(result)) << Describe(result);
    last = result.value().metas[2].sequence_id;
    EXPECT_EQ(store->LastCommittedId(), last);
  }
  {
    std::unique_ptr<Connection> raw = Raw();
    ASSERT_NE(raw, nullptr);
    EXPECT_EQ(ScalarInt(*raw, "SELECT closed_sequence_id FROM allocation_boundary"), last);
  }
  std::unique_ptr<SqliteStore> store = MustOpen();
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->LastCommittedId(), last);
  auto got = store->Get(last);
  ASSERT_TRUE(IsOk(got));
  ASSERT_TRUE(got.value().has_value());
  EXPECT_EQ(got.value()->payload, "c");

  // Ids continue above the persisted boundary: contiguous on this engine (STORE.md 8).
  auto next = store->CommitPublish(Request({Item(GroupTopic(3), "d")}));
  ASSERT_TRUE(IsOk(next)) << Describe(next);
  EXPECT_EQ(next.value().metas[0].sequence_id, last + 1);
  EXPECT_EQ(store->LastCommittedId(), last + 1);
}

TEST_F(SqliteStoreTest, FailedPublishLeavesIdsContiguous) {
  // verifies: API-220
  std::unique_ptr<SqliteStore> store = MustOpen();
  ASSERT_NE(store, nullptr);
  auto first = store->CommitPublish(Request({Item(GroupTopic(1), "a")}));
  ASSERT_TRUE(IsOk(first));
  PublishItem bad = Item(GroupTopic(1), "bad");
  bad.pending_failure = InvalidArgument("bad");
  ASSERT_FALSE(IsOk(store->CommitPublish(Request({Item(GroupTopic(1), "b"), bad}))));
  EXPECT_EQ(store->LastCommittedId(), 1);
  auto next = store->CommitPublish(Request({Item(GroupTopic(1), "b")}));
  ASSERT_TRUE(IsOk(next));
  EXPECT_EQ(next.value().metas[0].sequence_id, 2);
}

TEST_F(SqliteStoreTest, MigrationChecksumMismatchRefusesNamingTheVersion) {
  // verifies: STORE.md 2.6 (refuse to start, naming the version)
  ASSERT_NE(MustOpen(), nullptr);
  {
    std::unique_ptr<Connection> raw = Raw();
    ASSERT_NE(raw, nullptr);
    ASSERT_TRUE(raw->Exec("UPDATE schema_migrations SET checksum = x'0011223344556677' "
                          "WHERE version = 20260907000000",
                          "test")
                    .ok());
  }
  auto store = SqliteStore::Open(Options());
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(store.status().message(),
            "database.url: database migration 20260907000000 differs from the one this binary "
            "carries");
}

TEST_F(SqliteStoreTest, MigrationsApplyOnceAndUnknownVersionsAreTolerated) {
  {
    std::unique_ptr<SqliteStore> store = MustOpen();
    ASSERT_NE(store, nullptr);
    EXPECT_EQ(store->migrations().applied,
              std::vector<int64_t>({20260907000000, 20261205000000, 20261206000000}));
    EXPECT_TRUE(store->migrations().unknown.empty());
  }
  {
    std::unique_ptr<Connection> raw = Raw();
    ASSERT_NE(raw, nullptr);
    ASSERT_TRUE(raw->Exec("INSERT INTO schema_migrations VALUES "
                          "(29990101000000, 'from a newer binary', x'00', 0)",
                          "test")
                    .ok());
  }
  std::unique_ptr<SqliteStore> store = MustOpen();
  ASSERT_NE(store, nullptr);
  EXPECT_TRUE(store->migrations().applied.empty());
  EXPECT_EQ(store->migrations().unknown, std::vector<int64_t>({29990101000000}));
}

TEST_F(SqliteStoreTest, SchemaIsStrictSeededAndInWalMode) {
  // verifies: STORE.md 8 (schema mapping, connection settings)
  ASSERT_NE(MustOpen(), nullptr);
  std::unique_ptr<Connection> raw = Raw();
  ASSERT_NE(raw, nullptr);
  {
    StatementUse mode = raw->Use("PRAGMA journal_mode", "test");
    ASSERT_TRUE(mode.Step());
    EXPECT_EQ(mode.ColumnText(0), "wal");  // persisted in the file
  }
  for (const char* table :
       {"envelopes", "topic_watermark", "identifier_association", "allocation_boundary",
        "push_recipient", "push_subscription", "push_cursor", "schema_migrations"}) {
    StatementUse row = raw->Use("SELECT strict FROM pragma_table_list WHERE name = ?1", "test");
    row.BindText(1, table);
    ASSERT_TRUE(row.Step()) << table;
    EXPECT_EQ(row.ColumnInt64(0), 1) << table;
  }
  for (const char* index :
       {"envelopes_topic_sequence", "envelopes_push_eligible", "identifier_association_active",
        "push_recipient_renewed", "push_subscription_topic"}) {
    StatementUse row =
        raw->Use("SELECT count(*) FROM sqlite_schema WHERE type = 'index' AND name = ?1", "test");
    row.BindText(1, index);
    ASSERT_TRUE(row.Step());
    EXPECT_EQ(row.ColumnInt64(0), 1) << index;
  }
  EXPECT_EQ(ScalarInt(*raw,
                      "SELECT count(*) FROM allocation_boundary WHERE singleton = 1 AND "
                      "closed_sequence_id = 0"),
            1);
  EXPECT_EQ(ScalarInt(*raw,
                      "SELECT count(*) FROM push_cursor WHERE singleton = 1 AND "
                      "sequence_id = 0"),
            1);
  // Deleting a recipient deletes its subscriptions (foreign_keys=ON on every connection).
  ASSERT_TRUE(raw->Exec("INSERT INTO push_recipient VALUES (zeroblob(32), zeroblob(32), 1, "
                        "'token', NULL, 1, 0); INSERT INTO push_subscription VALUES "
                        "(zeroblob(32), x'00', 0, NULL, NULL, NULL, NULL, 0); "
                        "DELETE FROM push_recipient",
                        "test")
                  .ok());
  EXPECT_EQ(ScalarInt(*raw, "SELECT count(*) FROM push_subscription"), 0);
}

TEST_F(SqliteStoreTest, ExemptTopicWithAnExpiryViolatesTheSchemaAndStoresNothing) {
  // verifies: OPS-001 (STORE.md 2.2 [design] check constraint)
  std::unique_ptr<SqliteStore> store = MustOpen();
  ASSERT_NE(store, nullptr);
  // A caller bug: an identity update with a finite retention class.
  auto result = store->CommitPublish(
      Request({Item(GroupTopic(1), "fine"), Item(IdentityTopic(1), "identity")}));
  ASSERT_FALSE(IsOk(result));
  EXPECT_EQ(ErrorOf(result).kind, ErrorKind::kInvariant);
  EXPECT_NE(ErrorOf(result).message.find("envelopes_exempt_no_expiry"), std::string::npos)
      << ErrorOf(result).message;
  EXPECT_EQ(store->LastCommittedId(), 0);
  auto found = store->FindDuplicates({{GroupTopic(1), HashOf("fine")}});
  ASSERT_TRUE(IsOk(found));
  EXPECT_FALSE(found.value()[0].has_value());
}

TEST_F(SqliteStoreTest, CommitListenerHearsEachStoringCommitInOrder) {
  // verifies: STORE.md 8 (tailer wake-up after each commit)
  std::unique_ptr<SqliteStore> store = MustOpen();
  ASSERT_NE(store, nullptr);
  std::mutex mu;
  std::vector<int64_t> heard;
  store->SetCommitListener([&](int64_t last_id) {
    std::lock_guard lock(mu);
    heard.push_back(last_id);
  });
  ASSERT_TRUE(
      IsOk(store->CommitPublish(Request({Item(GroupTopic(1), "a"), Item(GroupTopic(2), "b")}))));
  ASSERT_TRUE(IsOk(store->CommitPublish(Request({Item(GroupTopic(1), "a")}))));  // duplicate
  PublishItem bad = Item(GroupTopic(1), "bad");
  bad.pending_failure = InvalidArgument("bad");
  ASSERT_FALSE(IsOk(store->CommitPublish(Request({bad}))));
  ASSERT_TRUE(IsOk(store->CommitPublish(Request({Item(GroupTopic(3), "c")}))));
  // The listener hears a commit after the publishers were told (it may run just after
  // CommitPublish returned); LastCommittedId moves before they are told.
  EXPECT_EQ(store->LastCommittedId(), 3);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  auto heard_three = [&] {
    std::lock_guard lock(mu);
    return !heard.empty() && heard.back() == 3;
  };
  while (!heard_three() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  store->SetCommitListener(nullptr);
  ASSERT_TRUE(IsOk(store->CommitPublish(Request({Item(GroupTopic(3), "d")}))));
  std::lock_guard lock(mu);
  EXPECT_EQ(heard, std::vector<int64_t>({2, 3}));
  EXPECT_EQ(store->LastCommittedId(), 4);
}

// With streams waiting (`urgent` true), the tailer's wake-up comes before the publishers are told:
// the listener has heard a commit by the time CommitPublish returns. `urgent` is asked per commit.
TEST_F(SqliteStoreTest, AnUrgentListenerHearsACommitBeforeItsPublishReturns) {
  std::unique_ptr<SqliteStore> store = MustOpen();
  ASSERT_NE(store, nullptr);
  std::atomic<int64_t> heard{0};
  std::atomic<int> asked{0};
  store->SetCommitListener([&](int64_t last_id) { heard.store(last_id); },
                           [&] {
                             asked.fetch_add(1);
                             return true;
                           });
  ASSERT_TRUE(IsOk(store->CommitPublish(Request({Item(GroupTopic(1), "a")}))));
  EXPECT_EQ(heard.load(), 1);
  ASSERT_TRUE(IsOk(store->CommitPublish(Request({Item(GroupTopic(2), "b")}))));
  EXPECT_EQ(heard.load(), 2);
  EXPECT_EQ(asked.load(), 2);
  store->SetCommitListener(nullptr);
}

TEST_F(SqliteStoreTest, CommitListenerThroughTheStoreInterfaceGetsTheNewLastIdATailerThenSees) {
  // verifies: STORE.md 8 (tailer: after each commit the writer publishes the new last id; a fresh
  // snapshot sees the commit)
  std::unique_ptr<SqliteStore> opened = MustOpen();
  ASSERT_NE(opened, nullptr);
  Store& store = *opened;
  std::promise<int64_t> heard;
  std::atomic<bool> first_call{true};
  store.SetCommitListener([&](int64_t last_id) {
    if (first_call.exchange(false)) {
      heard.set_value(last_id);
    }
  });
  auto result = store.CommitPublish(Request({Item(GroupTopic(1), "a"), Item(GroupTopic(2), "b")}));
  ASSERT_TRUE(IsOk(result)) << Describe(result);
  const std::vector<EnvelopeMeta>& metas = result.value().metas;
  std::future<int64_t> last = heard.get_future();
  ASSERT_EQ(last.wait_for(std::chrono::seconds(30)), std::future_status::ready);
  EXPECT_EQ(last.get(), metas[1].sequence_id);
  store.SetCommitListener(nullptr);

  auto reader = store.OpenTailReader();
  ASSERT_TRUE(IsOk(reader)) << Describe(reader);
  TailReader& tailer = *reader.value();
  auto boundary = tailer.Begin();
  ASSERT_TRUE(IsOk(boundary)) << Describe(boundary);
  EXPECT_EQ(boundary.value(), metas[1].sequence_id);
  auto rows = tailer.Forward(0, 10);
  ASSERT_TRUE(IsOk(rows)) << Describe(rows);
  ASSERT_EQ(rows.value().size(), 2u);
  EXPECT_EQ(rows.value()[1].sequence_id, metas[1].sequence_id);
  EXPECT_TRUE(IsOk(tailer.End()));
}

TEST_F(SqliteStoreTest, PublishWaitingBehindABusyWriterTimesOutAndStoresNothing) {
  // verifies: STORE.md 8 (writer wait bounded -> DEADLINE_EXCEEDED)
  std::unique_ptr<SqliteStore> store = MustOpen();
  ASSERT_NE(store, nullptr);
  std::promise<void> entered;
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  bool first_call = true;
  store->SetCommitListener([&](int64_t) {
    if (first_call) {  // only the writer thread runs the listener
      first_call = false;
      entered.set_value();
      released.wait_for(std::chrono::seconds(30));
    }
  });
  std::thread blocker([&] {
    auto result = store->CommitPublish(Request({Item(GroupTopic(1), "first")}));
    EXPECT_TRUE(IsOk(result)) << Describe(result);
  });
  ASSERT_EQ(entered.get_future().wait_for(std::chrono::seconds(30)), std::future_status::ready);

  auto late =
      store->CommitPublish(Request({Item(GroupTopic(2), "late")}, std::chrono::milliseconds(50)));
  ASSERT_FALSE(IsOk(late));
  EXPECT_EQ(ErrorOf(late).kind, ErrorKind::kTimeout);

  release.set_value();
  blocker.join();
  auto found = store->FindDuplicates({{GroupTopic(2), HashOf("late")}});
  ASSERT_TRUE(IsOk(found));
  EXPECT_FALSE(found.value()[0].has_value());
  EXPECT_EQ(store->LastCommittedId(), 1);
  // The listener runs after the blocker's publish returned, so it may still be returning from
  // its wait: removing it waits for that, while the promises it uses are alive.
  store->SetCommitListener(nullptr);
}

TEST_F(SqliteStoreTest, DeadlineAlreadyPassedFailsWithoutStoring) {
  std::unique_ptr<SqliteStore> store = MustOpen();
  ASSERT_NE(store, nullptr);
  CommitPublishRequest request = Request({Item(GroupTopic(1), "a")});
  request.deadline = Clock::now() - std::chrono::milliseconds(1);
  auto result = store->CommitPublish(request);
  ASSERT_FALSE(IsOk(result));
  EXPECT_EQ(ErrorOf(result).kind, ErrorKind::kTimeout);
  EXPECT_EQ(store->LastCommittedId(), 0);
}

TEST_F(SqliteStoreTest, RepeatedItemInOneRequestIsAnsweredAsItsDuplicate) {
  // verifies: API-221
  // verifies: API-222
  std::unique_ptr<SqliteStore> store = MustOpen();
  ASSERT_NE(store, nullptr);
  auto result = store->CommitPublish(Request(
      {Item(GroupTopic(1), "same"), Item(GroupTopic(1), "other"), Item(GroupTopic(1), "same")}));
  ASSERT_TRUE(IsOk(result)) << Describe(result);
  const CommitPublishResult& r = result.value();
  EXPECT_EQ(r.duplicate, std::vector<bool>({false, false, true}));
  EXPECT_EQ(r.metas[2].sequence_id, r.metas[0].sequence_id);
  EXPECT_EQ(store->LastCommittedId(), 2);
}

TEST_F(SqliteStoreTest, IdentityChangesAreProjectedWithTheUpdatesId) {
  // verifies: STORE.md 2.2 (identifier_association projection)
  std::unique_ptr<SqliteStore> store = MustOpen();
  ASSERT_NE(store, nullptr);
  const std::string inbox = IdentityTopic(7);
  auto publish = [&](const std::string& payload, int64_t head, bool added) {
    PublishItem item = Item(inbox, payload, RetentionClass::kExempt);
    item.identity_validated_head = head;
    item.identity_changes.push_back({.identifier = "0xabc", .identifier_kind = 1, .added = added});
    auto result = store->CommitPublish(Request({item}));
    EXPECT_TRUE(IsOk(result)) << Describe(result);
    return IsOk(result) ? result.value().metas[0].sequence_id : 0;
  };
  const int64_t u1 = publish("add", 0, /*added=*/true);
  const int64_t u2 = publish("revoke", u1, /*added=*/false);
  store.reset();
  {
    std::unique_ptr<Connection> raw = Raw();
    ASSERT_NE(raw, nullptr);
    StatementUse row = raw->Use(
        "SELECT association_sequence_id, revocation_sequence_id, inbox_id "
        "FROM identifier_association WHERE identifier = '0xabc' AND identifier_kind = 1",
        "test");
    ASSERT_TRUE(row.Step());
    EXPECT_EQ(row.ColumnInt64(0), u1);
    EXPECT_EQ(row.ColumnInt64(1), u2);
    EXPECT_EQ(row.ColumnBlob(2), inbox.substr(1));
  }
  store = MustOpen();
  ASSERT_NE(store, nullptr);
  const int64_t u3 = publish("re-add", u2, /*added=*/true);
  store.reset();
  std::unique_ptr<Connection> raw = Raw();
  ASSERT_NE(raw, nullptr);
  StatementUse row = raw->Use(
      "SELECT association_sequence_id, revocation_sequence_id IS NULL FROM "
      "identifier_association WHERE identifier = '0xabc'",
      "test");
  ASSERT_TRUE(row.Step());
  EXPECT_EQ(row.ColumnInt64(0), u3);
  EXPECT_EQ(row.ColumnInt64(1), 1);
}

TEST_F(SqliteStoreTest, QueryLimitZeroIsACallerBug) {
  std::unique_ptr<SqliteStore> store = MustOpen();
  ASSERT_NE(store, nullptr);
  auto page = store->Query({{GroupTopic(1), 0}}, 0);
  ASSERT_FALSE(IsOk(page));
  EXPECT_EQ(ErrorOf(page).kind, ErrorKind::kInvariant);
}

// The EXPLAIN QUERY PLAN details of `sql` on `conn`, one per plan row.
std::vector<std::string> PlanOf(Connection& conn, const std::string& sql) {
  std::vector<std::string> details;
  StatementUse plan = conn.Use(("EXPLAIN QUERY PLAN " + sql).c_str(), "test");
  while (plan.Step()) {
    details.push_back(plan.ColumnText(3));
  }
  EXPECT_FALSE(plan.error().has_value());
  return details;
}

TEST_F(SqliteStoreTest, QueryBeforeWalksTheTopicIndexBackwards) {
  // verifies: issue 33 G1 (STORE.md 2.3: envelopes_topic_sequence, no new index, no sort)
  {
    std::unique_ptr<SqliteStore> store = MustOpen();
    ASSERT_NE(store, nullptr);
    for (int i = 0; i < 50; ++i) {
      auto r = store->CommitPublish(
          Request({Item(GroupTopic(static_cast<uint8_t>(i % 5)), "p" + std::to_string(i))}));
      ASSERT_TRUE(IsOk(r));
    }
  }
  std::unique_ptr<Connection> raw = Raw();
  ASSERT_NE(raw, nullptr);
  const std::string covering = "SEARCH envelopes USING COVERING INDEX envelopes_topic_sequence";
  for (bool analyzed : {false, true}) {
    SCOPED_TRACE(analyzed ? "after ANALYZE" : "without statistics");
    if (analyzed) {
      ASSERT_TRUE(raw->Exec("ANALYZE", "test").ok());
    }
    std::vector<std::string> plan = PlanOf(*raw, kQueryBeforeCandidates);
    ASSERT_EQ(plan.size(), 1u);  // one index range scan, no temporary b-tree for the order
    EXPECT_EQ(plan[0].rfind(covering, 0), 0u) << plan[0];
  }
}

}  // namespace
}  // namespace xb::store::sqlite
