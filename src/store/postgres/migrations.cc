#include "store/postgres/migrations.h"

#include <algorithm>
#include <array>
#include <string>

namespace xb::store::postgres {
namespace {

// implements: STORE.md 2.1 (envelope_sequence, CACHE 1), 2.2 (tables), 2.3 (indexes)
constexpr std::string_view kInitialSchema = R"sql(
-- CACHE 1: last_value is exactly the greatest id ever handed out, which the closed allocation
-- boundary relies on (STORE.md 2.1, 4.2). No writer caches, rewinds or setvals it (ARC-040).
CREATE SEQUENCE envelope_sequence AS bigint
  START WITH 1 INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 CACHE 1 NO CYCLE;

-- No DEFAULT on sequence_id: the only way an id is produced is nextval inside the publish
-- transaction, after the allocation barrier is held.
CREATE TABLE envelopes (
  sequence_id bigint NOT NULL CHECK (sequence_id > 0),
  topic bytea NOT NULL CHECK (length(topic) BETWEEN 1 AND 128),
  server_ns bigint NOT NULL CHECK (server_ns >= 0),
  expiry_ns bigint CHECK (expiry_ns >= server_ns),
  message_hash bytea NOT NULL CHECK (length(message_hash) = 32),
  is_commit_or_proposal boolean NOT NULL,
  payload bytea NOT NULL,
  push_eligible boolean NOT NULL,
  sender_hmac bytea CHECK (length(sender_hmac) = 32),
  CONSTRAINT envelopes_pkey PRIMARY KEY (sequence_id),
  CONSTRAINT envelopes_topic_message_hash_key UNIQUE (topic, message_hash),
  -- OPS-001 as a database invariant: commits, proposals, identity updates (kind 2) and
  -- commit-log entries (kind 4) never carry an expiry.
  CONSTRAINT envelopes_exempt_no_expiry CHECK (
    expiry_ns IS NULL
    OR (NOT is_commit_or_proposal AND substr(topic, 1, 1) NOT IN ('\x02'::bytea, '\x04'::bytea)))
);
ALTER SEQUENCE envelope_sequence OWNED BY envelopes.sequence_id;

CREATE INDEX envelopes_topic_sequence ON envelopes (topic, sequence_id);
CREATE INDEX envelopes_push_eligible ON envelopes (sequence_id) WHERE push_eligible;

CREATE TABLE topic_watermark (
  topic bytea NOT NULL CHECK (length(topic) BETWEEN 1 AND 128),
  last_sequence_id bigint NOT NULL CHECK (last_sequence_id > 0),
  CONSTRAINT topic_watermark_pkey PRIMARY KEY (topic)
);

CREATE TABLE identifier_association (
  identifier text NOT NULL,
  identifier_kind smallint NOT NULL,
  inbox_id bytea NOT NULL CHECK (length(inbox_id) = 32),
  association_sequence_id bigint NOT NULL CHECK (association_sequence_id > 0),
  revocation_sequence_id bigint CHECK (revocation_sequence_id > association_sequence_id),
  CONSTRAINT identifier_association_pkey PRIMARY KEY (identifier, identifier_kind, inbox_id)
);

CREATE INDEX identifier_association_active
  ON identifier_association (identifier, identifier_kind, association_sequence_id DESC)
  WHERE revocation_sequence_id IS NULL;

CREATE TABLE allocation_boundary (
  singleton boolean NOT NULL CHECK (singleton),
  closed_sequence_id bigint NOT NULL CHECK (closed_sequence_id >= 0),
  CONSTRAINT allocation_boundary_pkey PRIMARY KEY (singleton)
);
INSERT INTO allocation_boundary (singleton, closed_sequence_id) VALUES (true, 0);

CREATE TABLE push_recipient (
  recipient_id bytea NOT NULL CHECK (length(recipient_id) = 32),
  secret_hash bytea NOT NULL CHECK (length(secret_hash) = 32),
  channel smallint NOT NULL CHECK (channel BETWEEN 1 AND 3),
  delivery text NOT NULL CHECK (length(delivery) BETWEEN 1 AND 2048),
  signing_key bytea CHECK (length(signing_key) BETWEEN 16 AND 64),
  topic_count integer NOT NULL CHECK (topic_count >= 0),
  renewed_ns bigint NOT NULL CHECK (renewed_ns >= 0),
  CONSTRAINT push_recipient_pkey PRIMARY KEY (recipient_id)
);

CREATE INDEX push_recipient_renewed ON push_recipient (renewed_ns);

CREATE TABLE push_subscription (
  recipient_id bytea NOT NULL REFERENCES push_recipient (recipient_id) ON DELETE CASCADE,
  topic bytea NOT NULL CHECK (length(topic) BETWEEN 1 AND 128),
  since_sequence_id bigint NOT NULL CHECK (since_sequence_id >= 0),
  hmac_epoch_base bigint,
  hmac_key_0 bytea CHECK (length(hmac_key_0) = 42),
  hmac_key_1 bytea CHECK (length(hmac_key_1) = 42),
  hmac_key_2 bytea CHECK (length(hmac_key_2) = 42),
  include_commits boolean NOT NULL,
  CONSTRAINT push_subscription_pkey PRIMARY KEY (recipient_id, topic)
);

CREATE INDEX push_subscription_topic ON push_subscription (topic);

CREATE TABLE push_cursor (
  singleton boolean NOT NULL DEFAULT true CHECK (singleton),
  sequence_id bigint NOT NULL CHECK (sequence_id >= 0),
  CONSTRAINT push_cursor_pkey PRIMARY KEY (singleton)
);
INSERT INTO push_cursor (singleton, sequence_id) VALUES (true, 0);
)sql";

// PUSH.md 3.1 constraints the initial schema lacked: signing_key only for channel 3 (HTTPS); the
// epoch base stored exactly when a key is, never negative, and keys filling the slots in order.
// Then PUSH-219 corrects rows already stored: commits and proposals were stored not eligible when
// should_push was false (Welcomes were always stored eligible). The UPDATE reads every envelope
// once; it rewrites only the commits and proposals stored not eligible.
// implements: PUSH-219 (rows stored before the fix)
constexpr std::string_view kPushConstraints = R"sql(
ALTER TABLE push_recipient ADD CONSTRAINT push_recipient_signing_key
  CHECK (signing_key IS NULL OR channel = 3);
ALTER TABLE push_subscription ADD CONSTRAINT push_subscription_key_window CHECK (
  (hmac_epoch_base IS NULL) = (hmac_key_0 IS NULL)
  AND (hmac_epoch_base IS NULL OR hmac_epoch_base >= 0)
  AND (hmac_key_1 IS NULL OR hmac_key_0 IS NOT NULL)
  AND (hmac_key_2 IS NULL OR hmac_key_1 IS NOT NULL));
-- PUSH-219: commits and proposals are eligible whatever should_push said. Only rows above the
-- stored boundary can ever be delivered (no subscription existed before this release, and each
-- starts at or above the boundary of its day), so the primary key's range is enough: no full scan.
UPDATE envelopes SET push_eligible = true
WHERE sequence_id > (SELECT closed_sequence_id FROM allocation_boundary WHERE singleton)
  AND is_commit_or_proposal AND NOT push_eligible;
)sql";

