#!/usr/bin/env bash
# bench/streams.sh: Subscribe / SubscribeStatic of xmtp-backend on both engines (issue 4): live
# publish -> receive latency, catch-up delivery rate on one core beside a grpc-go 1.33 streaming
# peer measured by the same client in the same run, and server memory per idle open stream.
# See bench/README.md and shared/BENCHMARKS.md.
#
#   bench/streams.sh [--quick] [--repeats N] [--duration S] [--binary PATH] [--engines LIST]
#                    [--batch N] [--fanout-rate R] [--pg-replica] [--no-peer] [--transport T]
#
# --quick = 1 repeat of 3 s. Default 3 repeats of 5 s (+1 s warm-up), medians in the tables.
# --engines: comma list of sqlite,postgres (default both). --binary defaults to
# build/src/xmtp-backend. --batch: envelopes per Messages frame of the peer (default 64).
# --fanout-rate: publishes/s in the 1,000-subscribers-on-one-topic case (default 20).
# --pg-replica: PostgreSQL streams read from the cluster's streaming replica. --transport: the
# loadgen's subscriber client, h2 (libnghttp2, default) or grpc (grpc++). Nothing here asserts a
# timing; a case the server does not serve yet (UNIMPLEMENTED) is skipped and said so.
set -euo pipefail
export LC_ALL=C

readonly ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
readonly PROTO_DIR="$ROOT/proto"
readonly GEN_DIR="$ROOT/build-bench-loadgen"
readonly SERVER_CPU=1
readonly LOAD_CPU=0
readonly WARMUP_S=1
readonly GRACE_S=2                 # after the publishers stop, wait this long for deliveries
readonly PAYLOAD=1024              # bytes of MLS PrivateMessage per envelope
readonly HTTP2_STREAMS=1000        # server limits.max_http2_streams (default 100)
readonly POLL_MS=100               # server streams.poll_interval_ms (the default)
# (a) latency: 1,000 streams on one topic; 10,000 topics with one stream each.
readonly FANOUT_SUBS=1000 FANOUT_PER_CHANNEL=100
readonly TOPICS_N=10000 TOPICS_RATE=200 TOPICS_PER_CHANNEL=1000
# (b) delivery: streams reading one prefilled topic from cursor 0, reopened when done.
readonly DELIVER_STREAMS=32 DELIVER_PER_CHANNEL=4 DELIVER_PREFILL=10000 PREFILL_PER_REQUEST=100
# (b) live fan-out at saturation: streams on one topic, publishers back to back.
readonly LIVE_SUBS=100 LIVE_PER_CHANNEL=10 LIVE_PUBLISHERS=4 LIVE_ENVELOPES=10
# (c) idle streams, each on its own empty topic.
readonly IDLE_STREAMS=10000 IDLE_PER_CHANNEL=1000 IDLE_SETTLE_S=2
readonly PACKAGES=(g++ pkg-config protobuf-compiler libgrpc++-dev protobuf-compiler-grpc
                   libnghttp2-dev libsqlite3-dev postgresql-15 postgresql-client-15
                   postgresql-contrib golang-go golang-google-grpc-dev golang-google-protobuf-dev
                   protoc-gen-go protoc-gen-go-grpc)

ARGS=("$@")
repeats=3
duration=5
binary="$ROOT/build/src/xmtp-backend"
engines="sqlite,postgres"
batch=64
fanout_rate=20
pg_replica=0
peer=1
transport=h2
usage() {
  sed -n '2,16p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
}
while [[ $# -gt 0 ]]; do
  case "$1" in
    --quick) repeats=1; duration=3 ;;
    --repeats) repeats="$2"; shift ;;
    --duration) duration="$2"; shift ;;
    --binary) binary="$2"; shift ;;
    --engines) engines="$2"; shift ;;
    --batch) batch="$2"; shift ;;
    --fanout-rate) fanout_rate="$2"; shift ;;
    --pg-replica) pg_replica=1 ;;
    --no-peer) peer=0 ;;
    --transport) transport="$2"; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "unknown argument: $1" >&2; usage >&2; exit 2 ;;
  esac
  shift
