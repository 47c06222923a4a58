#!/usr/bin/env bash
# bench/instructions.sh: the cost of authentication (issue 6) and of telemetry (issue 5) as
# instructions executed by the server per request, counted by valgrind's callgrind over every
# thread of the process (the OTLP exporter's encoding and sending included). Unlike req/s and CPU
# time, an instruction count does not move with what else runs on a shared machine, so it
# resolves a few percent where bench/auth.sh and bench/telemetry.sh cannot. It does not count
# cache misses or time spent waiting in the kernel; read it beside those two benchmarks.
#
#   bench/instructions.sh [--requests N] [--binary PATH] [--only auth|telemetry|publish]
#                         [--keep DIR]
#
# --only runs one group of cases (the table shows the others empty); --keep copies each run's
# callgrind dump and log into DIR (run<N>.cg.1, for callgrind_annotate).
#
# Cases, each a fresh server under callgrind, SQLite in a temp dir:
#   unary: h2load -n N -c10 -m10 of QueryService/Query (auth off / API key / JWT ES256, the auth.sh
#          configurations, every request sending the same JWT header when auth is off) and of
#          ConfigurationService/GetConfiguration (telemetry off / on at sampling 1.0 with the
#          exporter sending to a local OTLP sink / on at sampling 0.0)
#   publish: bench/loadgen --mode publish, 8 clients, 1 KiB group messages, telemetry off / on
# Counting starts after a warm-up of N/10 requests (callgrind_control --zero) and ends after the
# load (callgrind_control --dump). Nothing here asserts a count.
set -euo pipefail
export LC_ALL=C

readonly ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
readonly PROTO_DIR="$ROOT/proto"
readonly GEN_DIR="$ROOT/build-bench-loadgen"
readonly PACKAGES=(valgrind nghttp2-client curl python3-cryptography g++ pkg-config protobuf-compiler
                   libgrpc++-dev protobuf-compiler-grpc libnghttp2-dev libsqlite3-dev)
ARGS=("$@")
requests=20000
binary="$ROOT/build/src/xmtp-backend"
only=""
keep=""
usage() { sed -n '2,22p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --requests) requests="$2"; shift ;;
    --binary) binary="$2"; shift ;;
    --only) only="$2"; shift ;;
    --keep) keep="$2"; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "unknown argument: $1" >&2; usage >&2; exit 2 ;;
  esac
  shift
done
[[ "$requests" =~ ^[1-9][0-9]*$ ]] || { echo "--requests wants a positive integer" >&2; exit 2; }
[[ "$only" =~ ^(|auth|telemetry|publish)$ ]] || { echo "--only wants auth, telemetry or publish" >&2; exit 2; }
[[ -z "$keep" ]] || mkdir -p "$keep"
binary="$(realpath "$binary")"
[[ -x "$binary" ]] || { echo "--binary $binary is not an executable" >&2; exit 2; }

log() { printf '[instructions.sh] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"

TMP="$(mktemp -d /tmp/xb-bench-instr.XXXXXX)"
SERVER_PID=""
SINK_PID=""
cleanup() {
  local pid
  for pid in "$SERVER_PID" "$SINK_PID"; do
    [[ -n "$pid" ]] || continue
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 100); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
ensure_packages
build_loadgen
LOADGEN="$GEN_DIR/loadgen"

# Credentials made by python3-cryptography (tests/integration/jwks_server.py), as in auth.sh.
PYTHONPATH="$ROOT/tests/integration" python3 - "$TMP" <<'PY'
import os, sys, time
import jwks_server
d = sys.argv[1]
key = jwks_server.SigningKey("ES256", "bench")
claims = {"exp": int(time.time()) + 3600, "aud": "bench", "iss": "https://bench", "scope": "xmtp"}
open(os.path.join(d, "pem"), "w").write(key.public_pem())
open(os.path.join(d, "jwt"), "w").write(key.token(claims))
open(os.path.join(d, "apikey"), "w").write(os.urandom(24).hex())
PY
printf '\x00\x00\x00\x00\x00' >"$TMP/body"  # an empty request message, framed
SINK_PORT=$(pick_port)
start_otlp_sink "$SINK_PORT" "$TMP/sink.count"

config() {  # config CASE PORT
  cat <<EOF
[server]
identifier = "bench.local"
listen = "127.0.0.1:$2"
log_level = "warn"
request_logger = false
[telemetry]
metrics_listen = ""
EOF
  case "$1" in
    tel_on) printf 'otlp_endpoint = "http://127.0.0.1:%s"\nsample_ratio = 1.0\n' "$SINK_PORT" ;;
    tel_r0) printf 'otlp_endpoint = "http://127.0.0.1:%s"\nsample_ratio = 0.0\n' "$SINK_PORT" ;;
  esac
  printf '[database]\nurl = "sqlite://%s/run%s.db"\n' "$TMP" "$RUN"  # a fresh database per run
  case "$1" in
    apikey) printf '[auth]\nenabled = true\n[auth.api_keys]\nbench = "%s"\n' "$(cat "$TMP/apikey")" ;;
    jwt) printf '[auth]\nenabled = true\naudiences = ["bench"]\nissuers = ["https://bench"]\nrequired_scopes = ["xmtp"]\n[[auth.keys]]\nkid = "bench"\nalg = "ES256"\npublic_key = """%s"""\n' "$(cat "$TMP/pem")" ;;
  esac
}

