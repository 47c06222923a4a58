#include "store/sqlite/connection.h"

#include <string>
#include <utility>

#include "base/thread_priority.h"

namespace xb::store::sqlite {
namespace {

// How many VM instructions run between two deadline checks: small enough that an interrupt lands
// within microseconds, large enough that reading the clock costs nothing measurable.
constexpr int kProgressSteps = 1000;

}  // namespace

// implements: STORE.md 8 error mapping [design]
StoreError MapSqliteError(int rc, std::string_view what) {
  StoreError error;
  switch (rc & 0xff) {
    case SQLITE_INTERRUPT:  // only our deadline interrupts
    case SQLITE_BUSY:       // busy_timeout (= statement timeout) ran out
    case SQLITE_LOCKED:
      error.kind = ErrorKind::kTimeout;
      break;
    case SQLITE_CONSTRAINT:
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
    case SQLITE_MISMATCH:
    case SQLITE_FORMAT:
    case SQLITE_RANGE:
      error.kind = ErrorKind::kInvariant;
      break;
    case SQLITE_IOERR:
    case SQLITE_FULL:
    case SQLITE_CANTOPEN:
    case SQLITE_READONLY:
    case SQLITE_PERM:
    case SQLITE_PROTOCOL:
      error.kind = ErrorKind::kConnection;
      break;
    default:
      error.kind = ErrorKind::kOther;
      break;
  }
  switch (rc & 0xff) {
    case SQLITE_FULL:
      error.cause = ErrorCause::kDiskFull;
      break;
    case SQLITE_IOERR:
      error.cause = rc == SQLITE_IOERR_NOMEM ? ErrorCause::kOutOfMemory : ErrorCause::kIoError;
      break;
    case SQLITE_NOMEM:
      error.cause = ErrorCause::kOutOfMemory;
      break;
    case SQLITE_CANTOPEN:
      error.cause = ErrorCause::kCannotOpen;
      break;
    case SQLITE_READONLY:
    case SQLITE_PERM:
    case SQLITE_AUTH:
      error.cause = ErrorCause::kReadOnly;
      break;
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      error.cause = ErrorCause::kCorrupt;
      break;
    default:
      break;  // the kind stands for it (CauseOf)
  }
  // sqlite3_errstr is the fixed text of the code; it never carries a value, a path or SQL.
  error.message = std::string(what) + ": " + sqlite3_errstr(rc);
  return error;
}

Statement::~Statement() { sqlite3_finalize(stmt_); }

StatementUse::StatementUse(sqlite3* db, Statement* stmt, std::optional<StoreError> error,
                           std::string_view what)
    : db_(db), stmt_(stmt), error_(std::move(error)), what_(what) {}

StatementUse::~StatementUse() {
  if (stmt_ != nullptr) {
    sqlite3_reset(stmt_->get());
    sqlite3_clear_bindings(stmt_->get());
  }
}

void StatementUse::Fail(int rc) {
  if (!error_) {
    error_ = MapSqliteError(rc, what_);
    if ((rc & 0xff) == SQLITE_CONSTRAINT) {
      // A constraint message names the constraint or the columns, never the values.
      error_->message += std::string(" (") + sqlite3_errmsg(db_) + ")";
    }
  }
}

StatementUse& StatementUse::BindInt64(int index, int64_t value) {
  if (!error_) {
    int rc = sqlite3_bind_int64(stmt_->get(), index, value);
    if (rc != SQLITE_OK) {
      Fail(rc);
    }
  }
  return *this;
}

StatementUse& StatementUse::BindBlob(int index, std::string_view bytes) {
  if (!error_) {
    // A null pointer would bind NULL, not an empty BLOB.
    int rc = bytes.empty() ? sqlite3_bind_zeroblob(stmt_->get(), index, 0)
                           : sqlite3_bind_blob64(stmt_->get(), index, bytes.data(), bytes.size(),
                                                 SQLITE_TRANSIENT);
    if (rc != SQLITE_OK) {
      Fail(rc);
    }
  }
  return *this;
}

StatementUse& StatementUse::BindText(int index, std::string_view text) {
  if (!error_) {
    int rc = sqlite3_bind_text64(stmt_->get(), index, text.empty() ? "" : text.data(), text.size(),
                                 SQLITE_TRANSIENT, SQLITE_UTF8);
    if (rc != SQLITE_OK) {
      Fail(rc);
    }
  }
  return *this;
}

StatementUse& StatementUse::BindNull(int index) {
  if (!error_) {
    int rc = sqlite3_bind_null(stmt_->get(), index);
    if (rc != SQLITE_OK) {
      Fail(rc);
    }
  }
  return *this;
}

StatementUse& StatementUse::BindOptionalInt64(int index, std::optional<int64_t> value) {
  return value ? BindInt64(index, *value) : BindNull(index);
}

bool StatementUse::Step() {
  if (error_) {
    return false;
  }
  OfferPoolThreadTurn();  // per row: base/thread_priority.h
  int rc = sqlite3_step(stmt_->get());
  if (rc == SQLITE_ROW) {
    return true;
  }
  if (rc != SQLITE_DONE) {
    Fail(rc);
  }
  return false;
}

StoreResult<void> StatementUse::Run() {
  if (Step()) {
    StoreError error;
    error.kind = ErrorKind::kInvariant;
    error.message = std::string(what_) + ": statement returned a row";
    return error;
  }
  if (error_) {
    return *error_;
  }
  return {};
}

int64_t StatementUse::ColumnInt64(int index) const {
  return sqlite3_column_int64(stmt_->get(), index);
}

bool StatementUse::ColumnIsNull(int index) const {
  return sqlite3_column_type(stmt_->get(), index) == SQLITE_NULL;
}

std::string StatementUse::ColumnBlob(int index) const { return CopyInTurns(ColumnBlobView(index)); }

std::string_view StatementUse::ColumnBlobView(int index) const {
  const void* data = sqlite3_column_blob(stmt_->get(), index);
  int size = sqlite3_column_bytes(stmt_->get(), index);
  if (data == nullptr || size <= 0) {
    return std::string_view();  // a zero-length BLOB comes back as a null pointer
  }
  return std::string_view(static_cast<const char*>(data), static_cast<size_t>(size));
}

std::string StatementUse::ColumnText(int index) const {
  const unsigned char* data = sqlite3_column_text(stmt_->get(), index);
  int size = sqlite3_column_bytes(stmt_->get(), index);
  if (data == nullptr || size <= 0) {
    return std::string();
  }
  return std::string(reinterpret_cast<const char*>(data), static_cast<size_t>(size));
}

Connection::Connection(sqlite3* db) : db_(db) {
  sqlite3_progress_handler(db_, kProgressSteps, &Connection::OnProgress, this);
}

Connection::~Connection() {
  cache_.clear();  // statements first: close_v2 would otherwise defer the close
  sqlite3_progress_handler(db_, 0, nullptr, nullptr);
  sqlite3_close_v2(db_);
}

int Connection::OnProgress(void* self) {
  auto* conn = static_cast<Connection*>(self);
  return conn->deadline_ && Clock::now() >= *conn->deadline_ ? 1 : 0;
}

Result<std::unique_ptr<Connection>> Connection::Open(const std::string& path, Role role,
                                                     uint32_t busy_timeout_ms) {
  // Multi-thread mode: a connection is never used by two threads at once (header comment).
  int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX;
  if (role == Role::kWriter) {
    flags |= SQLITE_OPEN_CREATE;
  }
  sqlite3* raw = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &raw, flags, nullptr);
  if (rc != SQLITE_OK) {
    sqlite3_close_v2(raw);  // open may allocate a handle even on failure; close accepts null
    return Unavailable(std::string("cannot open the database: ") + sqlite3_errstr(rc));
  }
  sqlite3_extended_result_codes(raw, 1);
  std::unique_ptr<Connection> conn(new Connection(raw));