done
[[ "$repeats" =~ ^[1-9][0-9]*$ ]] || { echo "--repeats wants a positive integer" >&2; exit 2; }
[[ "$duration" =~ ^[1-9][0-9]*$ ]] || { echo "--duration wants whole seconds" >&2; exit 2; }
[[ "$batch" =~ ^[1-9][0-9]*$ ]] || { echo "--batch wants a positive integer" >&2; exit 2; }
[[ "$fanout_rate" =~ ^[1-9][0-9]*$ ]] || { echo "--fanout-rate wants a positive integer" >&2; exit 2; }
[[ "$transport" =~ ^(h2|grpc)$ ]] || { echo "--transport wants h2 or grpc" >&2; exit 2; }
[[ "$engines" =~ ^(sqlite|postgres)(,(sqlite|postgres))?$ ]] || {
  echo "--engines wants sqlite, postgres or both" >&2; exit 2; }
binary="$(realpath "$binary")"
[[ -x "$binary" ]] || { echo "--binary $binary is not an executable" >&2; exit 2; }

log() { printf '[streams.sh] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"

# ---------------------------------------------------------------------------------------------
# Temp dir and cleanup: servers, the load client and the PostgreSQL cluster die on exit.
# ---------------------------------------------------------------------------------------------
TMP="$(mktemp -d /tmp/xb-streams.XXXXXX)"
chmod 755 "$TMP"  # the PostgreSQL cluster below runs as user postgres when we are root
PG_DIR=""
SERVER_PID=""     # ours, while an engine runs
PEER_PID=""       # the peer (long-lived for deliver and latency; fresh per idle repeat)
PEER_PORT=""
LOAD_PID=""
cleanup() {
  if [[ -n "$LOAD_PID" ]]; then
    kill -TERM "$LOAD_PID" 2>/dev/null || true
    wait "$LOAD_PID" 2>/dev/null || true
  fi
  stop_pid "$SERVER_PID" 50
  stop_pid "$PEER_PID" 50
  stop_pg_cluster "$PG_DIR"
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---------------------------------------------------------------------------------------------
# Build the load client and the grpc-go streaming peer (each only when its sources changed).
# ---------------------------------------------------------------------------------------------
echo "command: $0 ${ARGS[*]}"
ensure_packages
build_loadgen
LOADGEN="$GEN_DIR/loadgen"

PEER_BIN="$GEN_DIR/grpc_go_stream/server"
build_peer() {
  local go_dir="$GEN_DIR/grpc_go_stream" protos stamp
  mapfile -t protos < <(proto_closure xmtp/backend/v1/backend.proto)
  stamp="$(cat "$ROOT/bench/peers/grpc_go_stream/main.go" "${protos[@]/#/$PROTO_DIR/}" |
    sha256sum | cut -c1-16)"
  if [[ "$(cat "$go_dir/stamp" 2>/dev/null)" == "$stamp" && -x "$PEER_BIN" ]]; then
    return
  fi
  log "building the grpc-go streaming peer into $go_dir"
  build_go_peer "$ROOT/bench/peers/grpc_go_stream/main.go" "$go_dir" "$PEER_BIN" "${protos[@]}" ||
    die "grpc-go streaming peer: build failed"
  echo "$stamp" >"$go_dir/stamp"
}
[[ $peer -eq 1 ]] && build_peer

# ---------------------------------------------------------------------------------------------
# Servers
# ---------------------------------------------------------------------------------------------
# server_toml NAME PORT URL [REPLICA_URL]: writes our config and prints its path.
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
${4:+replica_url = \"$4\"}
[streams]
poll_interval_ms = $POLL_MS
[limits]
max_http2_streams = $HTTP2_STREAMS
EOF
  echo "$f"
}

# start_xb NAME URL [REPLICA_URL]: starts our server pinned to CPU 1 on a free port; sets
# SERVER_PID, PORT, CONFIG_SHOWN.
start_xb() {
  local name=$1 try port cfg
  for try in 1 2 3 4 5; do
    port=$(pick_port)
    cfg=$(server_toml "$name" "$port" "$2" "${3:-}")
    taskset -c "$SERVER_CPU" "$binary" --config "$(cat "$cfg")" >>"$TMP/$name.log" 2>&1 &
    SERVER_PID=$!
    if ! wait_listen "$SERVER_PID" "$port" "$TMP/$name.log"; then
      log "$name exited before listening on $port (try $try): $(tail -n 3 "$TMP/$name.log" | tr '\n' ' ')"
      wait "$SERVER_PID" || true
      SERVER_PID=""
      continue
    fi
    PORT=$port
    CONFIG_SHOWN="$(cat "$cfg")"
    return
  done
  die "$name could not start"
}

# start_peer: starts the grpc-go peer pinned to CPU 1 (GOMAXPROCS=1); sets PEER_PID, PEER_PORT.
start_peer() {
  local try port
  for try in 1 2 3 4 5; do
    port=$(pick_port)
    GOMAXPROCS=1 taskset -c "$SERVER_CPU" "$PEER_BIN" -listen "127.0.0.1:$port" -batch "$batch" \
      >>"$TMP/peer.log" 2>&1 &
    PEER_PID=$!
    if wait_listen "$PEER_PID" "$port" "$TMP/peer.log"; then
      PEER_PORT=$port
      return
    fi
    log "peer exited before listening on $port (try $try)"
    wait "$PEER_PID" || true
    PEER_PID=""
  done
  die "the peer could not start"
}

# Results: R[server.case.repeat] = RESULT line. server: sqlite, postgres, peer (latency and
# idle rows), peer@ENGINE (deliver runs beside ENGINE's).
declare -A R=()
declare -A NOTES=()
declare -A SKIPPED=()   # SKIPPED[server] = why its stream cases did not run
declare -A BIDI=()      # BIDI[server] = 1 when the bidi gate passed
SERVER_ERRORS=()
GATE_FAILED=0

# load KEY TARGET PID [loadgen args]: one loadgen run pinned to CPU 0; stores the RESULT line.
# Returns loadgen's exit status (3 = the server does not serve the stream RPC).
load() {
  local key=$1 target=$2 pid=$3 out="$TMP/load.out" line rc=0
  shift 3
  run_tracked taskset -c "$LOAD_CPU" "$LOADGEN" --target "$target" --server-pid "$pid" \
    --transport "$transport" --payload "$PAYLOAD" --duration "$duration" --warmup "$WARMUP_S" \
    "$@" >"$out" 2>&1 || rc=$?
  sed 's/^/    /' "$out" | grep -v '^    RESULT' >&2 || true
  if [[ $rc -ne 0 ]]; then
    NOTES[$key]="loadgen exit $rc: $(grep -v '^RESULT' "$out" | tail -n 2 | tr '\n' ' ')"
    return $rc
  fi
  line=$(grep '^RESULT ' "$out" || true)
  R[$key]="$line"
  local problems=""
  for f in missing out_of_order wrong_topic stream_errors protocol_errors pub_errors incomplete; do
    local v
    v=$(kv "$f" "$line")
    [[ -n "$v" && "$v" != "0" ]] && problems+=" $f=$v"
  done
  if [[ -n "$problems" ]]; then
    NOTES[$key]="${problems# } $(grep '^FIRST_ERROR' "$out" | cut -c13- | tr '\n' ' ')"
  fi
  return 0
}

# stream_gate NAME TARGET: the stream correctness gate (the server through sync stubs, then the
# same through the --transport client). Sets SKIPPED[NAME] when SubscribeStatic is not served or
# the gate fails; BIDI[NAME]=1 when Subscribe passed too.
stream_gate() {
  local name=$1 out rc=0
  out=$("$LOADGEN" --target "$2" --mode stream-verify --transport "$transport" \
    --payload "$PAYLOAD" 2>&1) || rc=$?
  grep -v '^RESULT' <<<"$out" | sed "s/^/    $name gate: /" >&2 || true
  case $rc in
    0) ;;
    3) SKIPPED[$name]="SubscribeStatic answers UNIMPLEMENTED: the server does not serve streams yet"
       log "$name: ${SKIPPED[$name]}; skipping its stream cases"
       return ;;
    *) SKIPPED[$name]="stream gate failed: $(grep -v '^RESULT' <<<"$out" | head -n 3 | tr '\n' ' ')"
       GATE_FAILED=1
       log "$name: ${SKIPPED[$name]}; skipping its stream cases"
       return ;;
  esac
  [[ "$(kv bidi "$(grep '^RESULT' <<<"$out")")" == ok ]] && BIDI[$name]=1
  return 0
}

