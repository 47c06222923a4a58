#!/usr/bin/env bash
# bench/publish.sh: Publish throughput and Query / QueryNewest latency of xmtp-backend on both
# engines (SQLite embedded, PostgreSQL 15), beside the raw engine rate for the same rows measured
# in the same run (pgbench; a SQLite insert loop). See bench/README.md and shared/BENCHMARKS.md.
#
#   bench/publish.sh [--quick] [--repeats N] [--duration S] [--binary PATH] [--engines LIST]
#                    [--transport h2|grpc] [--v3]
#
# --quick = 1 repeat of 3 s. Default 3 repeats of 5 s (+1 s warm-up), medians in the table.
# --engines: comma list of sqlite,postgres (default both). --binary defaults to
# build/src/xmtp-backend. --transport: the load client's, h2 (libnghttp2, default) or grpc
# (grpc++). The load client (bench/loadgen) is built into build-bench-loadgen/, never by the main
# build. --v3 (h2 only) adds the V3 API's twins (issue 33): MlsApi SendGroupMessages after each
# Publish case and QueryGroupMessages after each Query case, same clients and requests, with a
# table of their paired ratios (goal >= 0.9). Nothing here asserts a timing.
set -euo pipefail
export LC_ALL=C

readonly ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
readonly PROTO_DIR="$ROOT/proto"
readonly GEN_DIR="$ROOT/build-bench-loadgen"
readonly SERVER_CPU=1
readonly LOAD_CPU=0
readonly WARMUP_S=1
readonly PAYLOAD=1024              # bytes of MLS PrivateMessage per envelope
readonly TOPICS=64                 # group topics the load spreads over
readonly QUERY_LIMIT=10            # Query: one topic, cursor 0, this limit
readonly PUBLISH_CLIENTS=(1 8 32)
readonly PUBLISH_ENVELOPES=(1 10)
readonly READ_CLIENTS=(1 8)
readonly PACKAGES=(g++ pkg-config protobuf-compiler libgrpc++-dev protobuf-compiler-grpc
                   libnghttp2-dev libsqlite3-dev postgresql-15 postgresql-client-15
                   postgresql-contrib)

ARGS=("$@")
repeats=3
duration=5
binary="$ROOT/build/src/xmtp-backend"
engines="sqlite,postgres"
transport=h2
v3=0
usage() {
  sed -n '2,13p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
}
while [[ $# -gt 0 ]]; do
  case "$1" in
    --quick) repeats=1; duration=3 ;;
    --repeats) repeats="$2"; shift ;;
    --duration) duration="$2"; shift ;;
    --binary) binary="$2"; shift ;;
    --engines) engines="$2"; shift ;;
    --transport) transport="$2"; shift ;;
    --v3) v3=1 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "unknown argument: $1" >&2; usage >&2; exit 2 ;;
  esac
  shift
done
[[ "$repeats" =~ ^[1-9][0-9]*$ ]] || { echo "--repeats wants a positive integer" >&2; exit 2; }
[[ "$duration" =~ ^[1-9][0-9]*$ ]] || { echo "--duration wants whole seconds" >&2; exit 2; }
[[ "$engines" =~ ^(sqlite|postgres)(,(sqlite|postgres))?$ ]] || {
  echo "--engines wants sqlite, postgres or both" >&2; exit 2; }
[[ "$transport" =~ ^(h2|grpc)$ ]] || { echo "--transport wants h2 or grpc" >&2; exit 2; }
[[ $v3 == 0 || $transport == h2 ]] || { echo "--v3 runs on --transport h2 only" >&2; exit 2; }
binary="$(realpath "$binary")"
[[ -x "$binary" ]] || { echo "--binary $binary is not an executable" >&2; exit 2; }

