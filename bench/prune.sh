#!/usr/bin/env bash
# bench/prune.sh: the retention pruning pass (issue 35) on both engines (SQLite embedded,
# PostgreSQL 15 primary + replica): rows pruned per second, Publish throughput with the pass
# running vs not (paired A/B runs, and an A/A pair for the noise), and the database size over time
# in a steady state where publishing and expiry match (CSV + SVG in build/prune/). See
# bench/README.md ("bench/prune.sh") and shared/BENCHMARKS.md.
#
#   bench/prune.sh [--quick] [--engines LIST] [--binary PATH] [--rows N] [--pairs P]
#                  [--duration S] [--steady S] [--rate R]
#
# --quick = 100,000 rows, 3 pairs of 3 s runs, 60 s of steady state. Default: 500,000 rows,
# 5 pairs of 5 s (+1 s warm-up), 300 s of steady state at --rate 500 publishes/s. --engines:
# comma list of sqlite,postgres (default both). --binary defaults to build/src/xmtp-backend
# (Release; run scripts/build). The load client is bench/loadgen, built into build-bench-loadgen/.
# Nothing here asserts a timing.
set -euo pipefail
export LC_ALL=C

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
readonly ROOT
readonly PROTO_DIR="$ROOT/proto"
readonly GEN_DIR="$ROOT/build-bench-loadgen"
readonly OUT="$ROOT/build/prune"
readonly SERVER_CPU=1
readonly LOAD_CPU=0
readonly WARMUP_S=1
readonly PAYLOAD=1024          # bytes of MLS PrivateMessage per envelope
readonly FILL_TOPICS=1024      # topics of the prunable database (each keeps its newest row)
readonly FILL_ENVELOPES=10     # envelopes per Publish while filling it
readonly BATCHES=(1000 10000)  # prune_batch of the rate cases (1000 is the default)
readonly AB_TOPICS=64          # the publish cases' topics, as bench/publish.sh
readonly STEADY_RETENTION=5    # group_message_seconds in the steady state
readonly STEADY_INTERVAL=2     # prune_interval_seconds in the steady state
readonly STEADY_CLIENTS=8     # enough that PostgreSQL's latency does not cap --rate
readonly PACKAGES=(g++ pkg-config protobuf-compiler libgrpc++-dev protobuf-compiler-grpc
                   libnghttp2-dev libsqlite3-dev sqlite3 postgresql-15 postgresql-client-15
                   curl gnuplot-nox)

ARGS=("$@")
rows=500000
pairs=5
duration=5
steady=300
rate=500
binary="$ROOT/build/src/xmtp-backend"
engines="sqlite,postgres"
usage() {
  sed -n '2,15p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
}
positive() { [[ "$2" =~ ^[1-9][0-9]*$ ]] || { echo "$1 wants a positive integer" >&2; exit 2; }; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --quick) rows=100000; pairs=3; duration=3; steady=60 ;;
    --rows) positive "$1" "${2:-}"; rows="$2"; shift ;;
    --pairs) positive "$1" "${2:-}"; pairs="$2"; shift ;;
    --duration) positive "$1" "${2:-}"; duration="$2"; shift ;;
    --steady) positive "$1" "${2:-}"; steady="$2"; shift ;;
    --rate) positive "$1" "${2:-}"; rate="$2"; shift ;;
    --binary) binary="${2:?--binary wants a path}"; shift ;;
    --engines) engines="${2:?--engines wants a list}"; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "unknown argument: $1" >&2; usage >&2; exit 2 ;;
  esac
  shift
done
[[ "$engines" =~ ^(sqlite|postgres)(,(sqlite|postgres))?$ ]] || {
  echo "--engines wants sqlite, postgres or both" >&2; exit 2; }
binary="$(realpath "$binary")"
[[ -x "$binary" ]] || { echo "--binary $binary is not an executable (run scripts/build)" >&2; exit 2; }
# Sample the steady state about 30 times (every 2 to 10 s).
readonly SAMPLE_S=$(( steady / 30 < 2 ? 2 : steady / 30 > 10 ? 10 : steady / 30 ))