# The cases of one server (ours or the peer) for one repeat; $1 = name, $2 = rep, $3 = target,
# $4 = pid.
latency_cases() {
  local name=$1 rep=$2 target=$3 pid=$4
  log "$name repeat $rep: $FANOUT_SUBS streams on one topic, $fanout_rate publishes/s"
  load "$name.fanout.$rep" "$target" "$pid" --mode subscribe-latency --subscribers "$FANOUT_SUBS" \
    --topics 1 --streams-per-channel "$FANOUT_PER_CHANNEL" --rate "$fanout_rate" \
    --grace "$GRACE_S" || true
  if [[ -n "${BIDI[$name]:-}" ]]; then
    log "$name repeat $rep: the same over Subscribe (bidi)"
    load "$name.fanout_bidi.$rep" "$target" "$pid" --mode subscribe-latency --stream bidi \
      --subscribers "$FANOUT_SUBS" --topics 1 --streams-per-channel "$FANOUT_PER_CHANNEL" \
      --rate "$fanout_rate" --grace "$GRACE_S" || true
  fi
  log "$name repeat $rep: $TOPICS_N topics, one stream each, $TOPICS_RATE publishes/s"
  load "$name.topics.$rep" "$target" "$pid" --mode subscribe-latency --subscribers "$TOPICS_N" \
    --topics "$TOPICS_N" --streams-per-channel "$TOPICS_PER_CHANNEL" --rate "$TOPICS_RATE" \
    --grace "$GRACE_S" || true
}