log() { printf '[publish.sh] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"

# ---------------------------------------------------------------------------------------------
# Temp dir and cleanup: the server, the load client and the PostgreSQL cluster die on exit.
# ---------------------------------------------------------------------------------------------
TMP="$(mktemp -d /tmp/xb-publish.XXXXXX)"
chmod 755 "$TMP"  # the PostgreSQL cluster below runs as user postgres when we are root
PG_DIR=""
SERVER_PID=""
LOAD_PID=""
stop_server() {
  [[ -n "$SERVER_PID" ]] || return 0
  kill -TERM "$SERVER_PID" 2>/dev/null || true
  for _ in $(seq 50); do
    kill -0 "$SERVER_PID" 2>/dev/null || break
    sleep 0.1
  done
  kill -KILL "$SERVER_PID" 2>/dev/null || true
  wait "$SERVER_PID" 2>/dev/null || true
  SERVER_PID=""
}
cleanup() {
  if [[ -n "$LOAD_PID" ]]; then
    kill -TERM "$LOAD_PID" 2>/dev/null || true
    wait "$LOAD_PID" 2>/dev/null || true
  fi
  stop_server
  stop_pg_cluster "$PG_DIR"
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---------------------------------------------------------------------------------------------
# Build the load client and the raw SQLite loop (only when a source or proto changed).
# ---------------------------------------------------------------------------------------------
echo "command: $0 ${ARGS[*]}"
ensure_packages
build_loadgen
LOADGEN="$GEN_DIR/loadgen"
SQLITE_RAW="$GEN_DIR/sqlite_raw"

# ---------------------------------------------------------------------------------------------
# Server
# ---------------------------------------------------------------------------------------------
# server_toml NAME PORT URL: writes the config and prints its path.
server_toml() {
  local f="$TMP/$1.toml"
  cat >"$f" <<EOF
[server]
identifier = "bench.local"
listen = "127.0.0.1:$2"
log_level = "warn"
request_logger = false
[telemetry]
metrics_listen = ""
[database]
url = "$3"
EOF
  echo "$f"
}

# start_xb NAME URL: starts our server pinned to CPU 1 on a free port; sets SERVER_PID, PORT.
start_xb() {
  local name=$1 url=$2 try port deadline cfg
  for try in 1 2 3 4 5; do
    port=$(pick_port)
    cfg=$(server_toml "$name" "$port" "$url")
    taskset -c "$SERVER_CPU" "$binary" --config "$(cat "$cfg")" >>"$TMP/$name.log" 2>&1 &
    SERVER_PID=$!
    deadline=$((SECONDS + 30))
    while [[ -z "$(ss -Htln "sport = :$port")" ]]; do
      if ! kill -0 "$SERVER_PID" 2>/dev/null; then
        log "$name exited before listening on $port (try $try): $(tail -n 3 "$TMP/$name.log" | tr '\n' ' ')"
        wait "$SERVER_PID" || true
        SERVER_PID=""
        continue 2
      fi
      ((SECONDS < deadline)) || die "$name did not listen on 127.0.0.1:$port within 30 s"
      sleep 0.05
    done
    PORT=$port
    CONFIG_SHOWN="$(cat "$cfg")"
    return
  done
  die "$name could not start"
}

# Results: R[engine.case.repeat] = RESULT line; cases are "pub.C.E", "query.C", "newest.C".
declare -A R=()
declare -A RAW=()       # RAW[engine.C.repeat] = tps
declare -A NOTES=()
SERVER_ERRORS=()

# One loadgen run (pinned to CPU 0) against the running server; stores the RESULT line.
load() {
  local key=$1; shift
  local out="$TMP/load.out" line
  if ! run_tracked taskset -c "$LOAD_CPU" "$LOADGEN" --target "127.0.0.1:$PORT" \
      --transport "$transport" --server-pid "$SERVER_PID" --payload "$PAYLOAD" \
      --topics "$TOPICS" --limit "$QUERY_LIMIT" --duration "$duration" --warmup "$WARMUP_S" \
      "$@" >"$out" 2>&1; then
    log "loadgen failed for $key: $(tail -n 3 "$out" | tr '\n' ' ')"
    return 0
  fi
  sed 's/^/    /' "$out" | grep -v '^    RESULT' >&2
  line=$(grep '^RESULT ' "$out" || true)
  R[$key]="$line"
  if [[ "$(kv errors "$line")" != "0" || "$(kv warmup_errors "$line")" != "0" ]]; then
    NOTES[$key]="non-OK statuses: $(kv error_codes "$line") $(grep '^FIRST_ERROR' "$out" | cut -c13-)"
  fi
  kill -0 "$SERVER_PID" 2>/dev/null || die "server died during $key (log: $(tail -n 5 "$TMP/$ENGINE.log" | tr '\n' ' '))"
}

# Verify once before load: a Publish of E envelopes returns E metas and Query returns them.
verify() {
  local e out
  for e in "${PUBLISH_ENVELOPES[@]}"; do
    out=$("$LOADGEN" --target "127.0.0.1:$PORT" --mode verify --envelopes "$e" \
      --payload "$PAYLOAD" 2>&1) || die "$ENGINE: correctness gate failed: $out"
    log "$ENGINE gate: $out"
  done
}

run_engine_cases() {
  local rep c e
  for rep in $(seq "$repeats"); do
    for c in "${PUBLISH_CLIENTS[@]}"; do
      for e in "${PUBLISH_ENVELOPES[@]}"; do
        log "$ENGINE repeat $rep: publish c=$c e=$e"
        # With --v3 the pair's order alternates by repeat, so neither runs first every time.
        if ((v3 && rep % 2 == 0)); then load "$ENGINE.v3send.$c.$e.$rep" --mode v3-send --clients "$c" --envelopes "$e"; fi
        load "$ENGINE.pub.$c.$e.$rep" --mode publish --clients "$c" --envelopes "$e"
        if ((v3 && rep % 2)); then load "$ENGINE.v3send.$c.$e.$rep" --mode v3-send --clients "$c" --envelopes "$e"; fi
      done
    done
    # The raw engine rate right after our publishes, so both see the same machine.
    "raw_$ENGINE" "$rep"
    for c in "${READ_CLIENTS[@]}"; do
      log "$ENGINE repeat $rep: query c=$c, newest c=$c"
      if ((v3 && rep % 2 == 0)); then load "$ENGINE.v3query.$c.$rep" --mode v3-query --clients "$c"; fi
      load "$ENGINE.query.$c.$rep" --mode query --clients "$c"
      if ((v3 && rep % 2)); then load "$ENGINE.v3query.$c.$rep" --mode v3-query --clients "$c"; fi
      load "$ENGINE.newest.$c.$rep" --mode newest --clients "$c"
    done
  done
}

# raw_sqlite REP: one writer (SQLite allows one); the same row size, pragmas and table shape; on
# the server's CPU while our server idles.
raw_sqlite() {
  local out
  rm -f "$TMP/sqlite/raw.db"*
  log "sqlite raw repeat $1"
  out=$(run_tracked taskset -c "$SERVER_CPU" "$SQLITE_RAW" --db "$TMP/sqlite/raw.db" \
    --payload "$PAYLOAD" --topics "$TOPICS" --duration "$duration" --warmup "$WARMUP_S") \
    || die "sqlite_raw failed: $out"
  grep -v '^RESULT' <<<"$out" | sed 's/^/    /' >&2 || true
  RAW[sqlite.1.$1]=$(kv tps "$(grep '^RESULT' <<<"$out")")
}

# raw_postgres REP: pgbench single-row INSERT transactions at the publish client counts, pgbench
# on CPU 0, into the scratch database xb_raw (our server idles meanwhile).
raw_postgres() {
  local c out tps failed
  for c in "${PUBLISH_CLIENTS[@]}"; do
    log "postgres raw repeat $1: pgbench -c $c"
    out=$(run_tracked taskset -c "$LOAD_CPU" pgbench -n -M prepared -f "$PG_SCRIPT" -c "$c" \
      -j 2 -T "$duration" "$PG_BASE/xb_raw" 2>&1) || {
      log "pgbench -c $c failed: $(grep -m 3 -i error <<<"$out" | tr '\n' ' ')"
      NOTES[raw.postgres.$c.$1]="pgbench failed"
      continue
    }
    tps=$(sed -n 's/^tps = \([0-9.]*\).*/\1/p' <<<"$out" | head -n 1)
    failed=$(sed -n 's/^number of failed transactions: \([0-9]*\).*/\1/p' <<<"$out")
    echo "    pgbench -c $c: tps $tps, failed ${failed:-?}" >&2
    RAW[postgres.$c.$1]=$(awk -v t="$tps" 'BEGIN {printf "%.1f", t}')
  done
}

# The server runs at log_level warn: any line it wrote is worth showing.
scan_server_log() {
  local n
  n=$(grep -c . "$TMP/$ENGINE.log" || true)
  if [[ "$n" -gt 0 ]]; then
    SERVER_ERRORS+=("$ENGINE server log: $n line(s), the first 10:" "$(grep . "$TMP/$ENGINE.log" | head -n 10)")
  fi
}

LOADAVG_BEFORE="$(cut -d' ' -f1-3 /proc/loadavg)"

# ---------------------------------------------------------------------------------------------
# SQLite
# ---------------------------------------------------------------------------------------------
if [[ "$engines" == *sqlite* ]]; then
  ENGINE=sqlite
  mkdir -p "$TMP/sqlite"
  start_xb sqlite "sqlite://$TMP/sqlite/xmtp.db"
  SQLITE_CONFIG="$CONFIG_SHOWN"
  verify
  run_engine_cases
  stop_server
  scan_server_log
fi

# ---------------------------------------------------------------------------------------------
# PostgreSQL
# ---------------------------------------------------------------------------------------------
PG_SCRIPT="$TMP/pg_raw.sql"
cat >"$PG_SCRIPT" <<'EOF'
\set t random(0, 63)
WITH s AS (SELECT nextval('envelope_sequence') AS id)
INSERT INTO envelopes (sequence_id, topic, server_ns, expiry_ns, message_hash,
                       is_commit_or_proposal, payload, push_eligible, sender_hmac)
SELECT id, decode('00787862656e636800' || lpad(to_hex(:t::bigint), 16, '0'), 'hex'),
       (extract(epoch FROM clock_timestamp()) * 1e9)::bigint, NULL, sha256(int8send(id)),
       false, overlay(p.b PLACING int8send(id) FROM 1), false, NULL
FROM s, raw_payload p;
EOF
# The `envelopes` table as src/store/postgres/migrations.cc creates it, in a scratch database.
PG_SCHEMA="$TMP/pg_schema.sql"
cat >"$PG_SCHEMA" <<EOF
CREATE SEQUENCE envelope_sequence AS bigint
  START WITH 1 INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 CACHE 1 NO CYCLE;
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
  CONSTRAINT envelopes_exempt_no_expiry CHECK (
    expiry_ns IS NULL
    OR (NOT is_commit_or_proposal AND substr(topic, 1, 1) NOT IN ('\x02'::bytea, '\x04'::bytea)))
);
CREATE INDEX envelopes_topic_sequence ON envelopes (topic, sequence_id);
CREATE INDEX envelopes_push_eligible ON envelopes (sequence_id) WHERE push_eligible;
-- A fixed pseudo-random $PAYLOAD-byte body (incompressible, below the TOAST threshold anyway).
CREATE TABLE raw_payload AS
  SELECT decode(string_agg(lpad(to_hex((random() * 255)::int), 2, '0'), ''), 'hex') AS b
  FROM generate_series(1, $PAYLOAD);
EOF

if [[ "$engines" == *postgres* ]]; then
  ENGINE=postgres
  PG_DIR="$TMP/pg"
  start_pg_cluster "$PG_DIR" "$TMP/pg_cluster.log"
  PG_SYNC="$(psql "$XB_PG_PRIMARY" -XAtc 'SHOW synchronous_commit')"
  psql "$XB_PG_PRIMARY" -Xq -v ON_ERROR_STOP=1 -c 'CREATE DATABASE xb_bench' \
    -c 'CREATE DATABASE xb_raw' >/dev/null
  psql "$PG_BASE/xb_raw" -Xq -v ON_ERROR_STOP=1 -f "$PG_SCHEMA" >/dev/null
  start_xb postgres "$PG_BASE/xb_bench"
  POSTGRES_CONFIG="$CONFIG_SHOWN"
  verify
  run_engine_cases
  stop_server
  scan_server_log
fi
LOADAVG_AFTER="$(cut -d' ' -f1-3 /proc/loadavg)"

# ---------------------------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------------------------
# med KEYPREFIX FIELD: median of FIELD over repeats.
med() {
  local rep v
  for rep in $(seq "$repeats"); do
    v=$(kv "$2" "${R[$1.$rep]:-}")
    [[ -n "$v" ]] && echo "$v"
  done | median
}
raw_med() {
  local rep
  for rep in $(seq "$repeats"); do
    [[ -n "${RAW[$1.$rep]:-}" ]] && echo "${RAW[$1.$rep]}"
  done | median
}
per_cpu() { awk -v n="$1" -v c="$2" 'BEGIN {if (c == "nan" || c + 0 <= 0) print "-"; else printf "%.0f", n / c}'; }

cat <<EOF

== configuration ==
binary      $binary
machine     $(nproc) CPUs; server on CPU $SERVER_CPU (taskset), loadgen / pgbench on CPU $LOAD_CPU; PostgreSQL unpinned
load avg    before $LOADAVG_BEFORE, after $LOADAVG_AFTER
runs        $repeats repeat(s) x ${duration} s measured after ${WARMUP_S} s warm-up; medians shown
loadgen     transport $transport: $(if [[ $transport == h2 ]]; then echo "libnghttp2 $(pkg-config --modversion libnghttp2) on one epoll thread (h2c)"; else echo "grpc++ $(pkg-config --modversion grpc++) async stubs on one completion-queue thread"; fi); one HTTP/2 connection and one call in flight per client, 10 s deadline
publish     group messages: MLS PrivateMessage of $PAYLOAD bytes, distinct ciphertext, $TOPICS topics round-robin
reads       Query: 1 topic, cursor 0, limit $QUERY_LIMIT; QueryNewest: 1 topic; over the same $TOPICS topics (populated by the publishes)
raw sqlite  bench/loadgen/sqlite_raw.cc: 1 connection, WAL, synchronous=FULL, BEGIN IMMEDIATE; INSERT; COMMIT per row, envelopes-shaped table
EOF
if [[ "$engines" == *postgres* ]]; then
  cat <<EOF
raw pg      pgbench -n -M prepared -f pg_raw.sql -c C -j 2 -T $duration, one envelopes-shaped INSERT per transaction
postgres    $PG_VERSION, synchronous_commit=$PG_SYNC (pg_cluster.sh defaults; a streaming replica runs beside it, hot_standby_feedback = on, wal_receiver_status_interval = 1s)
--- pg_raw.sql ---
$(cat "$PG_SCRIPT")
EOF
fi
[[ -n "${SQLITE_CONFIG:-}" ]] && printf -- '--- server config (sqlite) ---\n%s\n' "$SQLITE_CONFIG"
[[ -n "${POSTGRES_CONFIG:-}" ]] && printf -- '--- server config (postgres) ---\n%s\n' "$POSTGRES_CONFIG"

echo
echo "== publish (medians) =="
printf '%-9s %4s %4s %9s %9s %8s %8s %10s %7s %6s %10s %9s\n' engine c env/req req/s env/s p50_us p99_us env/cpu-s cli_us errors raw_tps ours/raw
for eng in sqlite postgres; do
  [[ "$engines" == *$eng* ]] || continue
  for c in "${PUBLISH_CLIENTS[@]}"; do
    if [[ $eng == sqlite ]]; then raw=$(raw_med sqlite.1); else raw=$(raw_med "postgres.$c"); fi
    for e in "${PUBLISH_ENVELOPES[@]}"; do
      k="$eng.pub.$c.$e"
      eps=$(med "$k" eps)
      cpu=$(med "$k" server_cpu_s)
      secs=$(med "$k" secs)
      envs=$(awk -v e="$eps" -v s="$secs" 'BEGIN {if (e == "nan") print "nan"; else print e * s}')
      printf '%-9s %4s %4s %9s %9s %8s %8s %10s %7s %6s %10s %9s\n' "$eng" "$c" "$e" \
        "$(med "$k" rps)" "$eps" "$(med "$k" p50_us)" "$(med "$k" p99_us)" \
        "$(per_cpu "$envs" "$cpu")" "$(med "$k" client_cpu_us_per_call)" "$(med "$k" errors)" \
        "$raw" "$(ratio "$eps" "$raw")"
    done
  done
done
echo "(ours/raw = stored envelopes per second / raw single-row INSERT transactions per second;"
echo " sqlite raw is one writer, so every sqlite row compares with the same raw figure; cli_us ="
echo " the load client's own CPU per call: it runs on CPU $LOAD_CPU, as pgbench does, beside unpinned PostgreSQL)"

echo
echo "== reads (medians) =="
printf '%-9s %-12s %4s %9s %8s %8s %8s %7s %6s %6s\n' engine method c req/s p50_us p90_us p99_us cli_us empty errors
for eng in sqlite postgres; do
  [[ "$engines" == *$eng* ]] || continue
  for m in query newest; do
    for c in "${READ_CLIENTS[@]}"; do
      k="$eng.$m.$c"
      printf '%-9s %-12s %4s %9s %8s %8s %8s %7s %6s %6s\n' "$eng" \
        "$([[ $m == query ]] && echo Query || echo QueryNewest)" "$c" "$(med "$k" rps)" \
        "$(med "$k" p50_us)" "$(med "$k" p90_us)" "$(med "$k" p99_us)" \
        "$(med "$k" client_cpu_us_per_call)" "$(med "$k" empty)" "$(med "$k" errors)"
    done
  done
done

echo
echo "== goals (reported, not asserted) =="
if [[ "$engines" == *postgres* ]]; then
  echo "postgres publish, 32 clients, 1 env/req: ours/raw $(ratio "$(med postgres.pub.32.1 eps)" "$(raw_med postgres.32)") (goal >= 0.70)"
fi
if [[ "$engines" == *sqlite* ]]; then
  echo "sqlite publish, 8 clients, 1 env/req:    ours/raw $(ratio "$(med sqlite.pub.8.1 eps)" "$(raw_med sqlite.1)") (goal >= 1.00)"
fi

# paired V3 V1 FIELD: the median over repeats of (V3 run / v1 run) in FIELD; the two runs of a
# pair are seconds apart, so they share the machine's slower drifts.
paired() {
  local rep a b
  for rep in $(seq "$repeats"); do
    a=$(kv "$3" "${R[$1.$rep]:-}")
    b=$(kv "$3" "${R[$2.$rep]:-}")
    if [[ -n "$a" && -n "$b" ]]; then echo "$(ratio "$a" "$b")"; fi
  done | grep -v '^-$' | median
}
if ((v3)); then
  echo
  echo "== V3 API beside xmtp.backend.v1 (medians; ratio = median of per-repeat V3/v1 req/s) =="
  printf '%-9s %-34s %4s %4s %9s %9s %7s
' engine pair c env v1_req/s v3_req/s ratio
  for eng in sqlite postgres; do
    [[ "$engines" == *$eng* ]] || continue
    for c in "${PUBLISH_CLIENTS[@]}"; do
      for e in "${PUBLISH_ENVELOPES[@]}"; do
        printf '%-9s %-34s %4s %4s %9s %9s %7s
' "$eng" "SendGroupMessages / Publish" "$c" "$e" \
          "$(med "$eng.pub.$c.$e" rps)" "$(med "$eng.v3send.$c.$e" rps)" \
          "$(paired "$eng.v3send.$c.$e" "$eng.pub.$c.$e" rps)"
      done
    done
    for c in "${READ_CLIENTS[@]}"; do
      printf '%-9s %-34s %4s %4s %9s %9s %7s
' "$eng" "QueryGroupMessages / Query" "$c" "-" \
        "$(med "$eng.query.$c" rps)" "$(med "$eng.v3query.$c" rps)" \
        "$(paired "$eng.v3query.$c" "$eng.query.$c" rps)"
    done
  done
  echo "(goal: ratio >= 0.9 on every row; QueryGroupMessages asks ascending from id 0 with limit"
  echo " $QUERY_LIMIT, the rows Query returns)"
fi

if [[ ${#NOTES[@]} -gt 0 || ${#SERVER_ERRORS[@]} -gt 0 ]]; then
  echo
  echo "== anomalies =="
  for k in "${!NOTES[@]}"; do echo "$k: ${NOTES[$k]}"; done | sort
  printf '%s\n' "${SERVER_ERRORS[@]}"
fi
