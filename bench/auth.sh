#!/usr/bin/env bash
# bench/auth.sh: the cost of authentication on a unary call. One run measures the same server
# binary three ways, in turn: auth off, an API key, and a JWT (ES256, inline key) — the JWT and
# the keys are made by python3-cryptography (tests/integration/jwks_server.py), not by our code.
#
#   bench/auth.sh [--quick] [--repeats N] [--duration S] [--binary PATH]
#
# The call is QueryService/Query with an empty request (a non-public path that answers OK without
# touching the store), so the difference between rows is the auth step. Server pinned to CPU 1,
# h2load to CPU 0. Each server is gated first (a good credential gets grpc-status 0, a wrong one
# 16), then every case runs N times (default 3) in rotation; the table shows medians and the
# throughput relative to auth off. Nothing here asserts a timing.
set -euo pipefail
export LC_ALL=C

readonly ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
readonly PROTO_DIR="$ROOT/proto"
readonly SERVER_CPU=1
readonly LOAD_CPU=0
readonly WARMUP_S=1
readonly METHOD=xmtp.backend.v1.QueryService/Query
readonly CASES=("1 1" "10 10")  # (c, m)
readonly PACKAGES=(nghttp2-client python3-cryptography protobuf-compiler)

ARGS=("$@")
repeats=3
duration=5
binary=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --quick) repeats=1; duration=2 ;;
    --repeats) repeats="$2"; shift ;;
    --duration) duration="$2"; shift ;;
    --binary) binary="$2"; shift ;;
    -h|--help) sed -n '2,12p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
  shift
done

log() { printf '[auth.sh] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"

TMP="$(mktemp -d /tmp/xb-bench-auth.XXXXXX)"
PIDS=()
LOAD_PID=""
cleanup() {
  local pid
  [[ -z "$LOAD_PID" ]] || kill -TERM "$LOAD_PID" 2>/dev/null || true
  for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "command: $0 ${ARGS[*]}"
ensure_packages
if [[ -z "$binary" ]]; then
  log "building xmtp-backend (build-bench, Release)"
  if [[ ! -f "$ROOT/build-bench/build.ninja" ]]; then
    cmake -S "$ROOT" -B "$ROOT/build-bench" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DXB_BUILD_TESTS=OFF >"$TMP/cmake.log" 2>&1 || { cat "$TMP/cmake.log" >&2; die "configure failed"; }
  fi
  cmake --build "$ROOT/build-bench" --target xmtp-backend >"$TMP/build.log" 2>&1 ||
    { tail -n 30 "$TMP/build.log" >&2; die "build failed"; }
  binary="$ROOT/build-bench/src/xmtp-backend"
fi
[[ -x "$binary" ]] || die "no server binary at $binary"

# Credentials, made by python3-cryptography: an API key, an ES256 key pair and a JWT valid for an
# hour, and a wrong token of the same shape for the gates.
PYTHONPATH="$ROOT/tests/integration" python3 - "$TMP" <<'PY'
import os, sys, time
import jwks_server
d = sys.argv[1]
key = jwks_server.SigningKey("ES256", "bench")
other = jwks_server.SigningKey("ES256", "bench")
claims = {"exp": int(time.time()) + 3600, "aud": "bench", "iss": "https://bench", "scope": "xmtp"}
open(os.path.join(d, "pem"), "w").write(key.public_pem())
open(os.path.join(d, "jwt"), "w").write(key.token(claims))
open(os.path.join(d, "jwt.bad"), "w").write(other.token(claims))
open(os.path.join(d, "apikey"), "w").write(os.urandom(24).hex())
open(os.path.join(d, "apikey.bad"), "w").write(os.urandom(24).hex())
PY
printf '' | protoc -I "$PROTO_DIR" --encode=xmtp.backend.v1.QueryRequest \
  xmtp/backend/v1/backend.proto >"$TMP/query.pb"
printf '\x00\x00\x00\x00\x00' >"$TMP/body"  # the empty message, framed
[[ ! -s "$TMP/query.pb" ]] || die "an empty QueryRequest should encode to no bytes"

toml() {  # toml MODE PORT
  cat <<EOF
[server]
identifier = "bench.local"
listen = "127.0.0.1:$2"
log_level = "warn"
request_logger = false
[telemetry]
metrics_listen = ""
[database]
url = "sqlite://$TMP/$1.db"
EOF
  case "$1" in
    apikey) printf '[auth]\nenabled = true\n[auth.api_keys]\nbench = "%s"\n' "$(cat "$TMP/apikey")" ;;
    jwt) printf '[auth]\nenabled = true\naudiences = ["bench"]\nissuers = ["https://bench"]\nrequired_scopes = ["xmtp"]\n[[auth.keys]]\nkid = "bench"\nalg = "ES256"\npublic_key = """%s"""\n' "$(cat "$TMP/pem")" ;;
  esac
}
declare -A PORT HEADER BAD SPID
# Auth off is sent the same JWT (ignored), so that the off row pays the same header transport:
# nghttp2's HPACK encoder never indexes `authorization`, so the token crosses the wire and is
# Huffman-decoded on every request, whatever the server does with it.
HEADER[apikey]="authorization: Bearer $(cat "$TMP/apikey")"
HEADER[jwt]="authorization: Bearer $(cat "$TMP/jwt")"
HEADER[off]="${HEADER[jwt]}"
BAD[apikey]="authorization: Bearer $(cat "$TMP/apikey.bad")"
BAD[jwt]="authorization: Bearer $(cat "$TMP/jwt.bad")"
MODES=(off apikey jwt)
for mode in "${MODES[@]}"; do
  port=$(pick_port)
  taskset -c "$SERVER_CPU" "$binary" --config "$(toml "$mode" "$port")" >"$TMP/$mode.log" 2>&1 &
  PIDS+=($!)
  SPID[$mode]=$!
  deadline=$((SECONDS + 15))
  while [[ -z "$(ss -Htln "sport = :$port")" ]]; do
    kill -0 "${PIDS[-1]}" 2>/dev/null || die "$mode server exited: $(tail -n 3 "$TMP/$mode.log")"
    ((SECONDS < deadline)) || die "$mode server did not listen"
    sleep 0.05
  done
  PORT[$mode]=$port