deliver_case() {
  local key=$1 target=$2 pid=$3
  load "$key" "$target" "$pid" --mode deliver --subscribers "$DELIVER_STREAMS" --topics 1 \
    --streams-per-channel "$DELIVER_PER_CHANNEL" --prefill "$DELIVER_PREFILL" \
    --envelopes "$PREFILL_PER_REQUEST" || true
}

live_case() {
  load "$1" "$2" "$3" --mode subscribe-latency --subscribers "$LIVE_SUBS" --topics 1 \
    --streams-per-channel "$LIVE_PER_CHANNEL" --rate 0 --clients "$LIVE_PUBLISHERS" \
    --envelopes "$LIVE_ENVELOPES" \
    --grace "$GRACE_S" || true
}

idle_case() {
  load "$1" "$2" "$3" --mode idle-streams --subscribers "$IDLE_STREAMS" \
    --streams-per-channel "$IDLE_PER_CHANNEL" --settle "$IDLE_SETTLE_S" || true
}

# The server runs at log_level warn: any line it wrote is worth showing.
scan_server_log() {
  local n
  n=$(grep -c . "$TMP/$1.log" || true)
  if [[ "$n" -gt 0 ]]; then
    SERVER_ERRORS+=("$1 server log: $n line(s), the first 10:" "$(grep . "$TMP/$1.log" | head -n 10)")
  fi
}

check_alive() {
  if ! kill -0 "$SERVER_PID" 2>/dev/null; then
    die "server died during $1 (log: $(tail -n 5 "$TMP/$ENGINE.log" | tr '\n' ' '))"
  fi
}

# One engine: gates, then per repeat the latency cases, our delivery case and the peer's right
# after it; then the idle case, on a fresh server per repeat (freed memory would otherwise be
# reused and hide the growth).
run_engine() {
  local url=$1 replica=${2:-} out rep
  start_xb "$ENGINE" "$url" "$replica"
  CONFIGS[$ENGINE]="$CONFIG_SHOWN"
  out=$("$LOADGEN" --target "127.0.0.1:$PORT" --mode verify --envelopes 1 --payload "$PAYLOAD" 2>&1) \
    || die "$ENGINE: publish/query gate failed: $out"
  log "$ENGINE gate: $out"
  stream_gate "$ENGINE" "127.0.0.1:$PORT"
  if [[ -z "${SKIPPED[$ENGINE]:-}" ]]; then
    for rep in $(seq "$repeats"); do
      latency_cases "$ENGINE" "$rep" "127.0.0.1:$PORT" "$SERVER_PID"
      check_alive "$ENGINE latency"
      log "$ENGINE repeat $rep: delivery, $DELIVER_STREAMS streams from cursor 0 over $DELIVER_PREFILL envelopes"
      deliver_case "$ENGINE.deliver.$rep" "127.0.0.1:$PORT" "$SERVER_PID"
      check_alive "$ENGINE deliver"
      if [[ -n "$PEER_PID" ]]; then
        log "peer beside $ENGINE, repeat $rep: delivery"
        deliver_case "peer@$ENGINE.deliver.$rep" "127.0.0.1:$PEER_PORT" "$PEER_PID"
      fi
      log "$ENGINE repeat $rep: live fan-out, $LIVE_SUBS streams on one topic, $LIVE_PUBLISHERS publishers back to back"
      live_case "$ENGINE.live.$rep" "127.0.0.1:$PORT" "$SERVER_PID"
      check_alive "$ENGINE live fan-out"
      if [[ -n "$PEER_PID" ]]; then
        log "peer beside $ENGINE, repeat $rep: live fan-out"
        live_case "peer@$ENGINE.live.$rep" "127.0.0.1:$PEER_PORT" "$PEER_PID"
      fi
    done
  fi
  stop_pid "$SERVER_PID" 50
  SERVER_PID=""
  if [[ -z "${SKIPPED[$ENGINE]:-}" ]]; then
    for rep in $(seq "$repeats"); do
      start_xb "$ENGINE" "$url" "$replica"
      log "$ENGINE repeat $rep: $IDLE_STREAMS idle streams on a fresh server"
      idle_case "$ENGINE.idle.$rep" "127.0.0.1:$PORT" "$SERVER_PID"
      check_alive "$ENGINE idle"
      stop_pid "$SERVER_PID" 50
      SERVER_PID=""
    done
  fi
  scan_server_log "$ENGINE"
}

