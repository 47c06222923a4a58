#include "store/sqlite/connection.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "store/sqlite/test_support.h"

namespace xb::store::sqlite {
namespace {

TEST(MapSqliteError, MapsResultCodesToErrorKinds) {
  // verifies: STORE.md 8 (error mapping)
  EXPECT_EQ(MapSqliteError(SQLITE_INTERRUPT, "x").kind, ErrorKind::kTimeout);
  EXPECT_EQ(MapSqliteError(SQLITE_BUSY, "x").kind, ErrorKind::kTimeout);
  EXPECT_EQ(MapSqliteError(SQLITE_CONSTRAINT_UNIQUE, "x").kind, ErrorKind::kInvariant);
  EXPECT_EQ(MapSqliteError(SQLITE_CONSTRAINT_CHECK, "x").kind, ErrorKind::kInvariant);
  EXPECT_EQ(MapSqliteError(SQLITE_CORRUPT, "x").kind, ErrorKind::kInvariant);
  EXPECT_EQ(MapSqliteError(SQLITE_NOTADB, "x").kind, ErrorKind::kInvariant);
  EXPECT_EQ(MapSqliteError(SQLITE_IOERR_FSYNC, "x").kind, ErrorKind::kConnection);
  EXPECT_EQ(MapSqliteError(SQLITE_FULL, "x").kind, ErrorKind::kConnection);
  EXPECT_EQ(MapSqliteError(SQLITE_CANTOPEN, "x").kind, ErrorKind::kConnection);
  EXPECT_EQ(MapSqliteError(SQLITE_NOMEM, "x").kind, ErrorKind::kOther);
  EXPECT_EQ(MapSqliteError(SQLITE_FULL, "commit").message, "commit: database or disk is full");
}

// verifies: issue 28 (a full disk is logged by its cause): the cause class of each code.
TEST(MapSqliteError, ClassifiesTheCause) {
  EXPECT_EQ(MapSqliteError(SQLITE_FULL, "x").cause, ErrorCause::kDiskFull);
  EXPECT_EQ(MapSqliteError(SQLITE_IOERR_FSYNC, "x").cause, ErrorCause::kIoError);
  EXPECT_EQ(MapSqliteError(SQLITE_IOERR_NOMEM, "x").cause, ErrorCause::kOutOfMemory);
  EXPECT_EQ(MapSqliteError(SQLITE_NOMEM, "x").cause, ErrorCause::kOutOfMemory);
  EXPECT_EQ(MapSqliteError(SQLITE_CANTOPEN, "x").cause, ErrorCause::kCannotOpen);
  EXPECT_EQ(MapSqliteError(SQLITE_READONLY_DBMOVED, "x").cause, ErrorCause::kReadOnly);
  EXPECT_EQ(MapSqliteError(SQLITE_PERM, "x").cause, ErrorCause::kReadOnly);
  EXPECT_EQ(MapSqliteError(SQLITE_CORRUPT, "x").cause, ErrorCause::kCorrupt);
  EXPECT_EQ(MapSqliteError(SQLITE_NOTADB, "x").cause, ErrorCause::kCorrupt);
  // Unclassified: the kind stands for the cause.
  const StoreError busy = MapSqliteError(SQLITE_BUSY, "x");
  EXPECT_EQ(busy.cause, ErrorCause::kUnclassified);
  EXPECT_EQ(CauseOf(busy), ErrorCause::kTimeout);
  EXPECT_EQ(CauseOf(MapSqliteError(SQLITE_CONSTRAINT_UNIQUE, "x")), ErrorCause::kInvariant);
  EXPECT_EQ(CauseOf(MapSqliteError(SQLITE_PROTOCOL, "x")), ErrorCause::kConnection);
  EXPECT_EQ(CauseOf(MapSqliteError(SQLITE_ERROR, "x")), ErrorCause::kUnclassified);
}

class ConnectionTest : public ::testing::Test {
 protected:
  std::unique_ptr<Connection> Open(Connection::Role role) {
    auto conn = Connection::Open(dir_.File("db"), role, 1234);
    EXPECT_TRUE(conn.ok()) << conn.status().ToString();
    return conn.ok() ? std::move(conn).value() : nullptr;
  }
  static int64_t Pragma(Connection& conn, const char* sql) {
    StatementUse row = conn.Use(sql, "test");
    EXPECT_TRUE(row.Step()) << sql;
    return row.ColumnInt64(0);
  }

