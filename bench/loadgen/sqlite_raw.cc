// bench/loadgen/sqlite_raw: the raw SQLite rate for publish-shaped rows, the "raw" column of
// bench/publish.sh. One connection, one thread (SQLite has one writer), the pragmas of our
// engine (src/store/sqlite/connection.cc: WAL, synchronous=FULL, foreign_keys=ON), a table
// shaped like `envelopes` (src/store/sqlite/migrations.cc), one transaction per row:
// BEGIN IMMEDIATE; INSERT; COMMIT.
//
//   sqlite_raw --db PATH [--payload B] [--topics T] [--duration S] [--warmup S]
//
// Prints a human line and "RESULT tps=... p50_us=... p99_us=...". Exit 1 on an SQLite error.
#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

constexpr const char* kSchema = R"sql(
CREATE TABLE envelopes (
  sequence_id INTEGER PRIMARY KEY NOT NULL CHECK (sequence_id > 0),
  topic BLOB NOT NULL CHECK (length(topic) BETWEEN 1 AND 128),
  server_ns INTEGER NOT NULL CHECK (server_ns >= 0),
  expiry_ns INTEGER CHECK (expiry_ns IS NULL OR expiry_ns >= server_ns),
  message_hash BLOB NOT NULL CHECK (length(message_hash) = 32),
  is_commit_or_proposal INTEGER NOT NULL CHECK (is_commit_or_proposal IN (0, 1)),
  payload BLOB NOT NULL,
  push_eligible INTEGER NOT NULL CHECK (push_eligible IN (0, 1)),
  sender_hmac BLOB CHECK (sender_hmac IS NULL OR length(sender_hmac) = 32),
  CONSTRAINT envelopes_topic_message_hash UNIQUE (topic, message_hash),
  CONSTRAINT envelopes_exempt_no_expiry CHECK (
    expiry_ns IS NULL OR (is_commit_or_proposal = 0 AND substr(topic, 1, 1) NOT IN (x'02', x'04')))
) STRICT;
CREATE INDEX envelopes_topic_sequence ON envelopes (topic, sequence_id);
CREATE INDEX envelopes_push_eligible ON envelopes (sequence_id) WHERE push_eligible = 1;
)sql";

[[noreturn]] void Fail(sqlite3* db, const char* what) {
  std::fprintf(stderr, "sqlite_raw: %s: %s\n", what, db ? sqlite3_errmsg(db) : "?");
  std::exit(1);
}

void Exec(sqlite3* db, const char* sql) {
  if (sqlite3_exec(db, sql, nullptr, nullptr, nullptr) != SQLITE_OK) Fail(db, sql);
}

void Step(sqlite3* db, sqlite3_stmt* st, const char* what) {
  if (sqlite3_step(st) != SQLITE_DONE) Fail(db, what);
  sqlite3_reset(st);
}

}  // namespace