declare -A CONFIGS=()
LOADAVG_BEFORE="$(cut -d' ' -f1-3 /proc/loadavg)"
HEAD="$(git -C "$ROOT" log -1 --format='%h %cI %s' 2>/dev/null || echo unknown)"
BINARY_TIME="$(date -u -r "$binary" '+%Y-%m-%dT%H:%M:%SZ')"

if [[ $peer -eq 1 ]]; then
  start_peer
  stream_gate peer "127.0.0.1:$PEER_PORT"
  if [[ -n "${SKIPPED[peer]:-}" ]]; then
    stop_pid "$PEER_PID" 50
    PEER_PID=""
  fi
fi

# ---------------------------------------------------------------------------------------------
# SQLite
# ---------------------------------------------------------------------------------------------
if [[ "$engines" == *sqlite* ]]; then
  ENGINE=sqlite
  mkdir -p "$TMP/sqlite"
  run_engine "sqlite://$TMP/sqlite/xmtp.db"
fi

# ---------------------------------------------------------------------------------------------
# PostgreSQL
# ---------------------------------------------------------------------------------------------
if [[ "$engines" == *postgres* ]]; then
  ENGINE=postgres
  PG_DIR="$TMP/pg"
  start_pg_cluster "$PG_DIR" "$TMP/pg_cluster.log"
  PG_SYNC="$(psql "$XB_PG_PRIMARY" -XAtc 'SHOW synchronous_commit')"
  psql "$XB_PG_PRIMARY" -Xq -v ON_ERROR_STOP=1 -c 'CREATE DATABASE xb_bench' >/dev/null
  replica_url=""
  [[ $pg_replica -eq 1 ]] && replica_url="${XB_PG_REPLICA%/*}/xb_bench"
  run_engine "$PG_BASE/xb_bench" "$replica_url"
fi

# ---------------------------------------------------------------------------------------------
# The peer's own rows: latency (a reference, in memory) and idle memory (fresh peer per repeat).
# ---------------------------------------------------------------------------------------------
if [[ -n "$PEER_PID" ]]; then
  ran_beside=0
  for k in "${!R[@]}"; do
    [[ "$k" == peer@*.deliver.* ]] && ran_beside=1
  done
  for rep in $(seq "$repeats"); do
    latency_cases peer "$rep" "127.0.0.1:$PEER_PORT" "$PEER_PID"
    if [[ $ran_beside -eq 0 ]]; then  # no engine ran its delivery case: the peer's alone
      log "peer repeat $rep: delivery, live fan-out"
      deliver_case "peer.deliver.$rep" "127.0.0.1:$PEER_PORT" "$PEER_PID"
      live_case "peer.live.$rep" "127.0.0.1:$PEER_PORT" "$PEER_PID"
    fi
  done
  stop_pid "$PEER_PID" 50
  PEER_PID=""
  for rep in $(seq "$repeats"); do
    start_peer
    log "peer repeat $rep: $IDLE_STREAMS idle streams on a fresh peer"
    idle_case "peer.idle.$rep" "127.0.0.1:$PEER_PORT" "$PEER_PID"
    stop_pid "$PEER_PID" 50
    PEER_PID=""
  done
