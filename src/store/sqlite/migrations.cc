#include "store/sqlite/migrations.h"

#include <array>
#include <map>
#include <string>

namespace xb::store::sqlite {
namespace {

// STORE.md 2.2 and 2.3 mapped by section 8: bigint -> INTEGER, bytea -> BLOB (byte lengths),
// text -> TEXT, boolean -> INTEGER 0/1, smallint -> INTEGER with a range check. Tables keyed by a
// BLOB or a composite key are WITHOUT ROWID; `envelopes.sequence_id` is the rowid.
constexpr std::string_view kInitialSchema = R"sql(
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
  -- OPS-001 as a database invariant: commits, proposals, identity updates (kind 2) and
  -- commit-log entries (kind 4) never carry an expiry.
  CONSTRAINT envelopes_exempt_no_expiry CHECK (
    expiry_ns IS NULL OR (is_commit_or_proposal = 0 AND substr(topic, 1, 1) NOT IN (x'02', x'04')))
) STRICT;

CREATE INDEX envelopes_topic_sequence ON envelopes (topic, sequence_id);
CREATE INDEX envelopes_push_eligible ON envelopes (sequence_id) WHERE push_eligible = 1;

CREATE TABLE topic_watermark (
  topic BLOB PRIMARY KEY NOT NULL CHECK (length(topic) BETWEEN 1 AND 128),
  last_sequence_id INTEGER NOT NULL CHECK (last_sequence_id > 0)
) STRICT, WITHOUT ROWID;

CREATE TABLE identifier_association (
  identifier TEXT NOT NULL,
  identifier_kind INTEGER NOT NULL CHECK (identifier_kind BETWEEN -32768 AND 32767),
  inbox_id BLOB NOT NULL CHECK (length(inbox_id) = 32),
  association_sequence_id INTEGER NOT NULL CHECK (association_sequence_id > 0),
  revocation_sequence_id INTEGER CHECK (
    revocation_sequence_id IS NULL OR revocation_sequence_id > association_sequence_id),
  PRIMARY KEY (identifier, identifier_kind, inbox_id)
) STRICT, WITHOUT ROWID;

CREATE INDEX identifier_association_active
  ON identifier_association (identifier, identifier_kind, association_sequence_id DESC)
  WHERE revocation_sequence_id IS NULL;

CREATE TABLE allocation_boundary (
  singleton INTEGER PRIMARY KEY NOT NULL CHECK (singleton = 1),
  closed_sequence_id INTEGER NOT NULL CHECK (closed_sequence_id >= 0)
) STRICT;
INSERT INTO allocation_boundary (singleton, closed_sequence_id) VALUES (1, 0);

CREATE TABLE push_recipient (
  recipient_id BLOB PRIMARY KEY NOT NULL CHECK (length(recipient_id) = 32),
  secret_hash BLOB NOT NULL CHECK (length(secret_hash) = 32),
  channel INTEGER NOT NULL CHECK (channel BETWEEN 1 AND 3),
  delivery TEXT NOT NULL CHECK (length(delivery) BETWEEN 1 AND 2048),
  signing_key BLOB CHECK (signing_key IS NULL OR length(signing_key) BETWEEN 16 AND 64),
  topic_count INTEGER NOT NULL CHECK (topic_count >= 0),
  renewed_ns INTEGER NOT NULL CHECK (renewed_ns >= 0)
) STRICT, WITHOUT ROWID;

CREATE INDEX push_recipient_renewed ON push_recipient (renewed_ns);

CREATE TABLE push_subscription (
  recipient_id BLOB NOT NULL REFERENCES push_recipient (recipient_id) ON DELETE CASCADE,
  topic BLOB NOT NULL CHECK (length(topic) BETWEEN 1 AND 128),
  since_sequence_id INTEGER NOT NULL CHECK (since_sequence_id >= 0),
  hmac_epoch_base INTEGER,
  hmac_key_0 BLOB CHECK (hmac_key_0 IS NULL OR length(hmac_key_0) = 42),
  hmac_key_1 BLOB CHECK (hmac_key_1 IS NULL OR length(hmac_key_1) = 42),
  hmac_key_2 BLOB CHECK (hmac_key_2 IS NULL OR length(hmac_key_2) = 42),
  include_commits INTEGER NOT NULL CHECK (include_commits IN (0, 1)),
  PRIMARY KEY (recipient_id, topic)
) STRICT, WITHOUT ROWID;

CREATE INDEX push_subscription_topic ON push_subscription (topic);

CREATE TABLE push_cursor (
  singleton INTEGER PRIMARY KEY NOT NULL DEFAULT 1 CHECK (singleton = 1),
  sequence_id INTEGER NOT NULL CHECK (sequence_id >= 0)
) STRICT;
INSERT INTO push_cursor (singleton, sequence_id) VALUES (1, 0);
)sql";