  std::string settings = "PRAGMA busy_timeout = " + std::to_string(busy_timeout_ms) +
                         "; PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON;";
  if (role == Role::kReader) {
    // Readers map the file: catch-up and tailer scans read pages without a copy per read call.
    settings += " PRAGMA query_only = ON; PRAGMA mmap_size = 268435456;";
  }
  if (StoreResult<void> e = conn->Exec(settings.c_str(), "configure the connection"); !e.ok()) {
    return Unavailable("cannot configure the database connection: " + e.error().message);
  }
  if (role == Role::kCheckpointer) {
    // A connection opens the WAL with its first read; until then it checkpoints nothing.
    if (StoreResult<void> e = conn->Exec("SELECT count(*) FROM sqlite_schema", "open the WAL");
        !e.ok()) {
      return Unavailable("cannot read the database: " + e.error().message);
    }
  }
  if (role == Role::kWriter) {
    // journal_mode is persisted in the file; readers inherit it. The pragma answers the mode in
    // force, which stays "delete" or "memory" if WAL cannot be used: refuse that.
    StatementUse mode = conn->Use("PRAGMA journal_mode = WAL", "set journal mode");
    if (!mode.Step()) {
      std::string why = mode.error() ? mode.error()->message : "no answer";
      return Unavailable("cannot set the database journal mode: " + why);
    }
    if (mode.ColumnText(0) != "wal") {
      return Unavailable("the database cannot use write-ahead logging");
    }
  }
  return conn;
}

