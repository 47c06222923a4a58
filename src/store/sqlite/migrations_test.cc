#include "store/sqlite/migrations.h"

#include <gtest/gtest.h>

#include <array>

#include "store/sqlite/test_support.h"

namespace xb::store::sqlite {
namespace {

class MigrationsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto conn = Connection::Open(dir_.File("db"), Connection::Role::kWriter, 1000);
    ASSERT_TRUE(conn.ok()) << conn.status().ToString();
    conn_ = std::move(conn).value();
  }
  int64_t Count(const char* sql) {
    StatementUse row = conn_->Use(sql, "test");
    EXPECT_TRUE(row.Step()) << sql;
    return row.ColumnInt64(0);
  }

  TempDir dir_;
  std::unique_ptr<Connection> conn_;
};

TEST(EmbeddedMigrations, StartAtTheFirstVersionAndAscend) {
  std::span<const Migration> all = EmbeddedMigrations();
  ASSERT_FALSE(all.empty());
  EXPECT_EQ(all[0].version, 20260907000000);
  for (size_t i = 1; i < all.size(); ++i) {
    EXPECT_LT(all[i - 1].version, all[i].version);
  }
}

TEST(MigrationChecksum, IsEightBytesAndSeesEveryEdit) {
  EXPECT_EQ(MigrationChecksum("CREATE TABLE a (x INTEGER)").size(), 8u);
  EXPECT_EQ(MigrationChecksum("abc"), MigrationChecksum("abc"));
  EXPECT_NE(MigrationChecksum("CREATE TABLE a (x INTEGER)"),
            MigrationChecksum("CREATE TABLE a (x  INTEGER)"));
}

TEST_F(MigrationsTest, AppliesMissingVersionsInOrderOnce) {
  const std::array<Migration, 2> migrations = {{
      {.version = 1, .name = "one", .sql = "CREATE TABLE one (x INTEGER) STRICT;"},
      {.version = 2, .name = "two", .sql = "CREATE TABLE two (y INTEGER REFERENCES one) STRICT;"},
  }};
  auto first = ApplyMigrations(*conn_, std::span(migrations).first(1), 5);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(first->applied, std::vector<int64_t>({1}));

  auto second = ApplyMigrations(*conn_, migrations, 6);
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ(second->applied, std::vector<int64_t>({2}));

  auto third = ApplyMigrations(*conn_, migrations, 7);
  ASSERT_TRUE(third.ok());
  EXPECT_TRUE(third->applied.empty());
  EXPECT_EQ(Count("SELECT count(*) FROM schema_migrations"), 2);
  EXPECT_EQ(Count("SELECT applied_ns FROM schema_migrations WHERE version = 2"), 6);
}

TEST_F(MigrationsTest, EditedMigrationRefusesNamingTheVersion) {
  const std::array<Migration, 1> original = {
      {{.version = 42, .name = "t", .sql = "CREATE TABLE t (x INTEGER);"}}};
  ASSERT_TRUE(ApplyMigrations(*conn_, original, 0).ok());
  const std::array<Migration, 1> edited = {
      {{.version = 42, .name = "t", .sql = "CREATE TABLE t (x TEXT);"}}};
  auto refused = ApplyMigrations(*conn_, edited, 0);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(refused.status().message(),
            "database migration 42 differs from the one this binary carries");
}

TEST_F(MigrationsTest, FailingMigrationLeavesNoTrace) {
  const std::array<Migration, 1> broken = {{{.version = 9,
                                             .name = "broken",
                                             .sql = "CREATE TABLE half (x INTEGER); "
                                                    "CREATE TABLE half (x INTEGER);"}}};
  auto result = ApplyMigrations(*conn_, broken, 0);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(Count("SELECT count(*) FROM sqlite_schema WHERE name = 'half'"), 0);
  EXPECT_EQ(Count("SELECT count(*) FROM schema_migrations"), 0);
  EXPECT_FALSE(conn_->InTransaction());
}

TEST_F(MigrationsTest, UnknownAppliedVersionIsReportedNotRefused) {
  const std::array<Migration, 2> newer = {{
      {.version = 1, .name = "one", .sql = "CREATE TABLE one (x INTEGER);"},
      {.version = 3, .name = "three", .sql = "CREATE TABLE three (x INTEGER);"},
  }};
  ASSERT_TRUE(ApplyMigrations(*conn_, newer, 0).ok());
  auto older = ApplyMigrations(*conn_, std::span(newer).first(1), 0);
  ASSERT_TRUE(older.ok()) << older.status().ToString();
  EXPECT_EQ(older->unknown, std::vector<int64_t>({3}));
}

// verifies: PUSH-219 — the push migration marks stored commits and proposals eligible whatever
// should_push said, above the stored boundary (rows at or below it can never be delivered: every
// subscription starts at or above it); other rows keep their flag.
TEST_F(MigrationsTest, PushMigrationMarksCommitsAboveTheBoundaryEligible) {
  std::span<const Migration> all = EmbeddedMigrations();
  ASSERT_GE(all.size(), 2u);
  ASSERT_TRUE(ApplyMigrations(*conn_, all.first(1), 0).ok());
  const char* rows = R"sql(
INSERT INTO envelopes (sequence_id, topic, message_hash, server_ns, payload,
                       is_commit_or_proposal, push_eligible)
VALUES (1, x'00', randomblob(32), 1, x'', 1, 0),
       (2, x'00', randomblob(32), 1, x'', 1, 0),
       (3, x'00', randomblob(32), 1, x'', 0, 0),
       (4, x'00', randomblob(32), 1, x'', 0, 1);
UPDATE allocation_boundary SET closed_sequence_id = 1;)sql";
  ASSERT_TRUE(conn_->Exec(rows, "test rows").ok());
  ASSERT_TRUE(ApplyMigrations(*conn_, all, 0).ok());
  EXPECT_EQ(Count("SELECT push_eligible FROM envelopes WHERE sequence_id = 1"), 0);
  EXPECT_EQ(Count("SELECT push_eligible FROM envelopes WHERE sequence_id = 2"), 1);
  EXPECT_EQ(Count("SELECT push_eligible FROM envelopes WHERE sequence_id = 3"), 0);
  EXPECT_EQ(Count("SELECT push_eligible FROM envelopes WHERE sequence_id = 4"), 1);
}

}  // namespace
}  // namespace xb::store::sqlite