// PUSH.md 3.1 constraints the initial schema lacked: signing_key only for channel 3 (HTTPS); the
// epoch base stored exactly when a key is, never negative, and keys filling the slots in order.
// SQLite cannot add a CHECK to an existing table (and rebuilding push_recipient would cascade into
// push_subscription), so triggers enforce them; RAISE(ABORT) is a constraint error (kInvariant).
// PUSH-219 then corrects rows already stored: commits and proposals were stored not eligible when
// should_push was false; Welcomes were always stored eligible.
// implements: PUSH-219 (rows stored before the fix)
constexpr std::string_view kPushConstraints = R"sql(
CREATE TRIGGER push_recipient_signing_key_insert BEFORE INSERT ON push_recipient
WHEN NEW.signing_key IS NOT NULL AND NEW.channel <> 3
BEGIN SELECT RAISE(ABORT, 'CHECK constraint failed: push_recipient_signing_key'); END;

CREATE TRIGGER push_recipient_signing_key_update BEFORE UPDATE OF channel, signing_key
ON push_recipient
WHEN NEW.signing_key IS NOT NULL AND NEW.channel <> 3
BEGIN SELECT RAISE(ABORT, 'CHECK constraint failed: push_recipient_signing_key'); END;

CREATE TRIGGER push_subscription_key_window_insert BEFORE INSERT ON push_subscription
WHEN NOT ((NEW.hmac_epoch_base IS NULL) = (NEW.hmac_key_0 IS NULL)
          AND (NEW.hmac_epoch_base IS NULL OR NEW.hmac_epoch_base >= 0)
          AND (NEW.hmac_key_1 IS NULL OR NEW.hmac_key_0 IS NOT NULL)
          AND (NEW.hmac_key_2 IS NULL OR NEW.hmac_key_1 IS NOT NULL))
BEGIN SELECT RAISE(ABORT, 'CHECK constraint failed: push_subscription_key_window'); END;

CREATE TRIGGER push_subscription_key_window_update BEFORE UPDATE ON push_subscription
WHEN NOT ((NEW.hmac_epoch_base IS NULL) = (NEW.hmac_key_0 IS NULL)
          AND (NEW.hmac_epoch_base IS NULL OR NEW.hmac_epoch_base >= 0)
          AND (NEW.hmac_key_1 IS NULL OR NEW.hmac_key_0 IS NOT NULL)
          AND (NEW.hmac_key_2 IS NULL OR NEW.hmac_key_1 IS NOT NULL))
BEGIN SELECT RAISE(ABORT, 'CHECK constraint failed: push_subscription_key_window'); END;

-- PUSH-219: commits and proposals are eligible whatever should_push said; only rows above the
-- stored boundary can ever be delivered (no subscription existed before this release).
UPDATE envelopes SET push_eligible = 1
WHERE sequence_id > (SELECT closed_sequence_id FROM allocation_boundary WHERE singleton = 1)
  AND is_commit_or_proposal = 1 AND push_eligible = 0;
)sql";

// STORE.md 9.2 (issue 35): prune_state keeps the greatest id the pruning pass ever deleted,
// written in the deleting transaction, so a stream's catch-up can tell a pruned range from a lost
// row (fanout/wave_read.h). The pass's index on the expiry is not made here: only a deployment
// that prunes builds it, at its first pass (Store::PreparePruning), and pays for it on publishes.
constexpr std::string_view kPrune = R"sql(
CREATE TABLE prune_state (
  singleton INTEGER PRIMARY KEY NOT NULL CHECK (singleton = 1),
  pruned_through INTEGER NOT NULL CHECK (pruned_through >= 0)
) STRICT;
INSERT INTO prune_state (singleton, pruned_through) VALUES (1, 0);
)sql";

