#!/usr/bin/env bash
# bench/push.sh: push notifications end to end (issue 30). 10,000 APNs recipients subscribed
# across 1,000 group-message topics (10 each), group messages published with should_push = true,
# every push answered by bench/push_sink (an APNs-shaped HTTP/2 sink over TLS) standing in for
# api.sandbox.push.apple.com. Phases: (a) publishing as fast as the load client can for
# --duration seconds, (b) at half the deliveries/s measured in (a), (c) at 1,000 deliveries/s for
# context (the latency floor). Reports deliveries/s, server CPU per delivery and publish -> push
# latency p50/p99 in a markdown table, with the goals.
# See bench/README.md and shared/BENCHMARKS.md.
#
#   bench/push.sh [--quick] [--repeats N] [--duration S] [--pg] [--binary PATH] [--sink PATH]
#                 [--recipients N] [--topics T] [--batch B] [--publishers W] [--poll-ms MS]
#                 [--log-level L]
#
# --quick = 1 repeat of 3 s. Default 3 repeats of 10 s per phase, medians in the table. --pg: PostgreSQL (a throwaway cluster from
# tests/support/pg_cluster.sh) instead of SQLite. --binary defaults to
# build/src/xmtp-backend-testing (the test build: it reads XB_TEST_PROVIDER_PINS), --sink to
# build/bench/push_sink (both from scripts/build). --batch: envelopes per Publish in phase (a)
# (default 10; phase (b) batches only to stay under 500 calls/s). --publishers: concurrent Publish calls in (a)
# (default 4). --poll-ms: streams.poll_interval_ms (default 100). --log-level: the server's
# (default warn; its log's tail is printed when something fails). Nothing here asserts a timing.
set -euo pipefail
export LC_ALL=C

readonly ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
readonly PROTO_DIR="$ROOT/proto"
readonly SERVER_CPU=1
readonly LOAD_CPU=0
readonly APNS_HOST=api.sandbox.push.apple.com
readonly SINK_TEST_REQUESTS=100000
readonly PACKAGES=(openssl nghttp2-client python3-grpcio python3-protobuf)
readonly PYTHON=/usr/bin/python3

ARGS=("$@")
duration=10
repeats=3
binary="$ROOT/build/src/xmtp-backend-testing"
sink="$ROOT/build/bench/push_sink"
pg=0
recipients=10000
topics=1000
batch=10
publishers=4
poll_ms=100
log_level=warn
usage() {
  sed -n '2,21p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
}
while [[ $# -gt 0 ]]; do
  case "$1" in
    --quick) duration=3; repeats=1 ;;
    --repeats) repeats="$2"; shift ;;
    --duration) duration="$2"; shift ;;
    --pg) pg=1 ;;
    --binary) binary="$2"; shift ;;
    --sink) sink="$2"; shift ;;
    --recipients) recipients="$2"; shift ;;
    --topics) topics="$2"; shift ;;
    --batch) batch="$2"; shift ;;
    --publishers) publishers="$2"; shift ;;
    --poll-ms) poll_ms="$2"; shift ;;
    --log-level) log_level="$2"; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "unknown argument: $1" >&2; usage >&2; exit 2 ;;
  esac
  shift
done
for v in duration repeats recipients topics batch publishers poll_ms; do
  [[ "${!v}" =~ ^[1-9][0-9]*$ ]] || { echo "--${v//_/-} wants a positive integer" >&2; exit 2; }
done
((recipients % topics == 0)) || { echo "--recipients must be a multiple of --topics" >&2; exit 2; }

