#!/usr/bin/env bash
# bench/attach.sh: what a CreateUpload costs (issue 31), beside GetConfiguration in the same run
# and the same server process.
#
#   bench/attach.sh [--quick] [--repeats N] [--duration S] [--binary PATH]
#
# One server (default binary build/src/xmtp-backend: run scripts/build first) with [attachments]:
# static credentials and an endpoint on 127.0.0.1 that nothing listens on (CreateUpload only
# signs), auth on with an API key. Both methods are sent that key (GetConfiguration is public and
# never reads it; the header still crosses the wire). Server pinned to CPU 1, h2load to CPU 0, at
# -c10 -m10. Gates first: both calls get grpc-status 0 and the CreateUpload response decodes to a
# signed PUT for the digest sent; a wrong key gets 16. Then each method N times (default 3) in
# rotation; medians of req/s and server CPU per request, and CreateUpload / GetConfiguration
# paired per repeat (goal: rate >= 0.5x). Nothing here asserts a timing.
set -euo pipefail
export LC_ALL=C

readonly ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
readonly PROTO_DIR="$ROOT/proto"
readonly PROTO=xmtp/backend/v1/backend.proto
readonly SERVER_CPU=1
readonly LOAD_CPU=0
readonly WARMUP_S=1
readonly CLIENTS=10
readonly STREAMS=10
readonly GOAL=0.5
readonly CONTENT_LENGTH=1234
readonly PACKAGES=(nghttp2-client protobuf-compiler)
declare -A METHOD=(
  [upload]=xmtp.backend.v1.AttachmentService/CreateUpload
  [config]=xmtp.backend.v1.ConfigurationService/GetConfiguration
)
readonly CASES=(upload config)

ARGS=("$@")
repeats=3
duration=5
binary="$ROOT/build/src/xmtp-backend"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --quick) repeats=1; duration=2 ;;
    --repeats) repeats="$2"; shift ;;
    --duration) duration="$2"; shift ;;
    --binary) binary="$2"; shift ;;
    -h|--help) sed -n '2,15p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
  shift
done
[[ "$repeats" =~ ^[1-9][0-9]*$ ]] || { echo "--repeats wants a positive integer" >&2; exit 2; }
[[ "$duration" =~ ^[1-9][0-9]*$ ]] || { echo "--duration wants a positive integer" >&2; exit 2; }