StoreResult<void> Connection::Exec(const char* sql, std::string_view what) {
  int rc = sqlite3_exec(db_, sql, nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) {
    StoreError error = MapSqliteError(rc, what);
    if ((rc & 0xff) == SQLITE_CONSTRAINT) {
      error.message += std::string(" (") + sqlite3_errmsg(db_) + ")";
    }
    return error;
  }
  return {};
}

StatementUse Connection::Use(const char* sql, std::string_view what) {
  auto it = cache_.find(sql);
  if (it == cache_.end()) {
    sqlite3_stmt* raw = nullptr;
    int rc = sqlite3_prepare_v3(db_, sql, -1, SQLITE_PREPARE_PERSISTENT, &raw, nullptr);
    if (rc != SQLITE_OK || raw == nullptr) {
      sqlite3_finalize(raw);
      return StatementUse(db_, nullptr, MapSqliteError(rc == SQLITE_OK ? SQLITE_ERROR : rc, what),
                          what);
    }
    it = cache_.emplace(sql, std::make_unique<Statement>(raw)).first;
  }
  return StatementUse(db_, it->second.get(), std::nullopt, what);
}

void Connection::RollbackIfOpen() {
  if (InTransaction()) {
    std::optional<Clock::time_point> saved = deadline_;
    deadline_.reset();
    // A failed rollback leaves SQLite to roll back on the next BEGIN or on close; nothing more
    // can be done here, and the caller already reports the error that led here.
    (void)Run("ROLLBACK", "rollback");
    deadline_ = saved;
  }
}

WriteTransaction::~WriteTransaction() {
  if (done_) {
    return;
  }
  if (savepoint_) {
    // Only this job's changes go; the group's transaction stays open for the others. If the
    // transaction itself is gone (an interrupted statement can roll it back), there is nothing
    // left to undo here.
    if (sqlite3_get_autocommit(conn_->get()) == 0) {
      (void)conn_->Run("ROLLBACK TO job", "rollback job");
      (void)conn_->Run("RELEASE job", "release job");
    }
    return;
  }
  conn_->RollbackIfOpen();
}

StoreResult<void> WriteTransaction::Begin() {
  if (sqlite3_get_autocommit(conn_->get()) == 0) {
    savepoint_ = true;
    return conn_->Run("SAVEPOINT job", "begin job");
  }
  return conn_->Run("BEGIN IMMEDIATE", "begin write");
}

StoreResult<void> WriteTransaction::Commit() {
  StoreResult<void> e =
      savepoint_ ? conn_->Run("RELEASE job", "release job") : conn_->Run("COMMIT", "commit");
  if (e.ok()) {
    done_ = true;
  }
  return e;
}

}  // namespace xb::store::sqlite