# start CASE: the server under callgrind in a run of its own (RUN, its output $TMP/run$RUN.cg);
# sets PORT and SERVER_PID.
RUN=0
start() {
  local deadline
  PORT=$(pick_port)
  RUN=$((RUN + 1))
  valgrind --tool=callgrind --callgrind-out-file="$TMP/run$RUN.cg" --dump-instr=no --collect-atstart=yes \
    "$binary" --config "$(config "$1" "$PORT")" >"$TMP/run$RUN.log" 2>&1 &
  SERVER_PID=$!
  deadline=$((SECONDS + 120))
  until [[ -n "$(ss -Htln "sport = :$PORT")" ]]; do
    kill -0 "$SERVER_PID" 2>/dev/null || die "$1 exited: $(tail -n 3 "$TMP/run$RUN.log")"
    ((SECONDS < deadline)) || die "$1 did not listen within 120 s under valgrind"
    sleep 0.2
  done
}

stop() {
  kill -TERM "$SERVER_PID" 2>/dev/null || true
  wait "$SERVER_PID" 2>/dev/null || true
  SERVER_PID=""
  [[ -z "$keep" ]] || cp "$TMP/run$RUN.cg.1" "$TMP/run$RUN.log" "$keep/" 2>/dev/null || true
}

# Instructions of the current run's first dump (the one `callgrind_control --dump` wrote, after
# the zeroing), divided by COUNT.
per_request() {  # per_request COUNT
  local dump="$TMP/run$RUN.cg.1" total
  [[ -s "$dump" ]] || die "run $RUN: no callgrind dump"
  total=$(sed -n 's/^totals: \([0-9]*\).*/\1/p' "$dump")
  [[ -n "$total" ]] || die "run $RUN: no totals line in $dump"
  awk -v t="$total" -v n="$1" 'BEGIN {printf "%.0f", t / n}'
}