log() { printf '[prune.sh] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"

# ---------------------------------------------------------------------------------------------
# Temp dir and cleanup: the server, the load client and the PostgreSQL cluster die on exit.
# ---------------------------------------------------------------------------------------------
TMP="$(mktemp -d /tmp/xb-prune.XXXXXX)"
chmod 755 "$TMP"  # the PostgreSQL cluster below runs as user postgres when we are root
PG_DIR=""
SERVER_PID=""
LOAD_PID=""
cleanup() {
  stop_pid "$LOAD_PID" 50
  stop_pid "$SERVER_PID" 50
  stop_pg_cluster "$PG_DIR"
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "command: $0 ${ARGS[*]}"
ensure_packages
build_loadgen
LOADGEN="$GEN_DIR/loadgen"
mkdir -p "$OUT" "$TMP/sqlite"

# ---------------------------------------------------------------------------------------------
# Server and database
# ---------------------------------------------------------------------------------------------
# server_toml NAME PORT MPORT PRUNE INTERVAL BATCH RETENTION: writes the config, prints its path.
server_toml() {
  local f="$TMP/$1.toml"
  cat >"$f" <<EOF
[server]
identifier = "bench.local"
listen = "127.0.0.1:$2"
log_level = "warn"
request_logger = false
[telemetry]
metrics_listen = "127.0.0.1:$3"
[database]
url = "$DB_URL"
[retention]
group_message_seconds = $7
prune = $4
prune_interval_seconds = $5
prune_batch = $6
EOF
  echo "$f"
}

# start_xb PRUNE INTERVAL BATCH RETENTION: our server on DB_URL, pinned to CPU 1, on free ports;
# sets SERVER_PID, PORT, MPORT (metrics) and CONFIG_SHOWN.
start_xb() {
  local try port mport cfg
  for try in 1 2 3 4 5; do
    port=$(pick_port)
    mport=$(pick_port)
    [[ "$mport" != "$port" ]] || continue
    cfg=$(server_toml "$ENGINE" "$port" "$mport" "$@")
    taskset -c "$SERVER_CPU" "$binary" --config "$(cat "$cfg")" >>"$TMP/$ENGINE.log" 2>&1 &
    SERVER_PID=$!
    if ! wait_listen "$SERVER_PID" "$port" "$TMP/$ENGINE.log" ||
       ! wait_listen "$SERVER_PID" "$mport" "$TMP/$ENGINE.log"; then
      log "$ENGINE exited before listening (try $try): $(tail -n 3 "$TMP/$ENGINE.log" | tr '\n' ' ')"
      wait "$SERVER_PID" || true
      SERVER_PID=""
      continue
    fi
    PORT=$port
    MPORT=$mport
    CONFIG_SHOWN="$(cat "$cfg")"
    return
  done
  die "$ENGINE could not start"
}

stop_server() {
  stop_pid "$SERVER_PID" 50
  SERVER_PID=""
}

# fresh_db: an empty database for ENGINE (the server is stopped); sets DB_URL.
fresh_db() {
  if [[ $ENGINE == sqlite ]]; then
    rm -f "$TMP/sqlite/xmtp.db" "$TMP/sqlite/xmtp.db-wal" "$TMP/sqlite/xmtp.db-shm"
    DB_URL="sqlite://$TMP/sqlite/xmtp.db"
  else
    psql "$XB_PG_PRIMARY" -Xq -v ON_ERROR_STOP=1 -c 'DROP DATABASE IF EXISTS xb_prune WITH (FORCE)' \
      -c 'CREATE DATABASE xb_prune' >/dev/null
    DB_URL="$PG_BASE/xb_prune"
  fi
}

# sql QUERY: one query on ENGINE's database, fields separated by spaces.
sql() {
  if [[ $ENGINE == sqlite ]]; then
    sqlite3 -batch -separator ' ' -cmd '.timeout 5000' "$TMP/sqlite/xmtp.db" "$1"
  else
    psql "$DB_URL" -XAt -F ' ' -c "$1"
  fi
}

# prune_metrics: "pruned passes pass_seconds_sum" from the running server's /metrics.
prune_metrics() {
  { curl -fsS --max-time 2 "http://127.0.0.1:$MPORT/metrics" 2>/dev/null || true; } | awk '
    $1 == "xmtp_ext_prune_envelopes_total" {n = $2}
    $1 == "xmtp_ext_prune_pass_seconds_count" {c = $2}
    $1 == "xmtp_ext_prune_pass_seconds_sum" {s = $2}
    END {printf "%d %d %.6f\n", n, c, s}'
}

now_s() { date +%s.%N; }

# Results: R[key] = loadgen RESULT line; NOTES[key] = what went wrong.
declare -A R=()
declare -A NOTES=()
declare -A PRUNED=()
declare -A RATE=()
declare -A STEADY=()
SERVER_ERRORS=()

# load KEY ARGS...: one loadgen run pinned to CPU 0 against the running server; R[KEY].
load() {
  local key=$1 out="$TMP/load.out" line
  shift
  if ! run_tracked taskset -c "$LOAD_CPU" "$LOADGEN" --target "127.0.0.1:$PORT" \
      --server-pid "$SERVER_PID" --payload "$PAYLOAD" "$@" >"$out" 2>&1; then
    log "loadgen failed for $key: $(tail -n 3 "$out" | tr '\n' ' ')"
    return 0
  fi
  line=$(grep '^RESULT ' "$out" || true)
  R[$key]="$line"
  if [[ "$(kv errors "$line")" != "0" || "$(kv warmup_errors "$line")" != "0" ]]; then
    NOTES[$key]="non-OK statuses: $(kv error_codes "$line") $(grep '^FIRST_ERROR' "$out" | cut -c13-)"
  fi
  kill -0 "$SERVER_PID" 2>/dev/null || die "server died during $key (log: $(tail -n 5 "$TMP/$ENGINE.log" | tr '\n' ' '))"
}

# The gate: a Publish of 1 and of 10 envelopes, read back by Query and QueryNewest.
verify() {
  local e out
  for e in 1 10; do
    out=$("$LOADGEN" --target "127.0.0.1:$PORT" --mode verify --envelopes "$e" \
      --payload "$PAYLOAD" 2>&1) || die "$ENGINE: correctness gate failed: $out"
    log "$ENGINE gate: $out"
  done
}

# ---------------------------------------------------------------------------------------------
# 1. Rows pruned per second
# ---------------------------------------------------------------------------------------------
# fill: publishes about `rows` envelopes over FILL_TOPICS topics into the running server (1 s
# retention, no pruning): a 3 s run to learn the rate, then runs sized to the remainder.
fill() {
  local stored=0 secs=3 line eps
  while ((stored < rows)); do
    load fill --mode publish --clients "$AB_CLIENTS" --envelopes "$FILL_ENVELOPES" \
      --topics "$FILL_TOPICS" --duration "$secs" --warmup 0
    line=${R[fill]:-}
    [[ -n "$line" ]] || die "$ENGINE: the fill publish failed"
    stored=$((stored + $(kv ok "$line") * FILL_ENVELOPES))
    eps=$(kv eps "$line")
    secs=$(awk -v r=$((rows - stored)) -v e="$eps" 'BEGIN {s = r / (e > 0 ? e : 1000); print (s < 1 ? 1 : int(s) + 1)}')
    log "$ENGINE fill: $stored of $rows stored ($eps env/s)"
  done
}

# rate_case BATCH: a fresh database filled with expired envelopes, then one pass at BATCH timed
# from /metrics, polled every 0.1 s: from the last reading before the first deletion to the first
# that shows the counter's final value (the pass's end: its histogram counted it).
rate_case() {
  local batch=$1 total topics expected t t_zero="" n=0 c=0 s=0 t_end="" final left
  fresh_db
  start_xb false 86400 1000 1
  [[ -n "${GATED[$ENGINE]:-}" ]] || { verify; GATED[$ENGINE]=1; }
  fill
  stop_server
  read -r total topics < <(sql 'SELECT count(*), count(DISTINCT topic) FROM envelopes')
  expected=$((total - topics))  # every topic keeps its newest row
  log "$ENGINE batch $batch: $total rows on $topics topics, $expected prunable; waiting for the pass"
  start_xb true 2 "$batch" 1
  local deadline=$((SECONDS + 1800)) samples="$OUT/${ENGINE}_pass_$batch.txt"
  : >"$samples"
  while ((SECONDS < deadline)); do
    t=$(now_s)
    read -r n c s < <(prune_metrics)
    echo "$t $n $c $s" >>"$samples"
    ((n > 0)) || t_zero=$t
    ((c >= 1)) && break
    sleep 0.1
  done
  ((c >= 1)) || die "$ENGINE: the pass did not end within 30 minutes"
  final=$n
  t_end=$(awk -v f="$final" '$2 == f {print $1; exit}' "$samples")
  left=$(sql 'SELECT count(*) FROM envelopes')
  stop_server
  # RATE[engine.batch] = "rows prunable deleted left elapsed_s rows_per_s pass_s rows_per_pass_s
  # first_half_rows_per_s second_half_rows_per_s": the halves split at the first reading with
  # half the final count, so a delete whose cost follows the table's size shows as a faster
  # second half.
  RATE[$ENGINE.$batch]=$(awk -v tot="$total" -v ex="$expected" -v f="$final" -v l="$left" \
    -v t0="$t_zero" -v t1="$t_end" -v s="$s" '
    th == "" && $2 >= f / 2 {th = $1; nh = $2}
    END {
      el = (t0 == "" ? 0 : t1 - t0)
      printf "%d %d %d %d %.2f %s %.2f %s %s %s\n", tot, ex, f, l, el,
        (el > 0 ? sprintf("%.0f", f / el) : "-"), s, (s > 0 ? sprintf("%.0f", f / s) : "-"),
        (el > 0 && th > t0 ? sprintf("%.0f", nh / (th - t0)) : "-"),
        (el > 0 && t1 > th ? sprintf("%.0f", (f - nh) / (t1 - th)) : "-")
    }' "$samples")
  log "$ENGINE batch $batch: ${RATE[$ENGINE.$batch]}"
}

# ---------------------------------------------------------------------------------------------
# 2. Publish throughput with the pass running vs not
# ---------------------------------------------------------------------------------------------
# ab_run KEY PRUNE: a fresh database, the server with 1 s retention and the pass every second
# (PRUNE true) or none, AB_CLIENTS closed-loop publishers of one envelope per request.
ab_run() {
  local key=$1
  fresh_db
  start_xb "$2" 1 1000 1
  log "$ENGINE $key (prune = $2)"
  [[ $2 == false ]] || AB_CONFIG[$ENGINE]=$CONFIG_SHOWN
  load "$key" --mode publish --clients "$AB_CLIENTS" --envelopes 1 --topics "$AB_TOPICS" \
    --duration "$duration" --warmup "$WARMUP_S"
  local pruned
  read -r pruned _ < <(prune_metrics)
  PRUNED[$key]=$pruned
  stop_server
}

# Pair i runs on/off (off/on when i is even), then the A/A pair: off, off.
ab_cases() {
  local i
  for i in $(seq "$pairs"); do
    if ((i % 2)); then
      ab_run "$ENGINE.on.$i" true
      ab_run "$ENGINE.off.$i" false
    else
      ab_run "$ENGINE.off.$i" false
      ab_run "$ENGINE.on.$i" true
    fi
    ab_run "$ENGINE.aa1.$i" false
    ab_run "$ENGINE.aa2.$i" false
  done
}

# ---------------------------------------------------------------------------------------------
# 3, 4. Size over time in a steady state
# ---------------------------------------------------------------------------------------------
# sample T: one CSV row of the database's size at T seconds into the steady state.
sample() {
  local pruned db wal
  read -r pruned _ < <(prune_metrics)
  if [[ $ENGINE == sqlite ]]; then
    db=$(stat -c %s "$TMP/sqlite/xmtp.db" 2>/dev/null || echo 0)
    wal=$(stat -c %s "$TMP/sqlite/xmtp.db-wal" 2>/dev/null || echo 0)
    # page_count, freelist_count and the rows, as of the last commit (WAL included).
    echo "$1,$db,$wal,$((db + wal)),$(sql 'SELECT (SELECT page_count FROM pragma_page_count), (SELECT freelist_count FROM pragma_freelist_count), (SELECT count(*) FROM envelopes)' | tr ' ' ,),$pruned"
  else
    echo "$1,$(sql "SELECT pg_total_relation_size('envelopes'), pg_relation_size('envelopes'),
      pg_indexes_size('envelopes'), (SELECT count(*) FROM envelopes), n_dead_tup, autovacuum_count
      FROM pg_stat_user_tables WHERE relname = 'envelopes'" | tr ' ' ,),$pruned"
  fi
}

# steady_case: rate-limited publishing (STEADY_CLIENTS clients, --rate publishes/s in total) with
# a STEADY_RETENTION s retention and the pass every STEADY_INTERVAL s, sampled every SAMPLE_S;
# writes OUT/ENGINE_steady.csv and .svg; STEADY[engine] = the loadgen RESULT line.
steady_case() {
  local csv="$OUT/${ENGINE}_steady.csv" t0 rc=0
  fresh_db
  start_xb true "$STEADY_INTERVAL" 1000 "$STEADY_RETENTION"
  if [[ $ENGINE == sqlite ]]; then
    echo "t_s,db_bytes,wal_bytes,total_bytes,page_count,freelist_pages,rows,pruned" >"$csv"
  else
    echo "t_s,total_bytes,table_bytes,index_bytes,rows,dead_rows,autovacuums,pruned" >"$csv"
  fi
  log "$ENGINE steady state: $rate publishes/s for $steady s, sampled every $SAMPLE_S s"
  taskset -c "$LOAD_CPU" "$LOADGEN" --target "127.0.0.1:$PORT" --mode publish --rate "$rate" \
    --clients "$STEADY_CLIENTS" --topics "$FILL_TOPICS" --payload "$PAYLOAD" --duration "$steady" \
    --warmup 0 --server-pid "$SERVER_PID" >"$TMP/steady.out" 2>&1 &
  LOAD_PID=$!
  t0=$(now_s)
  while kill -0 "$LOAD_PID" 2>/dev/null; do
    sample "$(awk -v a="$t0" -v b="$(now_s)" 'BEGIN {printf "%.1f", b - a}')" >>"$csv"
    sleep "$SAMPLE_S"
  done
  wait "$LOAD_PID" || rc=$?
  LOAD_PID=""
  ((rc == 0)) || log "$ENGINE steady loadgen exited $rc: $(tail -n 3 "$TMP/steady.out" | tr '\n' ' ')"
  STEADY[$ENGINE]=$(grep '^RESULT ' "$TMP/steady.out" || true)
  kill -0 "$SERVER_PID" 2>/dev/null || die "server died in the steady state"
  stop_server
  plot_steady "$csv"
}

# plot_steady CSV: the sizes (MiB, left axis) and the rows (right axis) over time, into CSV.svg.
plot_steady() {
  local csv=$1 svg="${1%.csv}.svg" sizes
  if [[ $ENGINE == sqlite ]]; then
    sizes="db_bytes wal_bytes total_bytes"
  else
    sizes="total_bytes table_bytes index_bytes"
  fi
  gnuplot <<EOF || log "gnuplot failed for $csv"
set terminal svg size 1000,600 dynamic font "sans,11" noenhanced
set output "$svg"
set datafile separator ","
set title "$ENGINE: $rate publishes/s, retention ${STEADY_RETENTION} s, prune every ${STEADY_INTERVAL} s"
set xlabel "seconds"
set ylabel "MiB"
set y2label "rows"
set ytics nomirror
set y2tics
set yrange [0:*]
set y2range [0:*]
set key outside bottom center horizontal
set grid
plot for [c in "$sizes"] "$csv" using "t_s":(column(c) / 1048576.0) with linespoints title c, \
     "$csv" using "t_s":"rows" axes x1y2 with lines dashtype 2 title "rows (right)"
EOF
}

# growth CSV COLUMN: how COLUMN moved over the last third of the samples.
growth() {
  awk -F, -v col="$2" '
    NR == 1 {for (i = 1; i <= NF; i++) if ($i == col) c = i; next}
    {t[NR - 1] = $1; v[NR - 1] = $c; n = NR - 1}
    END {
      if (n < 3) {print "too few samples"; exit}
      a = int(2 * n / 3) + 1; m = v[a]
      for (i = a; i <= n; i++) if (v[i] > m) m = v[i]
      d = v[n] - v[a]
      printf "%s over the last third (t %s..%s s): %.2f -> %.2f MiB (max %.2f): %s\n", col, t[a], t[n],
        v[a] / 1048576, v[n] / 1048576, m / 1048576,
        (d > 0 ? sprintf("grew by %.1f%%", 100 * d / v[a]) : "did not grow")
    }' "$1"
}

# The server runs at log_level warn: any line it wrote is worth showing.
scan_server_log() {
  local n
  n=$(grep -c . "$TMP/$ENGINE.log" || true)
  if [[ "$n" -gt 0 ]]; then
    SERVER_ERRORS+=("$ENGINE server log: $n line(s), the first 10:" "$(grep . "$TMP/$ENGINE.log" | head -n 10)")
  fi
}

declare -A GATED=()
declare -A AB_CONFIG=()
LOADAVG_BEFORE="$(cut -d' ' -f1-3 /proc/loadavg)"
for ENGINE in sqlite postgres; do
  [[ "$engines" == *$ENGINE* ]] || continue
  if [[ $ENGINE == sqlite ]]; then
    AB_CLIENTS=8
  else
    AB_CLIENTS=32
    PG_DIR="$TMP/pg"
    start_pg_cluster "$PG_DIR" "$TMP/pg_cluster.log"
  fi
  for b in "${BATCHES[@]}"; do rate_case "$b"; done
  ab_cases
  steady_case
  scan_server_log
  stop_pg_cluster "$PG_DIR"
  PG_DIR=""
done
LOADAVG_AFTER="$(cut -d' ' -f1-3 /proc/loadavg)"

# ---------------------------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------------------------
# paired A B FIELD: per-pair ratios A.i / B.i of FIELD, space separated.
paired() {
  local i a b out=()
  for i in $(seq "$pairs"); do
    a=$(kv "$3" "${R[$1.$i]:-}")
    b=$(kv "$3" "${R[$2.$i]:-}")
    if [[ -n "$a" && -n "$b" ]]; then out+=("$(ratio "$a" "$b")"); fi
  done
  local IFS=,
  echo "${out[*]}"
}
nonempty() { grep . || true; }
med() {  # med KEYPREFIX FIELD: median over the pairs
  local i
  for i in $(seq "$pairs"); do kv "$2" "${R[$1.$i]:-}"; done | nonempty | median
}
med_list() { tr ',' '\n' <<<"$1" | { grep -v '^-\{0,1\}$' || true; } | median; }
per_cpu() {  # per_cpu KEY: envelopes per server-CPU second of one run
  awk -v e="$(kv eps "${R[$1]:-}")" -v s="$(kv secs "${R[$1]:-}")" -v c="$(kv server_cpu_s "${R[$1]:-}")" \
    'BEGIN {if (c + 0 <= 0) print "nan"; else printf "%.0f\n", e * s / c}'
}
med_cpu() {
  local i
  for i in $(seq "$pairs"); do per_cpu "$1.$i"; done | grep -v nan | median
}

cat <<EOF

== configuration ==
binary      $binary ($(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?'))
machine     $(nproc) CPUs; server on CPU $SERVER_CPU (taskset), loadgen on CPU $LOAD_CPU; PostgreSQL unpinned
load avg    before $LOADAVG_BEFORE, after $LOADAVG_AFTER
rate        about $rows expired group messages ($PAYLOAD-byte MLS PrivateMessage) over $FILL_TOPICS topics, published
            $FILL_ENVELOPES per request with 1 s retention and no pruning; then a restart with prune = true,
            prune_interval_seconds = 2 and the batch shown; /metrics polled every 0.1 s
publish     $pairs pair(s) of ${duration} s runs (+${WARMUP_S} s warm-up), a fresh database each, 1 envelope per
            request over $AB_TOPICS topics, retention 1 s; on = prune every 1 s (batch 1000), off = prune = false;
            pair i runs on, off (off, on when i is even), then the A/A pair off, off
steady      $rate publishes/s ($STEADY_CLIENTS clients, loadgen --rate) over $FILL_TOPICS topics for $steady s, retention
            ${STEADY_RETENTION} s, prune every ${STEADY_INTERVAL} s (batch 1000), sampled every ${SAMPLE_S} s
EOF
[[ -n "${PG_VERSION:-}" ]] && echo "postgres    $PG_VERSION (pg_cluster.sh defaults: a streaming replica with hot_standby_feedback = on)"
for eng in sqlite postgres; do
  [[ -z "${AB_CONFIG[$eng]:-}" ]] || printf -- '--- server config (%s, publish "on") ---\n%s\n' "$eng" "${AB_CONFIG[$eng]}"
done

echo
echo "== 1. rows pruned per second (one pass over the expired rows) =="
printf '%-9s %6s %8s %9s %8s %5s %9s %9s %8s %11s %9s %9s\n' engine batch rows prunable deleted \
  left elapsed_s rows/s pass_s rows/pass_s 1st_half 2nd_half
for eng in sqlite postgres; do
  [[ "$engines" == *$eng* ]] || continue
  for b in "${BATCHES[@]}"; do
    read -r tot ex del left el rs ps rps h1 h2 <<<"${RATE[$eng.$b]:-- - - - - - - - - -}"
    printf '%-9s %6s %8s %9s %8s %5s %9s %9s %8s %11s %9s %9s\n' "$eng" "$b" "$tot" "$ex" "$del" \
      "$left" "$el" "$rs" "$ps" "$rps" "$h1" "$h2"
  done
done
echo "(elapsed_s: from the last /metrics reading before the first deletion to the first showing the"
echo " final count, +-0.1 s; rows/s = deleted / elapsed_s; pass_s: xmtp_ext_prune_pass_seconds_sum"
echo " of that pass; left: rows in the table after it ($FILL_TOPICS topics' newest rows + the gate's);"
echo " 1st_half / 2nd_half: rows/s until the counter reached half its final value, and after; the"
echo " readings are in $OUT/ENGINE_pass_BATCH.txt: time, counter, passes, pass seconds;"
echo " the pass sleeps 4x each batch's duration between batches, so it runs at about a fifth of the"
echo " engine's delete rate)"

echo
echo "== 2. publish with the pass running (on) vs not (off), paired =="
printf '%-9s %3s %9s %9s %10s %10s %7s %-30s %6s %-30s %6s\n' engine c on_env/s off_env/s \
  on_env/cpu off_env/cpu pruned "on/off per pair" median "A/A off/off per pair" median
for eng in sqlite postgres; do
  [[ "$engines" == *$eng* ]] || continue
  c=$([[ $eng == sqlite ]] && echo 8 || echo 32)
  ab=$(paired "$eng.on" "$eng.off" eps)
  aa=$(paired "$eng.aa1" "$eng.aa2" eps)
  pr=$(for i in $(seq "$pairs"); do echo "${PRUNED[$eng.on.$i]:-}"; done | nonempty | median)
  printf '%-9s %3s %9s %9s %10s %10s %7s %-30s %6s %-30s %6s\n' "$eng" "$c" \
    "$(med "$eng.on" eps)" "$(med "$eng.off" eps)" "$(med_cpu "$eng.on")" "$(med_cpu "$eng.off")" \
    "$pr" "$ab" "$(med_list "$ab")" "$aa" "$(med_list "$aa")"
done
echo "(env/s and env/cpu (envelopes per server-CPU second) are medians over the pairs; pruned = rows"
echo " the pass deleted during an on run, median; goal: on/off median >= 0.90, read against the A/A spread)"
for eng in sqlite postgres; do
  [[ "$engines" == *$eng* ]] || continue
  printf '%-9s p50/p99 us: on %s/%s, off %s/%s\n' "$eng" "$(med "$eng.on" p50_us)" \
    "$(med "$eng.on" p99_us)" "$(med "$eng.off" p50_us)" "$(med "$eng.off" p99_us)"
done

echo
echo "== 3, 4. size in a steady state (CSV and SVG in $OUT) =="
for eng in sqlite postgres; do
  [[ "$engines" == *$eng* ]] || continue
  line=${STEADY[$eng]:-}
  echo "$eng: published $(kv eps "$line") env/s (asked $rate), errors $(kv errors "$line"); $OUT/${eng}_steady.svg"
  if [[ $eng == sqlite ]]; then
    growth "$OUT/sqlite_steady.csv" db_bytes
    growth "$OUT/sqlite_steady.csv" total_bytes
  else
    growth "$OUT/postgres_steady.csv" total_bytes
    growth "$OUT/postgres_steady.csv" index_bytes
  fi
  tail -n 1 "$OUT/${eng}_steady.csv" | sed "s/^/  last sample: /;s/\$/  ($(head -n 1 "$OUT/${eng}_steady.csv"))/"
done

if [[ ${#NOTES[@]} -gt 0 || ${#SERVER_ERRORS[@]} -gt 0 ]]; then
  echo
  echo "== anomalies =="
  for k in "${!NOTES[@]}"; do echo "$k: ${NOTES[$k]}"; done | sort
  printf '%s\n' "${SERVER_ERRORS[@]}"
fi