fi
LOADAVG_AFTER="$(cut -d' ' -f1-3 /proc/loadavg)"

# ---------------------------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------------------------
# med KEYPREFIX FIELD: median of FIELD over repeats ("nan" when no repeat has it).
med() {
  local rep v
  for rep in $(seq "$repeats"); do
    v=$(kv "$2" "${R[$1.$rep]:-}")
    [[ -n "$v" ]] && echo "$v"
  done | median
}
ms() { awk -v u="$1" 'BEGIN {if (u == "nan") print "-"; else printf "%.2f", u / 1000}'; }
pct() { awk -v c="$1" -v s="$2" 'BEGIN {if (c == "nan" || s == "nan" || c < 0 || s + 0 == 0) print "-"; else printf "%.0f%%", 100 * c / s}'; }
per_cpu() { awk -v n="$1" -v s="$2" -v c="$3" 'BEGIN {if (n == "nan" || c == "nan" || c + 0 <= 0) print "-"; else printf "%.0f", n * s / c}'; }
mib() { awk -v k="$1" 'BEGIN {if (k == "nan") print "-"; else printf "%.1f", k / 1024}'; }

SERVERS=()
[[ "$engines" == *sqlite* ]] && SERVERS+=(sqlite)
[[ "$engines" == *postgres* ]] && SERVERS+=(postgres)
[[ $peer -eq 1 ]] && SERVERS+=(peer)

cat <<EOF

== configuration ==
binary      $binary (built $BINARY_TIME); checkout HEAD $HEAD
machine     $(nproc) CPUs; servers on CPU $SERVER_CPU (taskset), loadgen on CPU $LOAD_CPU; PostgreSQL unpinned
load avg    before $LOADAVG_BEFORE, after $LOADAVG_AFTER
runs        $repeats repeat(s) x ${duration} s measured after ${WARMUP_S} s warm-up; medians shown
loadgen     transport $transport: $(if [[ $transport == h2 ]]; then echo "subscribers over libnghttp2 $(pkg-config --modversion libnghttp2) on one epoll thread (h2c, 256 KiB reads, 16 MiB stream windows)"; else echo "subscribers over grpc++ $(pkg-config --modversion grpc++) on one completion-queue thread (generic async API)"; fi), frames decoded from the wire bytes; publishers on grpc++ $(pkg-config --modversion grpc++) sync stubs, one thread each
envelopes   group messages, MLS PrivateMessage of $PAYLOAD bytes; fresh topics per run; the send time (steady clock) in the last 8 payload bytes
(a) fanout  $FANOUT_SUBS SubscribeStatic streams on one topic ($FANOUT_PER_CHANNEL per connection), 1 publisher at $fanout_rate publishes/s x 1 envelope; also over Subscribe (bidi) when its gate passes
(a) topics  $TOPICS_N topics, one SubscribeStatic stream each ($TOPICS_PER_CHANNEL per connection), 1 publisher at $TOPICS_RATE publishes/s round-robin over the topics
            latency = frame received - Publish sent, per (envelope, subscriber), envelopes sent in the measured interval; "first" / "last" = per publish, the earliest / latest subscriber; grace ${GRACE_S} s for stragglers
(b) deliver $DELIVER_STREAMS SubscribeStatic streams ($DELIVER_PER_CHANNEL per connection) from cursor 0 on one topic prefilled with $DELIVER_PREFILL envelopes ($PREFILL_PER_REQUEST per Publish); a stream that reached its Started target is cancelled and reopened; envelopes received per second
(b) live    $LIVE_SUBS SubscribeStatic streams on one topic ($LIVE_PER_CHANNEL per connection), $LIVE_PUBLISHERS publishers back to back ($LIVE_ENVELOPES envelopes per Publish); deliveries per second and per server CPU-second
(c) idle    $IDLE_STREAMS SubscribeStatic streams, each on its own empty topic ($IDLE_PER_CHANNEL per connection), on a freshly started server; VmRSS ${IDLE_SETTLE_S} s after the warm-up streams closed, after all $IDLE_STREAMS were Started, after they closed
EOF
if [[ $peer -eq 1 ]]; then
  echo "peer        bench/peers/grpc_go_stream (grpc-go 1.33, GOMAXPROCS=1, in-memory Publish + SubscribeStatic, pre-encoded envelopes, at most $batch per Messages frame; no Subscribe)"
