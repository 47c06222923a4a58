// One libpq connection (PGconn) and one result (PGresult), each owned by a small RAII class
// (STYLE.md: one class per C handle). Every statement runs with a client-side deadline: past it
// the statement is cancelled (PQcancel), and a connection that does not answer the cancel in time
// is closed, which ends its server transaction and releases its locks (STORE.md 3.3).
//
// Threading: a Connection is used by one thread at a time (a pool lease or a dedicated owner).
// Every method that talks to the server blocks until the answer or the deadline.
#pragma once

#include <libpq-fe.h>

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "store/postgres/errors.h"
#include "store/postgres/params.h"
#include "store/store.h"

namespace xb::store::postgres {

// How long a cancelled statement may take to answer before its connection is closed.
inline constexpr std::chrono::milliseconds kCancelGrace{1000};

// Owns one PGresult. Values are read in binary format (every statement asks for binary results).
class PgResult {
 public:
  PgResult() = default;
  explicit PgResult(PGresult* result) : result_(result) {}

  PGresult* get() const { return result_.get(); }
  explicit operator bool() const { return result_ != nullptr; }

  int rows() const { return PQntuples(result_.get()); }
  bool IsNull(int row, int col) const { return PQgetisnull(result_.get(), row, col) != 0; }
  std::string_view Bytes(int row, int col) const {
    return {PQgetvalue(result_.get(), row, col),
            static_cast<size_t>(PQgetlength(result_.get(), row, col))};
  }
  int64_t Int8(int row, int col) const { return DecodeInt8(Bytes(row, col)); }
  int32_t Int4(int row, int col) const { return DecodeInt4(Bytes(row, col)); }
  bool Bool(int row, int col) const { return DecodeBool(Bytes(row, col)); }
  std::string_view CommandTag() const { return PQcmdStatus(result_.get()); }

 private:
  struct Clear {
    void operator()(PGresult* r) const { PQclear(r); }
  };
  std::unique_ptr<PGresult, Clear> result_;
};

// Asks the server to cancel whatever statement its connection runs, from any thread (libpq's
// PQcancel is thread-safe): for a long statement another thread must be able to stop (a drain
// during the pruning pass's index build). Outlives its connection harmlessly: the server ignores
// a cancel for a session that is gone.
class CancelToken {
 public:
  explicit CancelToken(PGcancel* cancel) : cancel_(cancel) {}
  ~CancelToken();
  CancelToken(const CancelToken&) = delete;
  CancelToken& operator=(const CancelToken&) = delete;
  // True when the request was delivered (the statement may still have finished first).
  bool Send();

 private:
  PGcancel* const cancel_;  // never null
};

class Connection {
 public:
  // Connects to `url` and sets the session's statement_timeout (0 = none, for a dedicated
  // connection bounded by client deadlines only). `setting` ("database.url") names the URL in
  // errors; neither the URL nor libpq's message text ever appears in one. A connection failure is
  // kConnection (sqlstate "3D000" when the database does not exist, "57P03" when the server is
  // starting up); the deadline passing is kTimeout. `application_name` (what pg_stat_activity
  // shows) overrides the URL's when given; otherwise it is "xmtp-backend" unless the URL sets one.
  static DbResult<std::unique_ptr<Connection>> Open(const std::string& url,
                                                    std::string_view setting,
                                                    int statement_timeout_ms,
                                                    Clock::time_point deadline,
                                                    const std::string& application_name = {});
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // One statement with binary parameters and binary results. Success is a result with status
  // TUPLES_OK or COMMAND_OK; `what` names the operation in error messages. Past `deadline` the
  // statement is cancelled and kTimeout returned (the connection is closed when the cancel is not
  // answered within kCancelGrace); the outcome of a statement cut off that way is unknown.
  DbResult<PgResult> Exec(std::string_view what, const char* sql, const Params& params,
                          Clock::time_point deadline);
  DbResult<PgResult> Exec(std::string_view what, const char* sql, Clock::time_point deadline) {
    return Exec(what, sql, Params(), deadline);
  }

  // One statement of a pipeline: prepared once per connection like Exec's; `params` may be null.
  struct Statement {
    const char* sql = nullptr;
    const Params* params = nullptr;
  };
  // Several statements in one round trip (libpq pipeline mode, one Sync after the last), with
  // binary results in order. The first failing statement's error is returned with `*failed_at`
  // set to its index: the statements before it ran, the ones after it did not. On the deadline
  // or a lost connection the connection is closed (ending any server transaction) and
  // `*failed_at` is statements.size(): which statements ran is unknown.
  DbResult<std::vector<PgResult>> ExecPipeline(std::string_view what,
                                               const std::vector<Statement>& statements,
                                               Clock::time_point deadline, size_t* failed_at);
  // One or more statements without parameters (simple query protocol): BEGIN with SET LOCAL,
  // COMMIT, migration scripts. Returns the last statement's result.
  DbResult<PgResult> ExecScript(std::string_view what, const std::string& sql,
                                Clock::time_point deadline);

  // Whether the connection is open and healthy as far as the client can tell without a round
  // trip; `CheckIdle` additionally reads anything the server sent while the connection was idle
  // (for example the FATAL message of pg_terminate_backend) and returns false if it broke.
  bool usable() const;
  bool CheckIdle();

  PGTransactionStatusType transaction_status() const;
  int backend_pid() const;

  // Cancels any running statement and closes the connection; afterwards usable() is false.
  void CancelAndClose();
  // A token another thread can use to cancel this connection's running statement; null when the
  // connection is closed.
  std::unique_ptr<CancelToken> MakeCancelToken();

 private:
  explicit Connection(PGconn* conn) : conn_(conn) {}

  // Sends are complete; collects the results. On the deadline: cancel, drain, maybe close.
  DbResult<PgResult> Await(std::string_view what, Clock::time_point deadline);
  DbError OnDeadline(std::string_view what);
  // The error a failed result reports (closing the connection when the server ended it).
  DbError ErrorOf(std::string_view what, const PgResult& error);
  enum class Io : uint8_t { kOk, kTimeout, kBroken };
  // Pushes everything sent so far to the server, reading meanwhile.
  Io Flush(Clock::time_point deadline);
  // The next result (an empty PgResult ends one statement's results).
  Io Next(Clock::time_point deadline, PgResult* out);
  DbError Broken(std::string_view what);
  void Close();

  // ExecPipeline's halves. Statements not prepared yet, (sql, name), in Parse order.
  using Preparing = std::vector<std::pair<std::string, std::string>>;
  // Enters pipeline mode and sends the Parses, the statements and the Sync, flushed.
  DbResult<Preparing> SendPipeline(std::string_view what, const std::vector<Statement>& statements,
                                   Clock::time_point deadline);
  // Reads the Parses' and the statements' results and the Sync, and leaves pipeline mode.
  DbResult<std::vector<PgResult>> ReadPipeline(std::string_view what, const Preparing& preparing,
                                               size_t statements, Clock::time_point deadline,
                                               size_t* failed_at);

  struct Finish {
    void operator()(PGconn* c) const { PQfinish(c); }
  };
  std::unique_ptr<PGconn, Finish> conn_;
  // Statements Exec has prepared on this session, by SQL text: each is parsed and planned once
  // per connection instead of once per call (the planner dominated PostgreSQL's CPU under
  // publish load).
  std::unordered_map<std::string, std::string> prepared_;
};

}  // namespace xb::store::postgres
