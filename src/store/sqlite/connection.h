// One SQLite connection (sqlite3*) and its prepared statements (sqlite3_stmt*), each owned by a
// small RAII class (STYLE.md: one class per C handle), plus the mapping of SQLite result codes to
// the store's typed errors (STORE.md section 8, error mapping [design]).
//
// Threading: a Connection is used by one thread at a time (SQLite multi-thread mode): the writer
// thread owns the writer connection, and a reader is leased to one caller at a time.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "base/status.h"
#include "store/store.h"

namespace xb::store::sqlite {

// Maps a SQLite result code to a typed error: interrupt (our deadline) or busy -> kTimeout;
// constraint, corruption, not-a-database, datatype mismatch -> kInvariant; I/O error, full disk,
// cannot open, read-only or permission trouble -> kConnection; anything else -> kOther. The cause
// class: full -> kDiskFull, I/O error -> kIoError (kOutOfMemory for SQLITE_IOERR_NOMEM), no
// memory -> kOutOfMemory, cannot open -> kCannotOpen, read-only, permission or authorization ->
// kReadOnly, corruption or not-a-database -> kCorrupt; otherwise the kind stands for it.
// `what` names the operation ("query", "commit publish"); the message never carries request data.
StoreError MapSqliteError(int rc, std::string_view what);

// RAII owner of one prepared statement.
class Statement {
 public:
  explicit Statement(sqlite3_stmt* stmt) : stmt_(stmt) {}
  ~Statement();
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  sqlite3_stmt* get() const { return stmt_; }

 private:
  sqlite3_stmt* const stmt_;
};

// One use of a cached statement: bind, step, read columns. The first failure (prepare, bind or
// step) is remembered; afterwards Step() returns false and error() reports it. The statement is
// reset and its bindings cleared when the use ends, so the cache can hand it out again.
class StatementUse {
 public:
  StatementUse(sqlite3* db, Statement* stmt, std::optional<StoreError> error,
               std::string_view what);
  ~StatementUse();
  StatementUse(const StatementUse&) = delete;
  StatementUse& operator=(const StatementUse&) = delete;

  // Parameters are 1-based, as in SQLite.
  StatementUse& BindInt64(int index, int64_t value);
  StatementUse& BindBlob(int index, std::string_view bytes);  // empty -> zero-length BLOB
  StatementUse& BindText(int index, std::string_view text);
  StatementUse& BindNull(int index);
  StatementUse& BindOptionalInt64(int index, std::optional<int64_t> value);

  // True when a row is available; false when done or failed (then error() is set).
  bool Step();
  // Steps once and requires SQLITE_DONE (statements without rows).
  StoreResult<void> Run();

  // Columns are 0-based, as in SQLite; valid after Step() returned true.
  int64_t ColumnInt64(int index) const;
  bool ColumnIsNull(int index) const;
  std::string ColumnBlob(int index) const;
  // The same bytes in place: valid until the next Step() or the end of this use.
  std::string_view ColumnBlobView(int index) const;
  std::string ColumnText(int index) const;

  const std::optional<StoreError>& error() const { return error_; }

 private:
  void Fail(int rc);

  sqlite3* const db_;
  Statement* const stmt_;  // not owned; null when preparing failed
  std::optional<StoreError> error_;
  std::string_view what_;
};

// RAII owner of one database connection, with a statement cache and an optional deadline enforced
// by a progress handler (statements still running after it stop with SQLITE_INTERRUPT).
class Connection {
 public:
  enum class Role : uint8_t {
    kWriter,        // may create the file
    kReader,        // query_only=ON
    kCheckpointer,  // runs WAL checkpoints only (checkpointer.h)
  };

  // Opens `path` and applies the per-connection settings of STORE.md 8: journal_mode=WAL (writer;
  // persisted in the file), synchronous=FULL, foreign_keys=ON, busy_timeout, and for readers
  // query_only=ON. Errors are plain words without the path (the path is configuration).
  static Result<std::unique_ptr<Connection>> Open(const std::string& path, Role role,
                                                  uint32_t busy_timeout_ms);

  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  sqlite3* get() const { return db_; }

  // Runs one or more statements that return no rows (PRAGMA, DDL, BEGIN, COMMIT).
  StoreResult<void> Exec(const char* sql, std::string_view what);

  // A use of the cached statement for `sql` (a string literal: the cache keys on its text).
  StatementUse Use(const char* sql, std::string_view what);
  // Runs the cached statement for `sql` (one statement, no rows): for the transaction control
  // every publish and read runs (BEGIN, SAVEPOINT, RELEASE, COMMIT, ROLLBACK), which Exec would
  // parse every time.
  StoreResult<void> Run(const char* sql, std::string_view what) { return Use(sql, what).Run(); }

  // Statements started after `deadline` (checked every few hundred VM steps) are interrupted.
  void SetDeadline(Clock::time_point deadline) { deadline_ = deadline; }
  void ClearDeadline() { deadline_.reset(); }

  // True inside an explicit transaction.
  bool InTransaction() const { return sqlite3_get_autocommit(db_) == 0; }

  // Rolls back an open transaction, with the deadline cleared so the rollback itself runs.
  void RollbackIfOpen();

 private:
  explicit Connection(sqlite3* db);
  static int OnProgress(void* self);

  sqlite3* const db_;
  std::optional<Clock::time_point> deadline_;
  std::unordered_map<std::string, std::unique_ptr<Statement>> cache_;
};

// A read transaction: one snapshot for every statement run inside it (page and has_more of
// API-240 come from one read). Ended (rolled back: nothing was written) when it goes out of scope.
class ReadTransaction {
 public:
  explicit ReadTransaction(Connection* conn) : conn_(conn) {}
  ~ReadTransaction() { conn_->RollbackIfOpen(); }
  ReadTransaction(const ReadTransaction&) = delete;
  ReadTransaction& operator=(const ReadTransaction&) = delete;

  StoreResult<void> Begin() { return conn_->Run("BEGIN DEFERRED", "begin read"); }

 private:
  Connection* const conn_;
};

// The write transaction of a writer job: BEGIN IMMEDIATE takes the database's single write lock
// at once (STORE.md 8: it replaces the identity lock, the topic locks and the barrier). Rolled back
// when it goes out of scope uncommitted.
//
// Inside a group commit (the writer already holds an open transaction for several jobs) it is a
// savepoint instead: Commit releases it into the shared transaction, which the writer commits for
// the whole group; going out of scope uncommitted rolls back to it, leaving the other jobs' work.
class WriteTransaction {
 public:
  explicit WriteTransaction(Connection* conn) : conn_(conn) {}
  ~WriteTransaction();
  WriteTransaction(const WriteTransaction&) = delete;
  WriteTransaction& operator=(const WriteTransaction&) = delete;

  StoreResult<void> Begin();
  StoreResult<void> Commit();

 private:
  Connection* const conn_;
  bool savepoint_ = false;
  bool done_ = false;
};

}  // namespace xb::store::sqlite
