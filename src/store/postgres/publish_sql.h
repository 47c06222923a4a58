// The SQL text of the PostgreSQL publish transaction (STORE.md 3.1 steps 5-13), and the SQLSTATEs
// its statements raise on purpose. Used by publish_transaction.cc only; kept apart so the
// transaction's control flow reads without the statements in between.
#pragma once

#include <string_view>

namespace xb::store::postgres::publish_sql {

// Topic lock keys: the first 8 bytes of SHA-256(topic), big-endian, as a signed bigint (STORE.md
// 2.4). The lock function is volatile, so PostgreSQL evaluates it after the sort, one distinct key
// at a time in ascending order (the planner postpones volatile output expressions past ORDER BY).
inline constexpr const char* kTopicLocks = R"sql(
SELECT pg_advisory_xact_lock(s.k)
FROM (SELECT DISTINCT ('x' || encode(substr(sha256(u.t), 1, 8), 'hex'))::bit(64)::bigint AS k
      FROM unnest($1::bytea[]) AS u(t)) AS s
ORDER BY s.k)sql";

// One unique-index probe per input (the note on lookups in rows.h).
inline constexpr const char* kFindStored = R"sql(
SELECT u.ord, e.sequence_id, e.server_ns, e.expiry_ns, e.is_commit_or_proposal
FROM unnest($1::bytea[], $2::bytea[]) WITH ORDINALITY AS u(topic, hash, ord)
CROSS JOIN LATERAL (
  SELECT x.* FROM envelopes AS x WHERE x.topic = u.topic AND x.message_hash = u.hash LIMIT 1) AS e
)sql";

inline constexpr const char* kIdentityHeads = R"sql(
SELECT u.ord,
       coalesce((SELECT w.last_sequence_id FROM topic_watermark AS w WHERE w.topic = u.topic), 0),
       (SELECT count(*) FROM envelopes AS e WHERE e.topic = u.topic)
FROM unnest($1::bytea[]) WITH ORDINALITY AS u(topic, ord))sql";

// server_ns: the transaction start time, microsecond precision, exact numeric arithmetic.
inline constexpr const char* kAllocate = R"sql(
SELECT nextval('envelope_sequence'),
       (extract(epoch FROM transaction_timestamp()) * 1000000000)::bigint
FROM generate_series(1, $1::int8) AS g(n)
ORDER BY g.n)sql";

inline constexpr const char* kInsert = R"sql(
INSERT INTO envelopes (sequence_id, topic, server_ns, expiry_ns, message_hash,
                       is_commit_or_proposal, payload, push_eligible, sender_hmac)
SELECT u.id, u.topic, $3::int8, u.expiry, u.hash, u.cp, u.payload, u.push, u.hmac
FROM unnest($1::int8[], $2::bytea[], $4::int8[], $5::bytea[], $6::bool[], $7::bytea[],
            $8::bool[], $9::bytea[])
     AS u(id, topic, expiry, hash, cp, payload, push, hmac))sql";

// Steps 7 (duplicates), 9, 10 and 11 as one statement, for rows with no identity projection, under
// the topic locks and the barrier taken by the statements before it in the same round trip. One
// output row per input, in input order: its stored row's metadata and whether that row was stored
// before. An input stored before is not inserted; of equal (topic, hash) inputs only the first is
// (the caller counts later ones as duplicates of it). Each new row gets one id drawn now, matched
// to the rows in input order by rank, so the order nextval ran in does not matter (ARC-030);
// server_ns is the transaction start for every row (ARC-035); expiry_ns the checked sum (bigint
// overflow is SQLSTATE 22003, OPS-020); each inserted topic's watermark advances (ARC-034). A topic
// that did not advance divides by zero (SQLSTATE 22012), which aborts the transaction before the
// COMMIT queued behind it runs: plain SQL has no RAISE, and the check has to hold inside the server
// to share the round trip. Payloads are read from the arrays once, by the insert; the duplicate
// logic sorts only (topic, hash, ord).
inline constexpr const char* kStoreNew = R"sql(
WITH input AS MATERIALIZED (
  SELECT u.topic, u.hash, u.ord FROM unnest($1::bytea[], $2::bytea[]) WITH ORDINALITY AS u(topic, hash, ord)),
stored AS MATERIALIZED (
  SELECT i.ord, e.sequence_id, e.server_ns, e.expiry_ns, e.is_commit_or_proposal
  FROM input AS i
  CROSS JOIN LATERAL (
    SELECT x.sequence_id, x.server_ns, x.expiry_ns, x.is_commit_or_proposal FROM envelopes AS x
    WHERE x.topic = i.topic AND x.message_hash = i.hash LIMIT 1) AS e),
fresh AS MATERIALIZED (
  SELECT DISTINCT ON (i.topic, i.hash) i.ord
  FROM input AS i
  WHERE NOT EXISTS (SELECT 1 FROM stored AS s WHERE s.ord = i.ord)
  ORDER BY i.topic, i.hash, i.ord),