// STORE.md 9.2 (issue 35): prune_state keeps the greatest id the pruning pass ever deleted,
// written in the deleting transaction, so a stream's catch-up can tell a pruned range from a lost
// row (fanout/wave_read.h). The pass's index on the expiry is not made here: only a deployment
// that prunes builds it, at its first pass (Store::PreparePruning), and pays for it on publishes.
constexpr std::string_view kPrune = R"sql(
CREATE TABLE prune_state (
  singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
  pruned_through bigint NOT NULL CHECK (pruned_through >= 0)
);
INSERT INTO prune_state (singleton, pruned_through) VALUES (true, 0);
)sql";

constexpr std::array<Migration, 3> kMigrations = {{
    {.version = 20260907000000, .name = "initial schema", .sql = kInitialSchema},
    {.version = 20261205000000, .name = "push constraints", .sql = kPushConstraints},
    {.version = 20261206000000, .name = "prune", .sql = kPrune},
}};

constexpr const char* kCreateBookkeeping = R"sql(
CREATE TABLE IF NOT EXISTS schema_migrations (
  version bigint PRIMARY KEY,
  name text NOT NULL,
  checksum bytea NOT NULL,
  applied_ns bigint NOT NULL
))sql";

// Per applied version: whether this binary knows it, and whether the checksums agree.
constexpr const char* kCompareApplied = R"sql(
SELECT s.version, u.version IS NOT NULL, s.checksum = sha256(u.sql)
FROM schema_migrations AS s
LEFT JOIN unnest($1::int8[], $2::bytea[]) AS u(version, sql) ON u.version = s.version
ORDER BY s.version)sql";