log() { printf '[attach.sh] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"

TMP="$(mktemp -d /tmp/xb-bench-attach.XXXXXX)"
SERVER_PID=""
LOAD_PID=""
cleanup() {
  [[ -z "$LOAD_PID" ]] || kill -TERM "$LOAD_PID" 2>/dev/null || true
  stop_pid "$SERVER_PID" 50
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "command: $0 ${ARGS[*]}"
ensure_packages
[[ -x "$binary" ]] || die "no server binary at $binary (scripts/build, or --binary PATH)"

# The request bodies, encoded by protoc (not by our code) and framed: 1 flag byte, 4-byte
# big-endian length. The digest is the SHA-256 of a fixed string, written as text-format escapes.
frame() {  # frame IN OUT
  local n
  n=$(stat -c %s "$1")
  {
    # shellcheck disable=SC2059  # the format is the four length bytes as octal escapes
    printf "$(printf '\\%03o' 0 $((n >> 24 & 255)) $((n >> 16 & 255)) $((n >> 8 & 255)) $((n & 255)))"
    cat "$1"
  } >"$2"
}
DIGEST_HEX=$(printf 'xmtp-backend attach bench' | sha256sum | cut -c1-64)
printf 'content_digest: "%s"\ncontent_length: %d\n' "$(sed 's/../\\x&/g' <<<"$DIGEST_HEX")" \
  "$CONTENT_LENGTH" | protoc -I "$PROTO_DIR" --encode=xmtp.backend.v1.CreateUploadRequest \
  "$PROTO" >"$TMP/upload.pb"
# field 1, 32 bytes (0a 20 + digest), field 2 varint 1234 (10 d2 09)
[[ "$(od -An -tx1 -v "$TMP/upload.pb" | tr -d ' \n')" == "0a20${DIGEST_HEX}10d209" ]] ||
  die "CreateUploadRequest did not encode as expected"
frame "$TMP/upload.pb" "$TMP/upload.body"
printf '' | protoc -I "$PROTO_DIR" --encode=xmtp.backend.v1.GetConfigurationRequest \
  "$PROTO" >"$TMP/config.pb"
[[ ! -s "$TMP/config.pb" ]] || die "an empty GetConfigurationRequest should encode to no bytes"
frame "$TMP/config.pb" "$TMP/config.body"

API_KEY=$(od -An -tx1 -N24 /dev/urandom | tr -d ' \n')
BAD_KEY=$(od -An -tx1 -N24 /dev/urandom | tr -d ' \n')
HEADER="authorization: Bearer $API_KEY"
# Made-up static credentials (nothing is sent anywhere): the shape of an IAM user's key pair.
readonly ACCESS_KEY_ID=AKIAXMTPBENCH0000001
readonly SECRET_ACCESS_KEY=benchBenchBenchBenchBenchBenchBenchBench
readonly S3_ENDPOINT=http://127.0.0.1:9
PORT=$(pick_port)
toml() {
  cat <<EOF
[server]
identifier = "bench.local"
listen = "127.0.0.1:$PORT"
log_level = "warn"
request_logger = false
[telemetry]
metrics_listen = ""
[database]
url = "sqlite://$TMP/xmtp.db"
[auth]
enabled = true
[auth.api_keys]
bench = "$API_KEY"
[attachments]
base_url = "https://files.example.com/attachments"
[attachments.target.S3]
endpoint = "$S3_ENDPOINT"
region = "us-east-1"
bucket = "attachments"
key_prefix = ""
presign_ttl_seconds = 900
[attachments.target.S3.credentials]
kind = "static"
access_key_id = "$ACCESS_KEY_ID"
secret_access_key = "$SECRET_ACCESS_KEY"
EOF
}
taskset -c "$SERVER_CPU" "$binary" --config "$(toml)" >"$TMP/server.log" 2>&1 &
SERVER_PID=$!
deadline=$((SECONDS + 15))
while [[ -z "$(ss -Htln "sport = :$PORT")" ]]; do
  kill -0 "$SERVER_PID" 2>/dev/null || die "server exited: $(tail -n 3 "$TMP/server.log")"
  ((SECONDS < deadline)) || die "server did not listen"
  sleep 0.05
done

# CPU time (utime + stime) of PID so far, in clock ticks.
cpu_ticks() {
  local stat fields
  stat=$(<"/proc/$1/stat")
  read -r -a fields <<<"${stat##*) }"
  echo $((fields[11] + fields[12]))
}
CLK_TCK=$(getconf CLK_TCK)

# call CASE KEY OUT: one call with nghttp; frames and headers in OUT, the response body in OUT.body.
call() {
  local url="http://127.0.0.1:$PORT/${METHOD[$1]}"
  local -a args=(-H 'content-type: application/grpc' -H 'te: trailers'
                 -H "authorization: Bearer $2" -d "$TMP/$1.body" "$url")
  timeout 10 nghttp -v "${args[@]}" >"$3" 2>&1 || true
  timeout 10 nghttp "${args[@]}" >"$3.body" 2>/dev/null || true
}
# gate CASE KEY WANT: one call; its grpc-status must be WANT.
gate() {
  local out="$TMP/gate.$1.$3"
  call "$1" "$2" "$out"
  grep -q "grpc-status: $3\$" "$out" ||
    die "gate $1: wanted grpc-status $3, got: $(grep -aE 'grpc-status|grpc-message' "$out" | tr '\n' ' ')"
}
# decode TYPE FILE: the text form of a framed response message.
decode() {
  tail -c +6 "$2" | protoc -I "$PROTO_DIR" --decode="xmtp.backend.v1.$1" "$PROTO"
}
gate upload "$API_KEY" 0
gate config "$API_KEY" 0
gate upload "$BAD_KEY" 16  # auth is on: CreateUpload reads the key
gate config "$BAD_KEY" 0   # a public path: the key is never read
decode CreateUploadResponse "$TMP/gate.upload.0.body" >"$TMP/upload.txt" ||
  die "gate upload: the response does not decode as CreateUploadResponse"
want_url="$S3_ENDPOINT/attachments/$DIGEST_HEX?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=$ACCESS_KEY_ID%2F"
if ! { grep -qF "method: \"PUT\"" "$TMP/upload.txt" && grep -qF "url: \"$want_url" "$TMP/upload.txt" &&
  grep -qE 'X-Amz-Signature=[0-9a-f]{64}"$' "$TMP/upload.txt" &&
  grep -qF "value: \"$CONTENT_LENGTH\"" "$TMP/upload.txt" &&
  grep -qF 'expires_in_seconds: 900' "$TMP/upload.txt"; }; then
  die "gate upload: not the presigned PUT of the digest sent: $(tr '\n' ' ' <"$TMP/upload.txt")"
fi
decode GetConfigurationResponse "$TMP/gate.config.0.body" | grep -q 'base_url: "https://files.example.com/attachments"' ||
  die "gate config: the response does not publish the attachments section"

cat <<EOF

== configuration
date:        $(date -u +%Y-%m-%dT%H:%M:%SZ)
machine:     $(nproc) CPUs, $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -n 1), $(uname -r)
loadavg:     $(cut -d' ' -f1-3 /proc/loadavg) at start (a shared machine: other work competes for both CPUs, so figures are noisy)
repository:  $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo "no commit")$(git -C "$ROOT" diff --quiet HEAD -- src 2>/dev/null || echo " (src/ has uncommitted changes)")
binary:      $binary
load:        $(h2load --version | head -n 1), taskset -c $LOAD_CPU h2load -t1 -D$duration --warm-up-time=$WARMUP_S -c$CLIENTS -m$STREAMS -H 'authorization: Bearer KEY' -d BODY .../METHOD
server:      one process, pinned to CPU $SERVER_CPU ($(find "/proc/$SERVER_PID/task" -mindepth 1 -maxdepth 1 | wc -l) threads), serving both methods; auth on (API key,
             $((${#API_KEY})) characters), sent to both methods; GetConfiguration is public and never reads it
attachments: static credentials (no session token), endpoint $S3_ENDPOINT (nothing listens: CreateUpload only signs), ttl 900 s
requests:    CreateUpload: CreateUploadRequest{content_digest: 32 bytes, content_length: $CONTENT_LENGTH} ($(stat -c %s "$TMP/upload.pb") bytes, protoc --encode)
             GetConfiguration: GetConfigurationRequest{} (0 bytes)
responses:   CreateUpload $(($(stat -c %s "$TMP/gate.upload.0.body") - 5)) bytes, GetConfiguration $(($(stat -c %s "$TMP/gate.config.0.body") - 5)) bytes (messages without the frame)
repeats:     $repeats per method (median shown), the two methods rotated within each repeat
cpu:         utime + stime of the server process (/proc/PID/stat, every thread) from the end of h2load's warm-up to its exit, / the requests h2load counted
gates:       good key -> grpc-status 0 for both (CreateUpload: a signed PUT of the digest sent); wrong key -> 16 (CreateUpload), 0 (GetConfiguration)
EOF

# run_case CASE REP: one h2load run; appends "case rps requests us_per_request cpu_pct rep" to
# $TMP/results.
run_case() {
  local out="$TMP/h2load.out" cpu0 cpu1 t0 t1
  taskset -c "$LOAD_CPU" h2load -t1 -D"$duration" --warm-up-time="$WARMUP_S" -c"$CLIENTS" \
    -m"$STREAMS" -H 'content-type: application/grpc' -H 'te: trailers' -H "$HEADER" \
    -d "$TMP/$1.body" "http://127.0.0.1:$PORT/${METHOD[$1]}" >"$out" 2>&1 &
  LOAD_PID=$!
  # Sampled after the warm-up: h2load counts only the requests of the measured interval.
  sleep "$WARMUP_S"
  cpu0=$(cpu_ticks "$SERVER_PID")
  t0=$EPOCHREALTIME
  wait "$LOAD_PID" || log "h2load exited non-zero: $1"
  LOAD_PID=""
  cpu1=$(cpu_ticks "$SERVER_PID")
  t1=$EPOCHREALTIME
  grep -q ' 0 failed, 0 errored, 0 timeout' "$out" ||
    log "run with failures: $1: $(grep -E '^requests:' "$out")"
  awk -v name="$1" -v rep="$2" -v ticks=$((cpu1 - cpu0)) -v hz="$CLK_TCK" -v t0="$t0" -v t1="$t1" '
    /^finished in/ { rps = $4 + 0 }
    /^requests:/ { total = $2 }
    END { printf "%s %.1f %d %.2f %.0f %d\n", name, rps, total,
          (total > 0 ? 1e6 * ticks / hz / total : 0), 100 * ticks / hz / (t1 - t0), rep }
  ' "$out" >>"$TMP/results"
}

: >"$TMP/results"
for ((rep = 1; rep <= repeats; rep++)); do
  # The order alternates, so neither method always runs first after an idle moment.
  if ((rep % 2)); then order=("${CASES[@]}"); else order=(config upload); fi
  for name in "${order[@]}"; do
    kill -0 "$SERVER_PID" 2>/dev/null || die "server exited: $(tail -n 3 "$TMP/server.log")"
    run_case "$name" "$rep"
  done
done

med() { awk -v name="$1" -v col="$2" '$1 == name { print $col }' "$TMP/results" | median; }
# paired COL: the median over repeats of that repeat's CreateUpload / GetConfiguration in COL (the
# two runs of a repeat are seconds apart, so the pair shares the machine's slower drifts).
paired() {
  awk -v col="$1" '{ v[$6 " " $1] = $col; reps[$6] = 1 }
    END { for (r in reps) if (v[r " config"] + 0 > 0) printf "%.3f\n", v[r " upload"] / v[r " config"] }
  ' "$TMP/results" | median
}
declare -A RPS CPU PCT
for name in "${CASES[@]}"; do
  RPS[$name]=$(med "$name" 2)
  CPU[$name]=$(med "$name" 4)
  PCT[$name]=$(med "$name" 5)
done
echo
echo "== each run: method req/s requests cpu_us_per_request server_cpu% repeat"
cat "$TMP/results"
echo
echo "== c=$CLIENTS m=$STREAMS, median of $repeats"
printf '%-18s %10s %12s %12s\n' "method" "req/s" "CPU us/req" "server cpu%"
printf '%-18s %10s %12s %12s\n' "CreateUpload" "${RPS[upload]}" "${CPU[upload]}" "${PCT[upload]}"
printf '%-18s %10s %12s %12s\n' "GetConfiguration" "${RPS[config]}" "${CPU[config]}" "${PCT[config]}"
printf '%-18s %10s %12s\n' "ratio of medians" "$(ratio "${RPS[upload]}" "${RPS[config]}")" \
  "$(ratio "${CPU[upload]}" "${CPU[config]}")"
paired_rps=$(paired 2)
paired_cpu=$(paired 4)
printf '%-18s %10s %12s\n' "paired ratio" "$paired_rps" "$paired_cpu"
# With the server's CPU the limit, the rate ratio tends to the inverse of the CPU ratio; a rate
# ratio above that means the load generator (or the shared machine) held both rates back.
met() { awk -v r="$1" -v g="$GOAL" 'BEGIN { print (r != "nan" && r + 0 >= g) ? "met" : "not met" }'; }
echo "goal:  CreateUpload req/s >= ${GOAL}x GetConfiguration's: $(met "$paired_rps") (paired req/s ratio $paired_rps);"
echo "       on a saturated server core, 1 / paired CPU ratio = $(awk -v c="$paired_cpu" 'BEGIN { printf "%.2f", (c > 0 ? 1 / c : 0) }'): $(met "$(awk -v c="$paired_cpu" 'BEGIN { print (c > 0 ? 1 / c : 0) }')")"
if [[ -s "$TMP/server.log" ]]; then
  echo
  echo "== the server logged (log_level warn):"
  head -n 20 "$TMP/server.log"
fi