declare -A IR
h2() {  # h2 PATH HEADER COUNT
  h2load -t1 -c10 -m10 -n "$3" -d "$TMP/body" -H 'content-type: application/grpc' -H 'te: trailers' \
    -H "$2" "http://127.0.0.1:$PORT$1" >"$TMP/h2load.out" 2>&1 || die "h2load failed"
  grep -q "requests: $3 total, $3 started, $3 done, $3 succeeded" "$TMP/h2load.out" ||
    die "h2load: $(grep '^requests:' "$TMP/h2load.out")"
}
unary_case() {  # unary_case LABEL CASE PATH: IR[LABEL]
  local label=$1
  shift
  local header="authorization: Bearer $(cat "$TMP/jwt")"
  [[ "$1" == apikey ]] && header="authorization: Bearer $(cat "$TMP/apikey")"
  log "$1: $2 x $requests under callgrind"
  start "$1"
  # Gate: the credential is admitted (a rejection would be counted as a cheap request).
  curl -s --http2-prior-knowledge -D "$TMP/gate.headers" -o /dev/null --data-binary @"$TMP/body" \
    -H 'content-type: application/grpc' -H 'te: trailers' -H "$header" \
    "http://127.0.0.1:$PORT$2" || die "$1: gate request failed"
  ! grep -qiE '^grpc-status: *[1-9]' "$TMP/gate.headers" ||
    die "$1: gate answered $(grep -i '^grpc-status' "$TMP/gate.headers")"
  h2 "$2" "$header" $((requests / 10))
  callgrind_control --zero "$SERVER_PID" >/dev/null
  h2 "$2" "$header" "$requests"
  callgrind_control --dump "$SERVER_PID" >/dev/null
  IR[$label]=$(per_request "$requests")
  stop
}
publish_case() {  # publish_case LABEL CASE: IR[LABEL], IR[LABEL.n]
  local label=$1 out ok
  shift
  out="$TMP/loadgen.$label"
  log "$1: publish under callgrind"
  start "$1"
  "$LOADGEN" --target "127.0.0.1:$PORT" --payload 1024 --topics 64 --mode publish --clients 8 \
    --envelopes 1 --duration 3 --warmup 0 >/dev/null 2>&1 || die "loadgen warm-up failed"
  callgrind_control --zero "$SERVER_PID" >/dev/null
  "$LOADGEN" --target "127.0.0.1:$PORT" --payload 1024 --topics 64 --mode publish --clients 8 \
    --envelopes 1 --duration 10 --warmup 0 >"$out" 2>&1 || die "loadgen failed: $(tail -n 2 "$out")"
  # Requests still in flight when loadgen stops are counted by neither side: let them finish.
  sleep 2
  callgrind_control --dump "$SERVER_PID" >/dev/null
  ok=$(kv ok "$(grep '^RESULT ' "$out")")
  [[ "$(kv errors "$(grep '^RESULT ' "$out")")" == 0 ]] || die "publish errors: $(tail -n 2 "$out")"
  IR[$label]=$(per_request "$ok")
  IR[$label.n]=$ok
  stop
}

if [[ -z "$only" || "$only" == auth ]]; then
  for c in off apikey jwt; do
    unary_case "q_$c" "$c" /xmtp.backend.v1.QueryService/Query
  done
fi
if [[ -z "$only" || "$only" == telemetry ]]; then
  for c in tel_off tel_on tel_r0; do
    unary_case "u_$c" "$c" /xmtp.backend.v1.ConfigurationService/GetConfiguration
  done
fi
if [[ -z "$only" || "$only" == publish ]]; then
  publish_case p_off tel_off
  publish_case p_on tel_on
fi

echo "Command: bench/instructions.sh ${ARGS[*]}"
echo "== server instructions per request (callgrind, all threads; warm-up excluded)"
printf '%-52s %14s %8s\n' case "instr/req" "vs off"
row() { printf '%-52s %14s %8s\n' "$1" "$2" "$(ratio "$2" "$3")"; }
row "Query, auth off ($requests requests)" "${IR[q_off]:--}" "${IR[q_off]:--}"
row "Query, API key" "${IR[q_apikey]:--}" "${IR[q_off]:--}"
row "Query, JWT ES256 (verified-token cache)" "${IR[q_jwt]:--}" "${IR[q_off]:--}"
row "GetConfiguration, telemetry off" "${IR[u_tel_off]:--}" "${IR[u_tel_off]:--}"
row "GetConfiguration, telemetry on, sampling 1.0" "${IR[u_tel_on]:--}" "${IR[u_tel_off]:--}"
row "GetConfiguration, telemetry on, sampling 0.0" "${IR[u_tel_r0]:--}" "${IR[u_tel_off]:--}"
row "Publish 1 KiB, telemetry off (${IR[p_off.n]:--} publishes)" "${IR[p_off]:--}" "${IR[p_off]:--}"
row "Publish 1 KiB, telemetry on, sampling 1.0 (${IR[p_on.n]:--})" "${IR[p_on]:--}" "${IR[p_off]:--}"
echo "sink: $(cat "$TMP/sink.count" 2>/dev/null || echo '0 0') (export requests, bytes)"