constexpr const char* kRecord = R"sql(
INSERT INTO schema_migrations (version, name, checksum, applied_ns)
VALUES ($1::int8, $2::text, sha256($3::bytea),
        (extract(epoch FROM clock_timestamp()) * 1000000000)::bigint))sql";

Status Failed(std::string_view step, const DbError& error) {
  Status status = ToStatus(error);
  return Status(status.code(),
                "database migration failed (" + std::string(step) + "): " + error.message);
}

}  // namespace

std::span<const Migration> EmbeddedMigrations() { return kMigrations; }

// implements: STORE.md 2.6 (migrations, ARC-004, ARC-005)
Result<MigrationOutcome> ApplyMigrations(Connection& conn, std::span<const Migration> migrations,
                                         Clock::time_point deadline) {
  // Concurrent starters queue here; the lock is released below or when the connection closes.
  if (auto r = conn.Exec("migration lock", "SELECT pg_advisory_lock(0, 4)", deadline); !r.ok()) {
    return Failed("lock", r.error());
  }
  if (auto r = conn.ExecScript("create schema_migrations", kCreateBookkeeping, deadline); !r.ok()) {
    return Failed("bookkeeping", r.error());
  }

  MigrationOutcome outcome;
  std::vector<int64_t> applied;
  {
    std::vector<int64_t> versions;
    std::vector<std::string_view> sqls;
    for (const Migration& m : migrations) {
      versions.push_back(m.version);
      sqls.push_back(m.sql);
    }
    Params params;
    params.Int8Array(versions).ByteaArray(sqls);
    auto r = conn.Exec("read schema_migrations", kCompareApplied, params, deadline);
    if (!r.ok()) {
      return Failed("bookkeeping", r.error());
    }
    const PgResult& rows = r.value();
    for (int i = 0; i < rows.rows(); ++i) {
      int64_t version = rows.Int8(i, 0);
      applied.push_back(version);
      if (!rows.Bool(i, 1)) {
        outcome.unknown.push_back(version);
      } else if (!rows.Bool(i, 2)) {
        return Status(StatusCode::kFailedPrecondition,
                      "database migration " + std::to_string(version) +
                          " differs from the one this binary carries");
      }
    }
  }

  for (const Migration& m : migrations) {
    if (std::find(applied.begin(), applied.end(), m.version) != applied.end()) {
      continue;
    }
    // One transaction per version: the schema change and its bookkeeping row commit together.
    std::string step = std::to_string(m.version);
    auto r = conn.ExecScript("begin migration", "BEGIN", deadline);
    if (r.ok()) {
      r = conn.ExecScript("apply migration", std::string(m.sql), deadline);
    }
    if (r.ok()) {
      Params params;
      params.Int8(m.version).Text(m.name).Bytea(m.sql);
      r = conn.Exec("record migration", kRecord, params, deadline);
    }
    if (r.ok()) {
      r = conn.ExecScript("commit migration", "COMMIT", deadline);
    }
    if (!r.ok()) {
      DbError error = std::move(r).error();
      (void)conn.ExecScript("rollback migration", "ROLLBACK", deadline);
      if (error.kind == ErrorKind::kOther && !error.sqlstate.empty()) {
        error.kind = ErrorKind::kInvariant;  // the migration itself failed: INTERNAL
      }
      return Failed(step, error);
    }
    outcome.applied.push_back(m.version);
  }

  if (auto r = conn.Exec("migration unlock", "SELECT pg_advisory_unlock(0, 4)", deadline);
      !r.ok()) {
    return Failed("unlock", r.error());
  }
  return outcome;
}

}  // namespace xb::store::postgres