fi
if [[ "$engines" == *postgres* ]]; then
  echo "postgres    $PG_VERSION, synchronous_commit=$PG_SYNC; streams read from $([[ $pg_replica -eq 1 ]] && echo "the streaming replica" || echo "the primary (no replica_url)")"
fi
for e in sqlite postgres; do
  [[ -n "${CONFIGS[$e]:-}" ]] && printf -- '--- server config (%s) ---\n%s\n' "$e" "${CONFIGS[$e]}"
done

echo
echo "== (a) publish -> receive latency, ms (medians) =="
printf '%-9s %-14s %6s %6s %6s %7s %7s %7s %9s %8s %8s %7s %8s %8s\n' server case streams \
  topics pub/s p50 p90 p99 first_p99 last_p99 deliv/s missing srv_cpu load_cpu
for s in "${SERVERS[@]}"; do
  if [[ -n "${SKIPPED[$s]:-}" ]]; then
    printf '%-9s skipped: %s\n' "$s" "${SKIPPED[$s]}"
    continue
  fi
  for c in fanout fanout_bidi topics; do
    k="$s.$c"
    [[ -n "${R[$k.1]:-}" ]] || continue
    printf '%-9s %-14s %6s %6s %6s %7s %7s %7s %9s %8s %8s %7s %8s %8s\n' "$s" \
      "$([[ $c == fanout ]] && echo "one topic" || ([[ $c == fanout_bidi ]] && echo "one topic bidi" || echo "many topics"))" \
      "$(med "$k" subscribers)" "$(med "$k" topics)" "$(med "$k" rate)" \
      "$(ms "$(med "$k" p50_us)")" "$(ms "$(med "$k" p90_us)")" "$(ms "$(med "$k" p99_us)")" \
      "$(ms "$(med "$k" first_p99_us)")" "$(ms "$(med "$k" last_p99_us)")" \
      "$(med "$k" deliveries_per_s)" "$(med "$k" missing)" \
      "$(pct "$(med "$k" server_cpu_s)" "$(med "$k" secs)")" \
      "$(pct "$(med "$k" load_cpu_s)" "$(med "$k" secs)")"
  done
done
echo "(srv_cpu / load_cpu = CPU time of the server / the loadgen over the measured interval; near"
echo " 100% the latency includes that process's queue. The peer keeps everything in memory: its"
echo " rows are the transport's floor, not a like-for-like backend.)"

echo
echo "== (b) catch-up delivery on one core, 1 KiB envelopes (medians) =="
printf '%-16s %7s %10s %9s %9s %8s %11s %8s %9s\n' server streams env/s env/frame B/env srv_cpu \
  env/cpu-s load_cpu ours/peer
for s in sqlite postgres peer; do
  [[ "$engines" == *$s* || $s == peer ]] || continue
  if [[ -n "${SKIPPED[$s]:-}" ]]; then
    printf '%-16s skipped: %s\n' "$s" "${SKIPPED[$s]}"
    continue
  fi
  for who in "$s" "peer@$s"; do
    k="$who.deliver"
    [[ -n "${R[$k.1]:-}" ]] || continue
    eps=$(med "$k" eps)
    printf '%-16s %7s %10s %9s %9s %8s %11s %8s %9s\n' "$who" "$(med "$k" streams)" "$eps" \
      "$(med "$k" env_per_frame)" "$(med "$k" bytes_per_env)" \
      "$(pct "$(med "$k" server_cpu_s)" "$(med "$k" secs)")" \
      "$(per_cpu "$eps" "$(med "$k" secs)" "$(med "$k" server_cpu_s)")" \
      "$(pct "$(med "$k" load_cpu_s)" "$(med "$k" secs)")" \
      "$([[ $who == "$s" && $s != peer ]] && ratio "$eps" "$(med "peer@$s.deliver" eps)" || echo)"
  done
done
echo "(peer@ENGINE = the grpc-go peer measured right after ENGINE in each repeat, at most $batch"
echo " envelopes per frame; env/cpu-s = envelopes per server CPU-second)"