drawn AS MATERIALIZED (SELECT nextval('envelope_sequence') AS id FROM fresh),
ranked AS (SELECT d.id, row_number() OVER (ORDER BY d.id) AS k FROM drawn AS d),
numbered AS (SELECT f.ord, row_number() OVER (ORDER BY f.ord) AS k FROM fresh AS f),
clock AS (SELECT (extract(epoch FROM transaction_timestamp()) * 1000000000)::bigint AS ns),
inserted AS (
  INSERT INTO envelopes (sequence_id, topic, server_ns, expiry_ns, message_hash,
                         is_commit_or_proposal, payload, push_eligible, sender_hmac)
  SELECT r.id, u.topic, c.ns, c.ns + u.retention * 1000000000, u.hash, u.cp, u.payload, u.push,
         u.hmac
  FROM unnest($1::bytea[], $2::bytea[], $3::int8[], $4::bool[], $5::bytea[], $6::bool[],
              $7::bytea[]) WITH ORDINALITY AS u(topic, hash, retention, cp, payload, push, hmac, ord)
  JOIN numbered AS n ON n.ord = u.ord
  JOIN ranked AS r ON r.k = n.k
  CROSS JOIN clock AS c
  RETURNING sequence_id, topic, message_hash, server_ns, expiry_ns, is_commit_or_proposal),
advanced AS (
  INSERT INTO topic_watermark AS w (topic, last_sequence_id)
  SELECT i.topic, max(i.sequence_id) FROM inserted AS i GROUP BY i.topic
  ON CONFLICT (topic) DO UPDATE SET last_sequence_id = excluded.last_sequence_id
    WHERE w.last_sequence_id < excluded.last_sequence_id
  RETURNING w.topic)
SELECT coalesce(s.sequence_id, n.sequence_id), coalesce(s.server_ns, n.server_ns),
       CASE WHEN s.ord IS NULL THEN n.expiry_ns ELSE s.expiry_ns END,
       coalesce(s.is_commit_or_proposal, n.is_commit_or_proposal), s.ord IS NOT NULL,
       1 / ((SELECT count(*) FROM advanced) = (SELECT count(DISTINCT x.topic) FROM inserted AS x))::int
FROM input AS i
LEFT JOIN stored AS s ON s.ord = i.ord
LEFT JOIN inserted AS n ON n.topic = i.topic AND n.message_hash = i.hash
ORDER BY i.ord)sql";
inline constexpr std::string_view kNumericOutOfRange = "22003";
inline constexpr std::string_view kDivisionByZero = "22012";

// ARC-034: a watermark only moves up; every row returned is a topic that advanced.
inline constexpr const char* kAdvanceWatermarks = R"sql(
INSERT INTO topic_watermark AS w (topic, last_sequence_id)
SELECT u.topic, max(u.id) FROM unnest($1::bytea[], $2::int8[]) AS u(topic, id) GROUP BY u.topic
ON CONFLICT (topic) DO UPDATE SET last_sequence_id = excluded.last_sequence_id
  WHERE w.last_sequence_id < excluded.last_sequence_id
RETURNING w.topic)sql";

// STORE.md 2.2 projection rules; the guards stop an older update undoing newer state.
inline constexpr const char* kAssociate = R"sql(
INSERT INTO identifier_association AS a
  (identifier, identifier_kind, inbox_id, association_sequence_id, revocation_sequence_id)
VALUES ($1::text, $2::int4::smallint, $3::bytea, $4::int8, NULL)
ON CONFLICT (identifier, identifier_kind, inbox_id) DO UPDATE
  SET association_sequence_id = excluded.association_sequence_id, revocation_sequence_id = NULL
  WHERE a.association_sequence_id < excluded.association_sequence_id
    AND (a.revocation_sequence_id IS NULL
         OR a.revocation_sequence_id < excluded.association_sequence_id))sql";

inline constexpr const char* kRevoke = R"sql(
UPDATE identifier_association SET revocation_sequence_id = $4::int8
WHERE identifier = $1::text AND identifier_kind = $2::int4::smallint AND inbox_id = $3::bytea
  AND association_sequence_id < $4::int8
  AND (revocation_sequence_id IS NULL OR revocation_sequence_id < $4::int8))sql";

inline constexpr const char* kBegin = "BEGIN ISOLATION LEVEL READ COMMITTED";
inline constexpr const char* kSetLimits =
    "SELECT set_config('idle_in_transaction_session_timeout', $1::text, true), "
    "set_config('statement_timeout', $2::text, true)";
inline constexpr const char* kSetStatementTimeout =
    "SELECT set_config('statement_timeout', $1::text, true)";
inline constexpr const char* kIdentityLock = "SELECT pg_advisory_xact_lock(0, 1)";
inline constexpr const char* kAllocationBarrier = "SELECT pg_advisory_xact_lock_shared(0, 2)";
inline constexpr const char* kCommit = "COMMIT";

}  // namespace xb::store::postgres::publish_sql
