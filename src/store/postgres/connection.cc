#include "store/postgres/connection.h"

#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <string>
#include <vector>

namespace xb::store::postgres {
namespace {

enum class Wait { kReady, kTimeout, kError };

// Waits until `fd` is ready for `events` or `deadline` passes.
Wait WaitSocket(int fd, short events, Clock::time_point deadline) {
  if (fd < 0) {
    return Wait::kError;
  }
  while (true) {
    auto now = Clock::now();
    if (now >= deadline) {
      return Wait::kTimeout;
    }
    auto ms = std::chrono::ceil<std::chrono::milliseconds>(deadline - now).count();
    pollfd p{.fd = fd, .events = events, .revents = 0};
    int rc = poll(&p, 1, static_cast<int>(std::min<int64_t>(ms, INT_MAX)));
    if (rc > 0) {
      return Wait::kReady;  // POLLERR and POLLHUP too: libpq reports the failure when it reads
    }
    if (rc < 0 && errno != EINTR) {
      return Wait::kError;
    }
  }
}

// libpq's connection error text can name hosts, users and databases: it is reduced to a fixed
// reason here and never passed on. The implied SQLSTATE lets startup retry a replica that has not
// replayed CREATE DATABASE yet or is still starting.
DbError ConnectFailure(std::string_view setting, const char* libpq_message) {
  std::string_view text = libpq_message ? libpq_message : "";
  auto has = [&](std::string_view needle) { return text.find(needle) != std::string_view::npos; };
  std::string_view reason = "connection failed";
  std::string sqlstate;
  if (has("password") || has("authentication")) {
    reason = "authentication failed";
    sqlstate = "28000";
  } else if (has("database") && has("does not exist")) {
    reason = "the database does not exist";
    sqlstate = "3D000";
  } else if (has("role") && has("does not exist")) {
    reason = "the role does not exist";
    sqlstate = "28000";
  } else if (has("starting up") || has("not yet accepting") || has("shutting down") ||
             has("recovery mode")) {
    reason = "the server is starting up or shutting down";
    sqlstate = "57P03";
  } else if (has("Connection refused")) {
    reason = "connection refused";
  } else if (has("translate host name")) {
    reason = "unknown host";
  } else if (has("timeout")) {
    reason = "timed out";
  } else if (has("too many")) {
    reason = "too many connections";
    sqlstate = "53300";
  } else if (has("SSL") || has("certificate")) {
    reason = "TLS failure";
  }
  return DbError{.kind = ErrorKind::kConnection,
                 .sqlstate = std::move(sqlstate),
                 .message = std::string(setting) + ": cannot connect: " + std::string(reason)};
}

// Server notices (and a FATAL message that arrives while idle) would go to stderr by default and
// can quote data: they are dropped; failures surface through results and connection status.
void IgnoreNotice(void*, const char*) {}

}  // namespace

DbResult<std::unique_ptr<Connection>> Connection::Open(const std::string& url,
                                                       std::string_view setting,
                                                       int statement_timeout_ms,
                                                       Clock::time_point deadline,
                                                       const std::string& application_name) {
  char* parse_error = nullptr;
  PQconninfoOption* parsed = PQconninfoParse(url.c_str(), &parse_error);
  if (parsed == nullptr) {
    PQfreemem(parse_error);  // may quote the URL
    return DbError{.kind = ErrorKind::kOther,
                   .sqlstate = "",
                   .message = std::string(setting) + ": not a valid connection URL"};
  }
  PQconninfoFree(parsed);

  // Keywords before dbname are defaults the URL may override; those after it override the URL.
  const bool forced_name = !application_name.empty();
  const char* const keys[] = {"application_name", "dbname", "client_encoding",
                              forced_name ? "application_name" : nullptr, nullptr};
  const char* const values[] = {"xmtp-backend", url.c_str(), "UTF8",
                                forced_name ? application_name.c_str() : nullptr, nullptr};
  PGconn* raw = PQconnectStartParams(keys, values, /*expand_dbname=*/1);
  if (raw == nullptr) {
    return ConnectFailure(setting, "out of memory");
  }
  std::unique_ptr<Connection> conn(new Connection(raw));
  if (PQstatus(raw) == CONNECTION_BAD) {
    return ConnectFailure(setting, PQerrorMessage(raw));
  }
  PQsetNoticeProcessor(raw, IgnoreNotice, nullptr);

  PostgresPollingStatusType state = PGRES_POLLING_WRITING;
  while (state != PGRES_POLLING_OK) {
    if (state == PGRES_POLLING_FAILED) {
      return ConnectFailure(setting, PQerrorMessage(raw));
    }
    short events = state == PGRES_POLLING_READING ? POLLIN : POLLOUT;
    Wait w = WaitSocket(PQsocket(raw), events, deadline);
    if (w == Wait::kTimeout) {
      return DbError{.kind = ErrorKind::kTimeout,
                     .sqlstate = "",
                     .message = std::string(setting) + ": cannot connect: timed out"};
    }
    if (w == Wait::kError) {
      return ConnectFailure(setting, PQerrorMessage(raw));
    }
    state = PQconnectPoll(raw);
  }
  if (PQsetnonblocking(raw, 1) != 0) {
    return ConnectFailure(setting, "cannot switch to non-blocking mode");
  }

  // implements: STORE.md 2.5 (statement_timeout set when a connection opens, ARC-051)
  // client_connection_check_interval: a connection the client closed (deadline, release hook)
  // ends its running statement and transaction within a second even while it waits for a lock.
  // plan_cache_mode: every statement is prepared once per connection and written so that its
  // generic plan is index probes (the note on lookups in rows.h); without this PostgreSQL plans
  // the unnest() statements afresh at every execution, which measured about a sixth of its CPU
  // under a publish load.
  auto set = conn->ExecScript(std::string(setting) + ": session setup",
                              "SET statement_timeout = " + std::to_string(statement_timeout_ms) +
                                  "; SET client_connection_check_interval = 1000"
                                  "; SET plan_cache_mode = force_generic_plan",
                              deadline);
  if (!set.ok()) {
    return std::move(set).error();
  }
  return conn;
}

Connection::~Connection() = default;

DbResult<PgResult> Connection::Exec(std::string_view what, const char* sql, const Params& params,
                                    Clock::time_point deadline) {
  if (!usable()) {
    return ConnectionLost(what);
  }
  if (Clock::now() >= deadline) {
    return DeadlineExceeded(what);  // nothing sent
  }
  auto it = prepared_.find(sql);
  if (it == prepared_.end()) {
    std::string name = "xb_" + std::to_string(prepared_.size());
    if (PQsendPrepare(conn_.get(), name.c_str(), sql, params.count(), params.types()) == 0) {
      return Broken(what);
    }
    auto prepared = Await(what, deadline);
    if (!prepared.ok()) {
      return prepared;
    }
    it = prepared_.emplace(sql, std::move(name)).first;
  }
  std::vector<const char*> values = params.values();
  if (PQsendQueryPrepared(conn_.get(), it->second.c_str(), params.count(), values.data(),
                          params.lengths(), params.formats(), /*resultFormat=*/1) == 0) {
    return Broken(what);
  }
  return Await(what, deadline);
}

DbResult<std::vector<PgResult>> Connection::ExecPipeline(std::string_view what,
                                                         const std::vector<Statement>& statements,
                                                         Clock::time_point deadline,
                                                         size_t* failed_at) {
  *failed_at = statements.size();
  if (!usable()) {
    return ConnectionLost(what);
  }
  if (Clock::now() >= deadline) {
    *failed_at = 0;
    return DeadlineExceeded(what);  // nothing sent
  }
  XB_TRY(const Preparing preparing, SendPipeline(what, statements, deadline));
  return ReadPipeline(what, preparing, statements.size(), deadline, failed_at);
}

DbResult<Connection::Preparing> Connection::SendPipeline(std::string_view what,
                                                         const std::vector<Statement>& statements,
                                                         Clock::time_point deadline) {
  PGconn* c = conn_.get();
  if (PQenterPipelineMode(c) == 0) {
    return Broken(what);
  }
  // Statements this session has not prepared yet are prepared in the same round trip, ahead of
  // the queries; a name is kept only once its Parse succeeded.
  Preparing preparing;
  std::vector<const char*> names;
  for (const Statement& st : statements) {
    auto it = prepared_.find(st.sql);
    if (it != prepared_.end()) {
      names.push_back(it->second.c_str());
      continue;
    }
    auto pending = std::find_if(preparing.begin(), preparing.end(),
                                [&](const auto& p) { return p.first == st.sql; });
    if (pending == preparing.end()) {
      std::string name = "xb_" + std::to_string(prepared_.size() + preparing.size());
      const Params none;
      const Params& params = st.params ? *st.params : none;
      if (PQsendPrepare(c, name.c_str(), st.sql, params.count(), params.types()) == 0) {
        return Broken(what);
      }
      preparing.emplace_back(st.sql, std::move(name));
    }
    names.push_back(nullptr);  // filled below: `preparing` may still grow
  }
  for (size_t i = 0; i < statements.size(); ++i) {
    if (names[i] == nullptr) {
      for (const auto& [sql, name] : preparing) {
        if (sql == statements[i].sql) {
          names[i] = name.c_str();
        }
      }
    }
  }
  for (size_t i = 0; i < statements.size(); ++i) {
    const Params none;
    const Params& params = statements[i].params ? *statements[i].params : none;
    std::vector<const char*> values = params.values();
    if (PQsendQueryPrepared(c, names[i], params.count(), values.data(), params.lengths(),
                            params.formats(), /*resultFormat=*/1) == 0) {
      return Broken(what);
    }
  }
  if (PQpipelineSync(c) == 0) {
    return Broken(what);
  }
  if (Io io = Flush(deadline); io != Io::kOk) {
    Close();  // which statements ran is unknown; closing ends the server transaction
    return io == Io::kTimeout ? DeadlineExceeded(what) : ConnectionLost(what);
  }
  return preparing;
}

DbResult<std::vector<PgResult>> Connection::ReadPipeline(std::string_view what,
                                                         const Preparing& preparing,
                                                         size_t statements,
                                                         Clock::time_point deadline,
                                                         size_t* failed_at) {
  // Results arrive in send order: the Parses, the statements, then the Sync. Each command's
  // results end with an empty result; after a failure every later command reports
  // PGRES_PIPELINE_ABORTED.
  std::vector<PgResult> results;
  std::optional<DbError> error;
  const size_t commands = preparing.size() + statements;
  for (size_t k = 0; k < commands; ++k) {
    PgResult result;
    PgResult end;
    Io io = Next(deadline, &result);
    if (io == Io::kOk && result) {
      io = Next(deadline, &end);
    }
    if (io != Io::kOk || !result || end) {
      Close();
      return io == Io::kTimeout ? DeadlineExceeded(what) : ConnectionLost(what);
    }
    ExecStatusType status = PQresultStatus(result.get());
    const bool ok = status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK;
    if (!ok && !error && status != PGRES_PIPELINE_ABORTED) {
      error = ErrorOf(what, result);
      *failed_at = k < preparing.size() ? 0 : k - preparing.size();
      if (!usable()) {
        return *error;
      }
    }
    if (k < preparing.size()) {
      if (ok) {
        prepared_.emplace(preparing[k].first, preparing[k].second);
      }
    } else {
      results.push_back(std::move(result));
    }
  }
  PgResult sync;
  if (Io io = Next(deadline, &sync);
      io != Io::kOk || !sync || PQresultStatus(sync.get()) != PGRES_PIPELINE_SYNC) {
    Close();
    return io == Io::kTimeout ? DeadlineExceeded(what) : ConnectionLost(what);
  }
  if (PQexitPipelineMode(conn_.get()) == 0) {
    return Broken(what);
  }
  if (error) {
    return *error;
  }
  *failed_at = statements;
  return results;
}

Connection::Io Connection::Flush(Clock::time_point deadline) {
  PGconn* c = conn_.get();
  while (true) {
    int flushed = PQflush(c);
    if (flushed == 0) {
      return Io::kOk;
    }
    if (flushed < 0) {
      return Io::kBroken;
    }
    Wait w = WaitSocket(PQsocket(c), POLLIN | POLLOUT, deadline);
    if (w == Wait::kTimeout) {
      return Io::kTimeout;
    }
    if (w == Wait::kError || PQconsumeInput(c) == 0) {
      return Io::kBroken;
    }
  }
}

Connection::Io Connection::Next(Clock::time_point deadline, PgResult* out) {
  PGconn* c = conn_.get();
  while (PQisBusy(c) != 0) {
    Wait w = WaitSocket(PQsocket(c), POLLIN, deadline);
    if (w == Wait::kTimeout) {
      return Io::kTimeout;
    }
    if (w == Wait::kError || PQconsumeInput(c) == 0) {
      return Io::kBroken;
    }
  }
  *out = PgResult(PQgetResult(c));
  return Io::kOk;
}

DbResult<PgResult> Connection::ExecScript(std::string_view what, const std::string& sql,
                                          Clock::time_point deadline) {
  if (!usable()) {
    return ConnectionLost(what);
  }
  if (Clock::now() >= deadline) {
    return DeadlineExceeded(what);
  }
  if (PQsendQuery(conn_.get(), sql.c_str()) == 0) {
    return Broken(what);
  }
  return Await(what, deadline);
}

DbResult<PgResult> Connection::Await(std::string_view what, Clock::time_point deadline) {
  PGconn* c = conn_.get();
  // Non-blocking mode: push the whole request out, reading meanwhile so that a server busy
  // writing to us cannot deadlock the exchange.
  switch (Flush(deadline)) {
    case Io::kOk:
      break;
    case Io::kTimeout:
      return OnDeadline(what);
    case Io::kBroken:
      return Broken(what);
  }

  PgResult last;
  PgResult error;
  while (true) {
    while (PQisBusy(c) != 0) {
      Wait w = WaitSocket(PQsocket(c), POLLIN, deadline);
      if (w == Wait::kTimeout) {
        return OnDeadline(what);
      }
      if (w == Wait::kError || PQconsumeInput(c) == 0) {
        return Broken(what);
      }
    }
    PGresult* raw = PQgetResult(c);
    if (raw == nullptr) {
      break;
    }
    PgResult result(raw);
    ExecStatusType status = PQresultStatus(raw);
    if (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK || status == PGRES_EMPTY_QUERY) {
      last = std::move(result);
    } else if (!error) {
      error = std::move(result);  // the first error; a script stops at it
    }
  }

  if (error) {
    return ErrorOf(what, error);
  }
  if (!last) {
    return Broken(what);
  }
  return last;
}

DbError Connection::ErrorOf(std::string_view what, const PgResult& error) {
  const char* sqlstate = PQresultErrorField(error.get(), PG_DIAG_SQLSTATE);
  const char* constraint = PQresultErrorField(error.get(), PG_DIAG_CONSTRAINT_NAME);
  bool lost = PQstatus(conn_.get()) != CONNECTION_OK;
  if (lost) {
    Close();  // for example FATAL 25P03 or 57P01: the server ended the session
  }
  if (sqlstate == nullptr || *sqlstate == '\0') {
    return lost ? ConnectionLost(what)
                : DbError{.kind = ErrorKind::kOther,
                          .sqlstate = "",
                          .message = std::string(what) + ": client library error"};
  }
  return ServerError(what, sqlstate, constraint ? constraint : "");
}

DbError Connection::OnDeadline(std::string_view what) {
  // implements: STORE.md 3.3 (the service deadline cancels the running statement; if the
  // connection does not answer, it is closed, which ends the server transaction)
  // libpq 15's PQcancel connects to the server without a timeout of its own: against a server
  // that stopped answering it can block for the kernel's TCP connect timeout. The transaction
  // stays bounded inside PostgreSQL regardless (local statement_timeout and
  // idle_in_transaction_session_timeout, STORE.md 3.3).
  PGconn* c = conn_.get();
  bool answered = false;
  if (PGcancel* cancel = PQgetCancel(c)) {
    char errbuf[256];
    bool sent = PQcancel(cancel, errbuf, sizeof errbuf) == 1;
    PQfreeCancel(cancel);
    if (sent) {
      auto grace = Clock::now() + kCancelGrace;
      while (true) {
        if (PQisBusy(c) != 0) {
          if (WaitSocket(PQsocket(c), POLLIN, grace) != Wait::kReady || PQconsumeInput(c) == 0) {
            break;
          }
          continue;
        }
        PGresult* raw = PQgetResult(c);
        if (raw == nullptr) {
          answered = true;
          break;
        }
        PQclear(raw);
      }
    }
  }
  if (!answered || PQstatus(c) != CONNECTION_OK) {
    Close();
  }
  return DeadlineExceeded(what);
}

DbError Connection::Broken(std::string_view what) {
  Close();
  return ConnectionLost(what);
}

void Connection::Close() { conn_.reset(); }

bool Connection::usable() const {
  return conn_ != nullptr && PQstatus(conn_.get()) == CONNECTION_OK;
}

bool Connection::CheckIdle() {
  if (!usable()) {
    return false;
  }
  // An idle connection receives nothing but notices and, before the server ends it, a FATAL
  // message and end of file; the end may need a second read after the message.
  for (int reads = 0; reads < 4; ++reads) {
    pollfd p{.fd = PQsocket(conn_.get()), .events = POLLIN, .revents = 0};
    if (poll(&p, 1, 0) <= 0) {
      break;
    }
    if (PQconsumeInput(conn_.get()) == 0 || PQstatus(conn_.get()) != CONNECTION_OK) {
      Close();
      return false;
    }
  }
  return true;
}

PGTransactionStatusType Connection::transaction_status() const {
  return conn_ ? PQtransactionStatus(conn_.get()) : PQTRANS_UNKNOWN;
}

int Connection::backend_pid() const { return conn_ ? PQbackendPID(conn_.get()) : 0; }

CancelToken::~CancelToken() { PQfreeCancel(cancel_); }

bool CancelToken::Send() {
  char errbuf[256];
  return PQcancel(cancel_, errbuf, sizeof errbuf) == 1;
}

std::unique_ptr<CancelToken> Connection::MakeCancelToken() {
  if (!conn_) {
    return nullptr;
  }
  PGcancel* cancel = PQgetCancel(conn_.get());
  return cancel == nullptr ? nullptr : std::make_unique<CancelToken>(cancel);
}

void Connection::CancelAndClose() {
  if (conn_ && PQtransactionStatus(conn_.get()) == PQTRANS_ACTIVE) {
    if (PGcancel* cancel = PQgetCancel(conn_.get())) {
      char errbuf[256];
      PQcancel(cancel, errbuf, sizeof errbuf);
      PQfreeCancel(cancel);
    }
  }
  Close();
}

}  // namespace xb::store::postgres