echo
echo "== (b) live fan-out, $LIVE_SUBS streams on one topic, $LIVE_PUBLISHERS publishers back to back (medians) =="
printf '%-16s %8s %10s %7s %7s %8s %12s %8s %9s %9s\n' server env/s deliv/s p50 p99 srv_cpu \
  deliv/cpu-s load_cpu ours/peer per-cpu
for s in sqlite postgres peer; do
  [[ "$engines" == *$s* || $s == peer ]] || continue
  [[ -n "${SKIPPED[$s]:-}" ]] && continue
  for who in "$s" "peer@$s"; do
    k="$who.live"
    [[ -n "${R[$k.1]:-}" ]] || continue
    dps=$(med "$k" deliveries_per_s)
    dpc=$(per_cpu "$dps" "$(med "$k" secs)" "$(med "$k" server_cpu_s)")
    printf '%-16s %8s %10s %7s %7s %8s %12s %8s %9s %9s\n' "$who" \
      "$(awk -v p="$(med "$k" published)" -v s="$(med "$k" secs)" 'BEGIN {if (p == "nan") print "-"; else printf "%.0f", p / s}')" \
      "$dps" "$(ms "$(med "$k" p50_us)")" "$(ms "$(med "$k" p99_us)")" \
      "$(pct "$(med "$k" server_cpu_s)" "$(med "$k" secs)")" "$dpc" \
      "$(pct "$(med "$k" load_cpu_s)" "$(med "$k" secs)")" \
      "$([[ $who == "$s" && $s != peer ]] && ratio "$dps" "$(med "peer@$s.live" deliveries_per_s)" || echo)" \
      "$([[ $who == "$s" && $s != peer ]] && ratio "$dpc" "$(per_cpu "$(med "peer@$s.live" deliveries_per_s)" "$(med "peer@$s.live" secs)" "$(med "peer@$s.live" server_cpu_s)")" || echo)"
  done
done
echo "(env/s = envelopes published per second; deliveries = envelopes x subscribers. Ours also"
echo " stores every publish in its engine; the peer keeps them in memory. When load_cpu nears"
echo " 100% the client, not the server, sets the rate: compare per-cpu then.)"

echo
echo "== (c) server memory per idle open stream (medians) =="
printf '%-9s %7s %8s %13s %11s %13s %11s %13s\n' server streams open_s rss_before_MiB \
  rss_open_MiB rss_closed_MiB KiB/stream loadgen_KiB/st
for s in "${SERVERS[@]}"; do
  [[ -n "${SKIPPED[$s]:-}" ]] && continue
  k="$s.idle"
  [[ -n "${R[$k.1]:-}" ]] || continue
  printf '%-9s %7s %8s %13s %11s %13s %11s %13s\n' "$s" "$(med "$k" streams)" \
    "$(med "$k" open_s)" "$(mib "$(med "$k" rss_before_kib)")" "$(mib "$(med "$k" rss_open_kib)")" \
    "$(mib "$(med "$k" rss_closed_kib)")" "$(med "$k" kib_per_stream)" \
    "$(med "$k" load_kib_per_stream)"
done

echo
echo "== goals (reported, not asserted) =="
for s in sqlite postgres; do
  [[ "$engines" == *$s* && -z "${SKIPPED[$s]:-}" ]] || continue
  goal=$([[ $s == sqlite ]] && echo 5 || echo $((POLL_MS + 10)))
  for c in fanout topics; do
    [[ -n "${R[$s.$c.1]:-}" ]] || continue
    echo "$s $([[ $c == fanout ]] && echo "one topic  " || echo "many topics"): p99 $(ms "$(med "$s.$c" p99_us)") ms (goal <= $goal ms$([[ $s == postgres ]] && echo ": poll_interval_ms + 10"))"
  done
done
for s in sqlite postgres; do
  [[ "$engines" == *$s* && -n "${SKIPPED[$s]:-}" ]] && echo "$s: not measured (${SKIPPED[$s]})"
done

if [[ ${#NOTES[@]} -gt 0 || ${#SERVER_ERRORS[@]} -gt 0 ]]; then
  echo
  echo "== anomalies =="
  for k in "${!NOTES[@]}"; do echo "$k: ${NOTES[$k]}"; done | sort
  printf '%s\n' "${SERVER_ERRORS[@]}"
fi
exit $GATE_FAILED