  TempDir dir_;
};

TEST_F(ConnectionTest, AppliesTheSettingsOfEveryConnection) {
  // verifies: STORE.md 8 (connection settings)
  std::unique_ptr<Connection> writer = Open(Connection::Role::kWriter);
  ASSERT_NE(writer, nullptr);
  std::unique_ptr<Connection> reader = Open(Connection::Role::kReader);
  ASSERT_NE(reader, nullptr);
  for (Connection* conn : {writer.get(), reader.get()}) {
    EXPECT_EQ(Pragma(*conn, "PRAGMA synchronous"), 2);  // FULL
    EXPECT_EQ(Pragma(*conn, "PRAGMA foreign_keys"), 1);
    EXPECT_EQ(Pragma(*conn, "PRAGMA busy_timeout"), 1234);
  }
  EXPECT_EQ(Pragma(*writer, "PRAGMA query_only"), 0);
  EXPECT_EQ(Pragma(*reader, "PRAGMA query_only"), 1);

  ASSERT_TRUE(writer->Exec("CREATE TABLE t (x INTEGER) STRICT", "test").ok());
  StoreResult<void> refused = reader->Exec("INSERT INTO t VALUES (1)", "insert");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().kind, ErrorKind::kConnection);  // SQLITE_READONLY
}

TEST_F(ConnectionTest, ReaderCannotCreateTheFile) {
  auto conn = Connection::Open(dir_.File("absent"), Connection::Role::kReader, 10);
  ASSERT_FALSE(conn.ok());
  EXPECT_EQ(conn.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(conn.status().message().find(dir_.path()), std::string::npos);
}

TEST_F(ConnectionTest, PassedDeadlineInterruptsALongStatement) {
  std::unique_ptr<Connection> conn = Open(Connection::Role::kWriter);
  ASSERT_NE(conn, nullptr);
  conn->SetDeadline(Clock::now() - std::chrono::milliseconds(1));
  StatementUse row = conn->Use(
      "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 100000000) "
      "SELECT count(*) FROM n",
      "count");
  EXPECT_FALSE(row.Step());
  ASSERT_TRUE(row.error().has_value());
  EXPECT_EQ(row.error()->kind, ErrorKind::kTimeout);
  EXPECT_EQ(row.error()->message, "count: interrupted");
}

TEST_F(ConnectionTest, BlobsRoundTripIncludingEmptyOnes) {
  std::unique_ptr<Connection> conn = Open(Connection::Role::kWriter);
  ASSERT_NE(conn, nullptr);
  ASSERT_TRUE(conn->Exec("CREATE TABLE b (v BLOB NOT NULL) STRICT", "test").ok());
  const std::string with_nul("a\0b", 3);
  ASSERT_TRUE(conn->Use("INSERT INTO b VALUES (?1)", "insert").BindBlob(1, "").Run().ok());
  ASSERT_TRUE(conn->Use("INSERT INTO b VALUES (?1)", "insert").BindBlob(1, with_nul).Run().ok());
  StatementUse rows = conn->Use("SELECT v, v IS NULL FROM b ORDER BY rowid", "select");
  ASSERT_TRUE(rows.Step());
  EXPECT_EQ(rows.ColumnBlob(0), "");
  EXPECT_EQ(rows.ColumnInt64(1), 0);  // an empty BLOB, not NULL
  ASSERT_TRUE(rows.Step());
  EXPECT_EQ(rows.ColumnBlob(0), with_nul);
  EXPECT_FALSE(rows.Step());
  EXPECT_FALSE(rows.error().has_value());
}

TEST_F(ConnectionTest, ConstraintErrorsNameTheConstraintNotTheValue) {
  std::unique_ptr<Connection> conn = Open(Connection::Role::kWriter);
  ASSERT_NE(conn, nullptr);
  ASSERT_TRUE(conn->Exec("CREATE TABLE c (v BLOB NOT NULL, CONSTRAINT short CHECK (length(v) < 3))"
                         " STRICT",
                         "test")
                  .ok());
  StoreResult<void> e =
      conn->Use("INSERT INTO c VALUES (?1)", "insert").BindBlob(1, "secret").Run();
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.error().kind, ErrorKind::kInvariant);
  EXPECT_EQ(e.error().message, "insert: constraint failed (CHECK constraint failed: short)");
}

TEST_F(ConnectionTest, FailedPrepareIsReportedByTheUse) {
  std::unique_ptr<Connection> conn = Open(Connection::Role::kWriter);
  ASSERT_NE(conn, nullptr);
  StatementUse use = conn->Use("SELECT * FROM missing_table", "read");
  EXPECT_FALSE(use.BindInt64(1, 1).Step());
  ASSERT_TRUE(use.error().has_value());
  EXPECT_EQ(use.error()->kind, ErrorKind::kOther);
}

TEST_F(ConnectionTest, TransactionsRollBackWhenLeftOpen) {
  std::unique_ptr<Connection> conn = Open(Connection::Role::kWriter);
  ASSERT_NE(conn, nullptr);
  ASSERT_TRUE(conn->Exec("CREATE TABLE t (x INTEGER) STRICT", "test").ok());
  {
    WriteTransaction txn(conn.get());
    ASSERT_TRUE(txn.Begin().ok());
    ASSERT_TRUE(conn->Exec("INSERT INTO t VALUES (1)", "insert").ok());
    EXPECT_TRUE(conn->InTransaction());
  }
  EXPECT_FALSE(conn->InTransaction());
  {
    WriteTransaction txn(conn.get());
    ASSERT_TRUE(txn.Begin().ok());
    ASSERT_TRUE(conn->Exec("INSERT INTO t VALUES (2)", "insert").ok());
    ASSERT_TRUE(txn.Commit().ok());
  }
  StatementUse rows = conn->Use("SELECT group_concat(x) FROM t", "read");
  ASSERT_TRUE(rows.Step());
  EXPECT_EQ(rows.ColumnText(0), "2");
}

}  // namespace
}  // namespace xb::store::sqlite