done

# CPU time (utime + stime) of PID so far, in clock ticks.
cpu_ticks() {
  local stat fields
  stat=$(<"/proc/$1/stat")
  read -r -a fields <<<"${stat##*) }"
  echo $((fields[11] + fields[12]))
}
CLK_TCK=$(getconf CLK_TCK)

# gate MODE HEADER WANT: one call; its grpc-status must be WANT.
gate() {
  local out="$TMP/gate.$1"
  timeout 10 nghttp -v -H 'content-type: application/grpc' -H 'te: trailers' -H "$2" \
    -d "$TMP/body" "http://127.0.0.1:${PORT[$1]}/$METHOD" >"$out" 2>&1 || true
  grep -q "grpc-status: $3\$" "$out" || die "gate $1: wanted grpc-status $3, got: $(grep -aE 'grpc-status|grpc-message' "$out" | tr '\n' ' ')"
}
for mode in "${MODES[@]}"; do gate "$mode" "${HEADER[$mode]}" 0; done
gate off "${BAD[jwt]}" 0  # auth off: the header is never read
gate apikey "${BAD[apikey]}" 16
gate jwt "${BAD[jwt]}" 16

cat <<EOF

== configuration
date:        $(date -u +%Y-%m-%dT%H:%M:%SZ)
machine:     $(nproc) CPUs, $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -n 1)
loadavg:     $(cut -d' ' -f1-3 /proc/loadavg) at start (a shared machine: other work competes for both CPUs, so figures are noisy)
repository:  $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo "no commit")
load:        $(h2load --version | head -n 1), taskset -c $LOAD_CPU h2load -t1 -D$duration --warm-up-time=$WARMUP_S -cC -mM -H HEADER -d BODY .../$METHOD
servers:     one binary, three configs, each pinned to CPU $SERVER_CPU; auth off / API key / JWT ES256 (inline key, audience, issuer and scope checks on)
headers:     off: the JWT, ignored ($(wc -c <"$TMP/jwt") bytes); api key: $(wc -c <"$TMP/apikey") bytes; jwt: the JWT
request:     QueryRequest{} (no topics: OK without touching the store)
repeats:     $repeats per case (median shown), modes rotated within each repeat
gates:       good credential -> grpc-status 0; wrong one -> 16 (auth off: 0)
EOF

: >"$TMP/results"
for ((rep = 1; rep <= repeats; rep++)); do
  for cm in "${CASES[@]}"; do
    read -r c m <<<"$cm"
    for mode in "${MODES[@]}"; do
      cpu0=$(cpu_ticks "${SPID[$mode]}")
      run_tracked taskset -c "$LOAD_CPU" h2load -t1 -D"$duration" --warm-up-time="$WARMUP_S" \
        -c"$c" -m"$m" -H 'content-type: application/grpc' -H 'te: trailers' \
        -H "${HEADER[$mode]}" -d "$TMP/body" "http://127.0.0.1:${PORT[$mode]}/$METHOD" \
        >"$TMP/h2load.out" 2>&1 || log "h2load exited non-zero: $mode c=$c m=$m"
      cpu1=$(cpu_ticks "${SPID[$mode]}")
      grep -q ' 0 failed, 0 errored, 0 timeout' "$TMP/h2load.out" ||
        log "run with failures: $mode c=$c m=$m: $(grep -E '^requests:' "$TMP/h2load.out")"
      # Server CPU per request (warm-up included in both the ticks and the count), in us.
      awk -v mode="$mode" -v c="$c" -v m="$m" -v ticks=$((cpu1 - cpu0)) -v hz="$CLK_TCK" '
        /^finished in/ { rps = $4 + 0 }
        /^requests:/ { total = $2 }
        END { printf "%s %s %s %.1f %d %.1f\n", mode, c, m, rps, total,
              (total > 0 ? 1e6 * ticks / hz / total : 0) }' "$TMP/h2load.out" >>"$TMP/results"
    done
  done
done

# table COLUMN TITLE: medians of a results column per case and mode, relative to auth off.
table() {
  echo
  echo "== $2, median of $repeats (relative to auth off)"
  printf '%-6s %-6s %14s %18s %18s\n' "c" "m" "off" "api key" "jwt es256"
  local cm c m mode
  for cm in "${CASES[@]}"; do
    read -r c m <<<"$cm"
    declare -A MED=()
    for mode in "${MODES[@]}"; do
      MED[$mode]=$(awk -v mode="$mode" -v c="$c" -v m="$m" -v col="$1" \
        '$1 == mode && $2 == c && $3 == m { print $col }' "$TMP/results" | median)
    done
    printf '%-6s %-6s %14s %18s %18s\n' "$c" "$m" "${MED[off]}" \
      "${MED[apikey]} ($(ratio "${MED[apikey]}" "${MED[off]}"))" \
      "${MED[jwt]} ($(ratio "${MED[jwt]}" "${MED[off]}"))"
  done
}
table 4 "throughput, req/s"
table 6 "server CPU per request, us"