constexpr std::array<Migration, 3> kMigrations = {{
    {.version = 20260907000000, .name = "initial schema", .sql = kInitialSchema},
    {.version = 20261205000000, .name = "push constraints", .sql = kPushConstraints},
    {.version = 20261206000000, .name = "prune", .sql = kPrune},
}};

constexpr const char* kCreateBookkeeping = R"sql(
CREATE TABLE IF NOT EXISTS schema_migrations (
  version INTEGER PRIMARY KEY NOT NULL,
  name TEXT NOT NULL,
  checksum BLOB NOT NULL,
  applied_ns INTEGER NOT NULL
) STRICT
)sql";

Status Failed(std::string_view step, const StoreError& error) {
  return Unavailable("database migration failed (" + std::string(step) + "): " + error.message);
}

}  // namespace

std::span<const Migration> EmbeddedMigrations() { return kMigrations; }

std::string MigrationChecksum(std::string_view sql) {
  uint64_t hash = 14695981039346656037ULL;
  for (char c : sql) {
    hash ^= static_cast<uint8_t>(c);
    hash *= 1099511628211ULL;
  }
  std::string out(8, '\0');
  for (int i = 7; i >= 0; --i) {
    out[i] = static_cast<char>(hash & 0xff);
    hash >>= 8;
  }
  return out;
}

// implements: STORE.md 2.6 and 8 (migrations)
Result<MigrationOutcome> ApplyMigrations(Connection& conn, std::span<const Migration> migrations,
                                         int64_t now_ns) {
  if (StoreResult<void> e = conn.Exec(kCreateBookkeeping, "create schema_migrations"); !e.ok()) {
    return Failed("bookkeeping", e.error());
  }
  std::map<int64_t, std::string> applied;  // version -> checksum
  {
    StatementUse rows = conn.Use("SELECT version, checksum FROM schema_migrations ORDER BY version",
                                 "read schema_migrations");
    while (rows.Step()) {
      applied.emplace(rows.ColumnInt64(0), rows.ColumnBlob(1));
    }
    if (rows.error()) {
      return Failed("bookkeeping", *rows.error());
    }
  }

  MigrationOutcome outcome;
  std::map<int64_t, const Migration*> known;
  for (const Migration& m : migrations) {
    known.emplace(m.version, &m);
  }
  for (const auto& [version, checksum] : applied) {
    auto it = known.find(version);
    if (it == known.end()) {
      outcome.unknown.push_back(version);
    } else if (checksum != MigrationChecksum(it->second->sql)) {
      return Status(StatusCode::kFailedPrecondition,
                    "database migration " + std::to_string(version) +
                        " differs from the one this binary carries");
    }
  }

  for (const Migration& m : migrations) {
    if (applied.contains(m.version)) {
      continue;
    }
    // One transaction per version: the schema change and its bookkeeping row commit together.
    if (StoreResult<void> e = conn.Exec("BEGIN IMMEDIATE", "begin migration"); !e.ok()) {
      return Failed(std::to_string(m.version), e.error());
    }
    std::string sql(m.sql);  // sqlite3_exec needs a terminated string
    StoreResult<void> e = conn.Exec(sql.c_str(), "apply migration");
    if (e.ok()) {
      e = conn.Use(
                  "INSERT INTO schema_migrations (version, name, checksum, applied_ns) "
                  "VALUES (?1, ?2, ?3, ?4)",
                  "record migration")
              .BindInt64(1, m.version)
              .BindText(2, m.name)
              .BindBlob(3, MigrationChecksum(m.sql))
              .BindInt64(4, now_ns)
              .Run();
    }
    if (e.ok()) {
      e = conn.Exec("COMMIT", "commit migration");
    }
    if (!e.ok()) {
      conn.RollbackIfOpen();
      return Failed(std::to_string(m.version), e.error());
    }
    outcome.applied.push_back(m.version);
  }
  return outcome;
}

}  // namespace xb::store::sqlite