log() { printf '[push.sh] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"

[[ -x "$binary" ]] || die "--binary $binary is not an executable (scripts/build makes it)"
[[ -x "$sink" ]] || die "--sink $sink is not an executable (scripts/build makes it)"
[[ -d "$ROOT/build/python/xmtp" ]] || die "no generated Python stubs in build/python (scripts/build)"

# ---------------------------------------------------------------------------------------------
# Temp dir and cleanup: the server, the sink, the load client and the cluster die on exit.
# ---------------------------------------------------------------------------------------------
TMP="$(mktemp -d /tmp/xb-push.XXXXXX)"
chmod 755 "$TMP"  # the PostgreSQL cluster runs as user postgres when we are root
PG_DIR=""
SERVER_PID=""
SINK_PID=""
LOAD_PID=""
cleanup() {
  if [[ -n "$LOAD_PID" ]]; then
    kill -TERM "$LOAD_PID" 2>/dev/null || true
    wait "$LOAD_PID" 2>/dev/null || true
  fi
  stop_pid "$SERVER_PID"
  stop_pid "$SINK_PID"
  stop_pg_cluster "$PG_DIR"
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "command: $0 ${ARGS[*]}"
ensure_packages

# ---------------------------------------------------------------------------------------------
# PKI: a CA (the server trusts it through SSL_CERT_FILE), the sink's certificate for the APNs
# sandbox host, and the APNs provider key (EC P-256, PKCS#8 PEM).
# ---------------------------------------------------------------------------------------------
make_pki() {
  local d="$TMP/pki"
  mkdir -p "$d"
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
    -keyout "$d/ca.key" -out "$d/ca.pem" -subj "/CN=xb push bench CA" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
    2>/dev/null || die "openssl: CA"
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$d/sink.key" \
    -out "$d/sink.csr" -subj "/CN=$APNS_HOST" 2>/dev/null || die "openssl: sink key"
  printf 'subjectAltName=DNS:%s\nbasicConstraints=critical,CA:FALSE\nextendedKeyUsage=serverAuth\n' \
    "$APNS_HOST" >"$d/sink.ext"
  openssl x509 -req -in "$d/sink.csr" -CA "$d/ca.pem" -CAkey "$d/ca.key" -CAcreateserial \
    -days 1 -extfile "$d/sink.ext" -out "$d/sink.pem" 2>/dev/null || die "openssl: sink cert"
  openssl verify -CAfile "$d/ca.pem" -verify_hostname "$APNS_HOST" "$d/sink.pem" >/dev/null \
    || die "openssl: the sink certificate does not verify for $APNS_HOST"
  openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$d/apns.p8" 2>/dev/null \
    || die "openssl: APNs key"
}
make_pki

# start_sink NAME CPU: starts push_sink pinned to CPU; sets SINK_PID, SINK_PORT, SINK_RECORDS,
# SINK_STATUS.
start_sink() {
  local name=$1 cpu=$2
  SINK_RECORDS="$TMP/$name.records"
  SINK_STATUS="$TMP/$name.status"
  taskset -c "$cpu" "$sink" --cert "$TMP/pki/sink.pem" --key "$TMP/pki/sink.key" \
    --records "$SINK_RECORDS" --status "$SINK_STATUS" >"$TMP/$name.port" 2>"$TMP/$name.log" &
  SINK_PID=$!
  for _ in $(seq 100); do
    SINK_PORT=$(sed -n 's/^port \([0-9]*\)$/\1/p' "$TMP/$name.port")
    [[ -n "$SINK_PORT" ]] && return
    kill -0 "$SINK_PID" 2>/dev/null || break
    sleep 0.05
  done
  die "push_sink did not start: $(cat "$TMP/$name.log")"
}

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# ---------------------------------------------------------------------------------------------
# Sink self-test: h2load POSTs an APNs body SINK_TEST_REQUESTS times (1 connection, 100 streams),
# sink alone on the server's CPU; every request must be recorded with the body's fields.
# ---------------------------------------------------------------------------------------------
sink_self_test() {
  local body="$TMP/apns_body.json" t0 t1 out lines
  printf '{"aps":{"content-available":1},"topic":"AAECAwQFBgcICQoLDA0ODxA=","sequence_id":"42"}' \
    >"$body"
  start_sink sink_test "$SERVER_CPU"
  t0=$(cpu_ticks "$SINK_PID")
  out=$(taskset -c "$LOAD_CPU" h2load -n "$SINK_TEST_REQUESTS" -c1 -m100 -d "$body" \
    -H 'content-type: application/json' -H 'apns-push-type: background' \
    "https://127.0.0.1:$SINK_PORT/3/device/00112233445566778899aabbccddeeff" 2>&1) \
    || die "h2load against the sink failed: $out"
  t1=$(cpu_ticks "$SINK_PID")
  stop_pid "$SINK_PID"
  SINK_PID=""
  lines=$(grep -c ' 42 AAECAwQFBgcICQoLDA0ODxA=$' "$SINK_RECORDS" || true)
  [[ "$lines" == "$SINK_TEST_REQUESTS" ]] || die "sink self-test: $lines of $SINK_TEST_REQUESTS recorded"
  grep -q "requests=$SINK_TEST_REQUESTS bad=0" "$SINK_STATUS" || die "sink self-test: $(cat "$SINK_STATUS")"
  SINK_RATE=$(sed -n 's/^finished in .*s, \([0-9.]*\) req\/s.*/\1/p' <<<"$out")
  SINK_US=$(awk -v t=$((t1 - t0)) -v hz="$(getconf CLK_TCK)" -v n="$SINK_TEST_REQUESTS" \
    'BEGIN {printf "%.1f", t / hz * 1e6 / n}')
  log "sink self-test: $SINK_TEST_REQUESTS requests recorded; h2load ${SINK_RATE} req/s, sink CPU ${SINK_US} µs/request"
}
sink_self_test

# ---------------------------------------------------------------------------------------------
# Database, sink and server
# ---------------------------------------------------------------------------------------------
if ((pg)); then
  PG_DIR="$TMP/pg"
  start_pg_cluster "$PG_DIR" "$TMP/pg_cluster.log"
  psql "$XB_PG_PRIMARY" -Xq -v ON_ERROR_STOP=1 -c 'CREATE DATABASE xb_bench' >/dev/null
  DB_URL="${XB_PG_PRIMARY%/*}/xb_bench"
  ENGINE="postgres (primary only; PostgreSQL unpinned)"
else
  DB_URL="sqlite://$TMP/xmtp.db"
  ENGINE="sqlite"
fi

start_sink sink "$LOAD_CPU"

# start_server: our test build pinned to CPU 1 on a free port; sets SERVER_PID, PORT, MPORT.
start_server() {
  local try cfg deadline
  for try in 1 2 3 4 5; do
    PORT=$(pick_port)
    MPORT=$(pick_port)
    cfg="$TMP/server.toml"
    cat >"$cfg" <<EOF
[server]
identifier = "bench.local"
listen = "127.0.0.1:$PORT"
log_level = "$log_level"
request_logger = false
[telemetry]
metrics_listen = "127.0.0.1:$MPORT"
[database]
url = "$DB_URL"
[streams]
poll_interval_ms = $poll_ms
[push]
[push.apns]
key = "env:XB_BENCH_APNS_KEY"
key_id = "BENCHKEY01"
team_id = "BENCHTEAM1"
bundle_id = "org.xb.bench"
environment = "sandbox"
EOF
    SSL_CERT_FILE="$TMP/pki/ca.pem" XB_BENCH_APNS_KEY="$(cat "$TMP/pki/apns.p8")" \
      XB_TEST_PROVIDER_PINS="$APNS_HOST=127.0.0.1:$SINK_PORT" \
      taskset -c "$SERVER_CPU" "$binary" --config "$(cat "$cfg")" >>"$TMP/server.log" 2>&1 &
    SERVER_PID=$!
    deadline=$((SECONDS + 30))
    while [[ -z "$(ss -Htln "sport = :$PORT")" ]]; do
      if ! kill -0 "$SERVER_PID" 2>/dev/null; then
        log "server exited before listening (try $try): $(tail -n 3 "$TMP/server.log" | tr '\n' ' ')"
        wait "$SERVER_PID" || true
        SERVER_PID=""
        continue 2
      fi
      ((SECONDS < deadline)) || die "server did not listen on 127.0.0.1:$PORT within 30 s"
      sleep 0.05
    done
    CONFIG_SHOWN="$(cat "$cfg")"
    return
  done
  die "the server could not start"
}
start_server
log "server pid $SERVER_PID on 127.0.0.1:$PORT ($ENGINE), sink on 127.0.0.1:$SINK_PORT"

# ---------------------------------------------------------------------------------------------
# Load: register, gate (one publish -> one push per subscriber), phases (a), (b) and (c).
# ---------------------------------------------------------------------------------------------
LOAD_BEFORE="$(cut -d' ' -f1-3 /proc/loadavg)"
export PYTHONPATH="$ROOT/build/python:$ROOT/tests/integration"
run_tracked taskset -c "$LOAD_CPU" "$PYTHON" "$ROOT/bench/push_load.py" run \
  --target "127.0.0.1:$PORT" --server-pid "$SERVER_PID" --sink-status "$SINK_STATUS" \
  --out "$TMP" --recipients "$recipients" --topics "$topics" --duration "$duration" \
  --batch "$batch" --publishers "$publishers" --repeats "$repeats" --metrics "127.0.0.1:$MPORT" \
  || die "the load client failed; the server's log ends with:
$(tail -n 20 "$TMP/server.log")"
LOAD_AFTER="$(cut -d' ' -f1-3 /proc/loadavg)"
kill -0 "$SERVER_PID" 2>/dev/null || die "the server died (log: $(tail -n 5 "$TMP/server.log"))"
stop_pid "$SINK_PID"
SINK_PID=""
SINK_CONNECTIONS=$(sed -n 's/.*connections=\([0-9]*\).*/\1/p' "$SINK_STATUS")

cat <<EOF

== configuration ==
machine     $(nproc) CPUs; server on CPU $SERVER_CPU (taskset), load client and sink on CPU $LOAD_CPU; load average before $LOAD_BEFORE, after $LOAD_AFTER
server      $binary ($ENGINE), streams.poll_interval_ms = $poll_ms
recipients  $recipients APNs recipients (64 hex digit tokens), each subscribed to one of $topics group-message topics ($((recipients / topics)) per topic)
load        python3-grpcio $("$PYTHON" -c 'import grpc; print(grpc.__version__)'); (a) $publishers concurrent Publish calls of $batch envelopes for $duration s; (b) paced at half (a)'s deliveries/s, (c) at 1,000 deliveries/s, $duration s each; $repeats repeat(s) of the three in turn
sink        bench/push_sink (nghttp2 $(pkg-config --modversion libnghttp2 2>/dev/null || echo '?'), OpenSSL, one thread) on 127.0.0.1:$SINK_PORT as $APNS_HOST, $SINK_CONNECTIONS connection(s) from the server; self-test: ${SINK_RATE} req/s from h2load (1 connection, 100 streams), ${SINK_US} µs of sink CPU per request
latency     publish time = when the Publish call returned (CLOCK_REALTIME), push time = the sink's arrival time, joined on (topic, sequence_id)
--- server config ---
$CONFIG_SHOWN

== results ==
EOF
"$PYTHON" "$ROOT/bench/push_load.py" report --out "$TMP" --records "$SINK_RECORDS" \
  --poll-ms "$poll_ms"