int main(int argc, char** argv) {
  std::string path;
  int payload = 1024;
  int topics = 64;
  double duration_s = 5;
  double warmup_s = 1;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    const char* v = argv[i + 1];
    if (a == "--db") {
      path = v;
    } else if (a == "--payload") {
      payload = std::atoi(v);
    } else if (a == "--topics") {
      topics = std::atoi(v);
    } else if (a == "--duration") {
      duration_s = std::atof(v);
    } else if (a == "--warmup") {
      warmup_s = std::atof(v);
    } else {
      std::fprintf(stderr, "sqlite_raw: unknown argument %s\n", a.c_str());
      return 2;
    }
  }
  if (path.empty() || payload < 1 || topics < 1 || duration_s <= 0) {
    std::fprintf(stderr,
                 "usage: sqlite_raw --db PATH [--payload B] [--topics T] [--duration S] "
                 "[--warmup S]\n");
    return 2;
  }
  sqlite3* db = nullptr;
  if (sqlite3_open(path.c_str(), &db) != SQLITE_OK) Fail(db, "open");
  Exec(db, "PRAGMA busy_timeout = 5000; PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON;");
  Exec(db, "PRAGMA journal_mode = WAL");
  Exec(db, kSchema);

  sqlite3_stmt *begin = nullptr, *insert = nullptr, *commit = nullptr;
  if (sqlite3_prepare_v2(db, "BEGIN IMMEDIATE", -1, &begin, nullptr) != SQLITE_OK ||
      sqlite3_prepare_v2(db, "COMMIT", -1, &commit, nullptr) != SQLITE_OK ||
      sqlite3_prepare_v2(db,
                         "INSERT INTO envelopes (sequence_id, topic, server_ns, expiry_ns, "
                         "message_hash, is_commit_or_proposal, payload, push_eligible, "
                         "sender_hmac) VALUES (?1, ?2, ?3, NULL, ?4, 0, ?5, 0, NULL)",
                         -1, &insert, nullptr) != SQLITE_OK) {
    Fail(db, "prepare");
  }
  std::string body(static_cast<size_t>(payload), '\0');
  uint64_t x = 0x9e3779b97f4a7c15ull;
  for (char& c : body) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    c = static_cast<char>(x & 0xff);
  }
  std::string hash(32, '\0');
  std::vector<uint32_t> lat;
  lat.reserve(1 << 18);
  const auto start = Clock::now();
  const auto measure_start =
      start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(warmup_s));
  const auto stop = measure_start + std::chrono::duration_cast<Clock::duration>(
                                        std::chrono::duration<double>(duration_s));
  int64_t seq = 0;
  uint64_t rows = 0;
  Clock::time_point m0 = measure_start;
  bool measuring = false;
  while (true) {
    const auto t0 = Clock::now();
    if (t0 >= stop) break;
    if (!measuring && t0 >= measure_start) {
      measuring = true;
      m0 = t0;
    }
    ++seq;
    // Distinct row: the counter in the payload and the hash; 17-byte group topic.
    std::string topic(1, '\0');
    topic += std::string("xbbench", 7) + '\0';
    const uint64_t t = static_cast<uint64_t>(seq) % static_cast<uint64_t>(topics);
    for (int s = 56; s >= 0; s -= 8) topic.push_back(static_cast<char>((t >> s) & 0xff));
    for (int b = 0; b < 8; ++b) {
      hash[static_cast<size_t>(b)] = static_cast<char>((seq >> (8 * b)) & 0xff);
      body[static_cast<size_t>(b) % body.size()] = hash[static_cast<size_t>(b)];
    }
    const int64_t now_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                               std::chrono::system_clock::now().time_since_epoch())
                               .count();
    Step(db, begin, "BEGIN");
    sqlite3_bind_int64(insert, 1, seq);
    sqlite3_bind_blob(insert, 2, topic.data(), static_cast<int>(topic.size()), SQLITE_TRANSIENT);
    sqlite3_bind_int64(insert, 3, now_ns);
    sqlite3_bind_blob(insert, 4, hash.data(), 32, SQLITE_TRANSIENT);
    sqlite3_bind_blob(insert, 5, body.data(), static_cast<int>(body.size()), SQLITE_TRANSIENT);
    Step(db, insert, "INSERT");
    Step(db, commit, "COMMIT");
    if (measuring) {
      ++rows;
      lat.push_back(static_cast<uint32_t>(
          std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - t0).count()));
    }
  }
  const double secs = std::chrono::duration<double>(Clock::now() - m0).count();
  sqlite3_finalize(begin);
  sqlite3_finalize(insert);
  sqlite3_finalize(commit);
  sqlite3_close(db);
  std::sort(lat.begin(), lat.end());
  auto pct = [&](double p) -> uint32_t {
    if (lat.empty()) return 0;
    return lat[std::min(lat.size() - 1, static_cast<size_t>(p * static_cast<double>(lat.size())))];
  };
  std::printf(
      "sqlite_raw: %llu single-row transactions in %.2f s (%.0f tps), %d-byte payload, "
      "latency us p50 %u p99 %u\n",
      static_cast<unsigned long long>(rows), secs, static_cast<double>(rows) / secs, payload,
      pct(0.5), pct(0.99));
  std::printf("RESULT tps=%.1f p50_us=%u p99_us=%u rows=%llu secs=%.3f\n",
              static_cast<double>(rows) / secs, pct(0.5), pct(0.99),
              static_cast<unsigned long long>(rows), secs);
  return 0;
}
