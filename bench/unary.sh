#!/usr/bin/env bash
# bench/unary.sh: unary gRPC throughput of xmtp-backend beside two reference servers built from
# Debian packages (gRPC C++ 1.51 callback API, grpc-go 1.33), measured with h2load on one machine
# in one run (shared/BENCHMARKS.md). See bench/README.md.
#
#   bench/unary.sh [--quick] [--repeats N] [--duration S] [--binary PATH]
#
# Server under test pinned to CPU 1, h2load to CPU 0. Every case is gated first (one call with
# nghttp must end with grpc-status 0), then run N times (default 3); the table shows medians.
# Nothing here asserts a timing: the script exits 0 when the runs completed.
set -euo pipefail
export LC_ALL=C

readonly ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
readonly PROTO_DIR="$ROOT/proto"
readonly SERVER_CPU=1
readonly LOAD_CPU=0
readonly WARMUP_S=1
readonly CASES=("1 1" "10 10" "100 10")  # (c, m) pairs
readonly METHODS=(grpc.health.v1.Health/Check xmtp.backend.v1.ConfigurationService/GetConfiguration)
readonly PACKAGES=(g++ pkg-config curl protobuf-compiler libgrpc++-dev protobuf-compiler-grpc
                   golang-go golang-google-grpc-dev golang-google-protobuf-dev protoc-gen-go
                   protoc-gen-go-grpc nghttp2-client)

ARGS=("$@")
repeats=3
duration=5
binary=""
usage() {
  sed -n '2,10p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
}
while [[ $# -gt 0 ]]; do
  case "$1" in
    --quick) repeats=1; duration=2 ;;
    --repeats) repeats="$2"; shift ;;
    --duration) duration="$2"; shift ;;
    --binary) binary="$2"; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "unknown argument: $1" >&2; usage >&2; exit 2 ;;
  esac
  shift
done
[[ "$repeats" =~ ^[1-9][0-9]*$ ]] || { echo "--repeats wants a positive integer" >&2; exit 2; }
[[ "$duration" =~ ^[1-9][0-9]*$ ]] || { echo "--duration wants whole seconds" >&2; exit 2; }

log() { printf '[unary.sh] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"

# ---------------------------------------------------------------------------------------------
# Temp dir and process cleanup: every server and h2load we start is killed on exit.
# ---------------------------------------------------------------------------------------------
TMP="$(mktemp -d /tmp/xb-bench.XXXXXX)"
PIDS=()      # servers, alive until cleanup
LOAD_PID=""  # the running h2load, if any
cleanup() {
  local pid
  if [[ -n "$LOAD_PID" ]]; then
    kill -TERM "$LOAD_PID" 2>/dev/null || true
    wait "$LOAD_PID" 2>/dev/null || true
  fi
  for pid in "${PIDS[@]}"; do
    kill -TERM "$pid" 2>/dev/null || true
  done
  for pid in "${PIDS[@]}"; do
    for _ in $(seq 50); do
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

# Writes one gRPC frame (flag 0, 4-byte big-endian length, payload) from file $1 to file $2.
write_frame() {
  local n
  n=$(stat -c %s "$1")
  printf "$(printf '\\x00\\x%02x\\x%02x\\x%02x\\x%02x' $((n >> 24 & 255)) $((n >> 16 & 255)) \
    $((n >> 8 & 255)) $((n & 255)))" >"$2"
  cat "$1" >>"$2"
}

# Prints the payload of the first frame in file $1 (a gRPC or gRPC-Web response body).
first_frame_payload() {
  local b
  read -r -a b < <(head -c 5 "$1" | od -An -tu1)
  [[ ${#b[@]} -eq 5 && "${b[0]}" -eq 0 ]] || return 1
  tail -c +6 "$1" | head -c $(((b[1] << 24) | (b[2] << 16) | (b[3] << 8) | b[4]))
}

untrack() {
  local keep=() p
  for p in "${PIDS[@]}"; do
    [[ "$p" == "$1" ]] || keep+=("$p")
  done
  PIDS=("${keep[@]}")
}

# start_server NAME: runs launch_NAME PORT (which starts the server in the background) on a
# free port until the server listens; tries 5 ports. Sets PID[NAME] and PORT[NAME].
start_server() {
  local name=$1 try port deadline pid
  for try in 1 2 3 4 5; do
    port=$(pick_port)
    "launch_$name" "$port" >"$TMP/$name.log" 2>&1 &
    pid=$!
    PIDS+=("$pid")
    deadline=$((SECONDS + 10))
    while [[ -z "$(ss -Htln "sport = :$port")" ]]; do
      if ! kill -0 "$pid" 2>/dev/null; then
        log "$name exited before listening on $port (try $try): $(tail -n 2 "$TMP/$name.log" | tr '\n' ' ')"
        wait "$pid" || true
        untrack "$pid"
        continue 2
      fi
      ((SECONDS < deadline)) || die "$name did not listen on 127.0.0.1:$port within 10 s"
      sleep 0.05
    done
    PID[$name]=$pid
    PORT[$name]=$port
    return
  done
  die "$name could not start"
}

# CPU time (utime + stime) of PID so far, in clock ticks (CLK_TCK per second). Pure bash: the
# load generator's CPU is read from this shell's children times, which must not include tools.
cpu_ticks() {
  local stat fields
  stat=$(<"/proc/$1/stat")
  read -r -a fields <<<"${stat##*) }"  # after "(comm) ": field 3 (state) is index 0
  echo $((fields[11] + fields[12]))
}

# ---------------------------------------------------------------------------------------------
# Setup
# ---------------------------------------------------------------------------------------------
echo "command: $0 ${ARGS[*]}"
ensure_packages
CLK_TCK=$(getconf CLK_TCK)

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

mapfile -t PROTOS < <(proto_closure grpc/health/v1/health.proto xmtp/backend/v1/backend.proto)

log "building the gRPC C++ peer"
CPP="$TMP/grpc_cpp"
mkdir -p "$CPP/gen" "$CPP/obj"
protoc -I "$PROTO_DIR" --cpp_out="$CPP/gen" "${PROTOS[@]}"
protoc -I "$PROTO_DIR" --grpc_out="$CPP/gen" --plugin=protoc-gen-grpc="$(command -v grpc_cpp_plugin)" \
  grpc/health/v1/health.proto xmtp/backend/v1/backend.proto
read -r -a GRPCXX_FLAGS <<<"$(pkg-config --cflags grpc++ protobuf)"
read -r -a GRPCXX_LIBS <<<"$(pkg-config --libs grpc++ protobuf)"
export CPP
export GRPCXX_CFLAGS="${GRPCXX_FLAGS[*]}"
# Two compile jobs (the machine has two cores); each prints nothing unless it fails.
{ find "$CPP/gen" -name '*.cc'; echo "$ROOT/bench/peers/grpc_cpp/server.cc"; } |
  xargs -P 2 -I{} sh -c 'o="$CPP/obj/$(echo "{}" | tr / _).o"; g++ -std=c++17 -O2 -pthread \
    -I"$CPP/gen" $GRPCXX_CFLAGS -c "{}" -o "$o"' ||
  die "gRPC C++ peer: compile failed"
g++ -O2 -pthread "$CPP"/obj/*.o -o "$CPP/server" "${GRPCXX_LIBS[@]}" || die "gRPC C++ peer: link failed"

log "building the grpc-go peer"
GO="$TMP/grpc_go"
build_go_peer "$ROOT/bench/peers/grpc_go/main.go" "$GO" "$GO/server" "${PROTOS[@]}" ||
  die "grpc-go peer: build failed"

# Request bodies: both requests are empty messages, encoded by protoc from the real schema.
printf '' | protoc -I "$PROTO_DIR" --encode=grpc.health.v1.HealthCheckRequest \
  grpc/health/v1/health.proto >"$TMP/health.pb"
printf '' | protoc -I "$PROTO_DIR" --encode=xmtp.backend.v1.GetConfigurationRequest \
  xmtp/backend/v1/backend.proto >"$TMP/config.pb"
write_frame "$TMP/health.pb" "$TMP/grpc.health.v1.Health_Check.body"
write_frame "$TMP/config.pb" "$TMP/xmtp.backend.v1.ConfigurationService_GetConfiguration.body"
body_of() { echo "$TMP/${1//\//_}.body"; }

# ---------------------------------------------------------------------------------------------
# Servers
# ---------------------------------------------------------------------------------------------
declare -A PORT PID
ours_toml() {
  cat <<EOF
[server]
identifier = "bench.local"
listen = "127.0.0.1:$1"
log_level = "warn"
request_logger = false
[telemetry]
metrics_listen = ""
[database]
url = "sqlite://$TMP/xmtp.db"
EOF
}
launch_ours() { exec taskset -c "$SERVER_CPU" "$binary" --config "$(ours_toml "$1")"; }
launch_grpc_cpp() { exec taskset -c "$SERVER_CPU" "$CPP/server" "127.0.0.1:$1" "$CONFIG_BIN"; }
launch_grpc_go() {
  export GOMAXPROCS=1  # in the launching subshell only
  exec taskset -c "$SERVER_CPU" "$GO/server" "127.0.0.1:$1" "$CONFIG_BIN"
}
CONFIG_BIN="$TMP/msg.ours.xmtp.backend.v1.ConfigurationService_GetConfiguration"
start_server ours

# gate SERVER METHOD: one call with nghttp; 0 when it ended with grpc-status 0. Saves the raw
# response body as $TMP/resp.SERVER.METHOD.
gate() {
  local url="http://127.0.0.1:${PORT[$1]}/$2" tag="$1.${2//\//_}"
  if ! timeout 10 nghttp -v -H 'content-type: application/grpc' -H 'te: trailers' \
      -d "$(body_of "$2")" "$url" >"$TMP/gate.$tag" 2>&1; then
    log "GATE FAIL $1 $2: nghttp failed: $(tail -n 3 "$TMP/gate.$tag")"
    return 1
  fi
  if ! grep -q 'grpc-status: 0$' "$TMP/gate.$tag"; then
    log "GATE FAIL $1 $2: no grpc-status 0; got: $(grep -aE ':status|grpc-status|grpc-message' \
      "$TMP/gate.$tag" | sed 's/^ *\[[^]]*\] //' | tr '\n' ' ')"
    return 1
  fi
  timeout 10 nghttp -H 'content-type: application/grpc' -H 'te: trailers' -d "$(body_of "$2")" \
    "$url" >"$TMP/resp.$tag" 2>/dev/null
  first_frame_payload "$TMP/resp.$tag" >"$TMP/msg.$tag" || {
    log "GATE FAIL $1 $2: response body is not one gRPC frame"
    return 1
  }
}

# gate_web METHOD: one gRPC-Web (binary) call over HTTP/1.1 to ours; needs status 200, a
# trailer frame with grpc-status 0, and the same message bytes as over HTTP/2.
gate_web() {
  local tag="ours.${1//\//_}"
  if ! curl -sS --http1.1 --max-time 10 -H 'content-type: application/grpc-web+proto' \
      --data-binary @"$(body_of "$1")" -D "$TMP/web.h.$tag" -o "$TMP/web.b.$tag" \
      "http://127.0.0.1:${PORT[ours]}/$1" 2>"$TMP/web.err.$tag"; then
    log "GATE FAIL ours-web $1: curl: $(cat "$TMP/web.err.$tag")"
    return 1
  fi
  if ! head -n 1 "$TMP/web.h.$tag" | grep -q ' 200'; then
    log "GATE FAIL ours-web $1: $(head -n 1 "$TMP/web.h.$tag")"
    return 1
  fi
  if ! grep -aq $'grpc-status: *0\r' "$TMP/web.b.$tag"; then
    log "GATE FAIL ours-web $1: no grpc-status 0 trailer frame"
    return 1
  fi
  if ! first_frame_payload "$TMP/web.b.$tag" | cmp -s - "$TMP/msg.$tag"; then
    log "GATE FAIL ours-web $1: message differs from the HTTP/2 response"
    return 1
  fi
}

declare -A OK  # OK[server|method]=1 when the case passed its gate
for m in "${METHODS[@]}"; do
  if gate ours "$m"; then OK["ours|$m"]=1; fi
done
[[ -n "${OK[ours|xmtp.backend.v1.ConfigurationService/GetConfiguration]:-}" ]] ||
  die "our GetConfiguration failed its gate: the peers have no response to serve"
for m in "${METHODS[@]}"; do
  if [[ -n "${OK[ours|$m]:-}" ]] && gate_web "$m"; then OK["ours-web|$m"]=1; fi
done

start_server grpc_cpp
start_server grpc_go

# The peers must answer each method with our exact message bytes.
for s in grpc_cpp grpc_go; do
  for m in "${METHODS[@]}"; do
    gate "$s" "$m" || continue
    if ! cmp -s "$TMP/msg.$s.${m//\//_}" "$TMP/msg.ours.${m//\//_}"; then
      log "GATE FAIL $s $m: response bytes differ from ours"
      continue
    fi
    OK["$s|$m"]=1
  done
done

# ---------------------------------------------------------------------------------------------
# Configuration
# ---------------------------------------------------------------------------------------------
thread_count() { ls "/proc/$1/task" | wc -l; }
cat <<EOF

== configuration
date:        $(date -u +%Y-%m-%dT%H:%M:%SZ)
machine:     $(nproc) CPUs, $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -n 1), $(uname -r)
loadavg:     $(cut -d' ' -f1-3 /proc/loadavg) at start (other work on this shared machine competes for both CPUs)
repository:  $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo "no commit")$(git -C "$ROOT" diff --quiet HEAD -- src 2>/dev/null || echo " (src/ has uncommitted changes)")
load:        $(h2load --version | head -n 1), pinned to CPU $LOAD_CPU: taskset -c $LOAD_CPU h2load -t1 -D$duration --warm-up-time=$WARMUP_S -cC -mM -H 'content-type: application/grpc' -H 'te: trailers' -d BODY URL
             gRPC-Web rows add --h1 and content-type application/grpc-web+proto (m > 1 there = HTTP/1.1 pipelining)
repeats:     $repeats per case (median shown); cases (c,m): ${CASES[*]/%/;}
servers:     all pinned to CPU $SERVER_CPU, started once, measured one at a time in turn
  ours       $binary (one worker: affinity mask = 1 CPU; $(thread_count "${PID[ours]}") threads)
  grpc_cpp   gRPC C++ $(pkg-config --modversion grpc++) callback API, protobuf $(pkg-config --modversion protobuf), g++ -O2 ($(thread_count "${PID[grpc_cpp]}") threads; the callback executor's size is not configurable)
  grpc_go    grpc-go $(sed -n 's/^const Version = "\(.*\)"/\1/p' /usr/share/gocode/src/google.golang.org/grpc/version.go), $(go version | cut -d' ' -f3), GOMAXPROCS=1 ($(thread_count "${PID[grpc_go]}") threads)
  (peers do not speak gRPC-Web: the gRPC-Web rows are ours only)
request:     both methods: an empty message, framed = 00 00 00 00 00
response:    GetConfiguration is $(stat -c %s "$CONFIG_BIN") bytes, identical from all three servers:
$(protoc -I "$PROTO_DIR" --decode=xmtp.backend.v1.GetConfigurationResponse \
  xmtp/backend/v1/backend.proto <"$CONFIG_BIN" | tr '\n' ' ' | sed 's/  */ /g' | fold -w 96 | sed 's/^/             /')
our config:
$(ours_toml "${PORT[ours]}" | sed 's/^/             /')
gates:       $(for k in "${!OK[@]}"; do echo -n "${k%%|*}:${k#*|} "; done | tr ' ' '\n' | sort | tr '\n' ' ' | sed 's/grpc.health.v1.Health\/Check/Check/g; s/xmtp.backend.v1.ConfigurationService\/GetConfiguration/GetConfiguration/g')
EOF

# ---------------------------------------------------------------------------------------------
# Load
# ---------------------------------------------------------------------------------------------
# run_case SERVER MODE METHOD C M REP: one h2load run; appends a line to $TMP/results.
# MODE is h2 (gRPC over HTTP/2) or web (gRPC-Web binary over HTTP/1.1).
run_case() {
  local server=$1 mode=$2 method=$3 c=$4 m=$5 rep=$6 target=$1
  [[ "$mode" == web ]] && target=ours
  local pid=${PID[$target]} out="$TMP/h2load.out"
  local args=(-t1 -D"$duration" --warm-up-time="$WARMUP_S" -c"$c" -m"$m" -d "$(body_of "$method")")
  if [[ "$mode" == web ]]; then
    args+=(--h1 -H 'content-type: application/grpc-web+proto')
  else
    args+=(-H 'content-type: application/grpc' -H 'te: trailers')
  fi
  times >"$TMP/times.before"  # children CPU so far: the load generator's is the difference
  local start=$EPOCHREALTIME
  taskset -c "$LOAD_CPU" h2load "${args[@]}" "http://127.0.0.1:${PORT[$target]}/$method" \
    >"$out" 2>&1 &
  LOAD_PID=$!
  # CPU is sampled after the warm-up, so it covers the measured interval (+ h2load's shutdown).
  sleep "$WARMUP_S"
  local cpu0 cpu1
  cpu0=$(cpu_ticks "$pid")
  wait "$LOAD_PID" || log "h2load exited non-zero: $server $mode $method c=$c m=$m"
  LOAD_PID=""
  cpu1=$(cpu_ticks "$pid")
  times >"$TMP/times.after"
  local wall load_pct
  wall=$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { print b - a }')
  # `times` prints "XmY.YYYs XmY.YYYs" (user, system) for the shell, then for its children.
  load_pct=$(awk -v wall="$wall" '
    function s(t) { split(t, p, "m"); sub(/s$/, "", p[2]); return p[1] * 60 + p[2] }
    FNR == 2 { v = s($1) + s($2); if (FILENAME ~ /before/) a = v; else b = v }
    END { printf "%.0f", 100 * (b - a) / wall }' "$TMP/times.before" "$TMP/times.after")
  kill -0 "$pid" 2>/dev/null || die "$target died during the load (log: $(tail -n 5 "$TMP/$target.log"))"
  awk -v server="$server" -v mode="$mode" -v method="${method##*/}" -v c="$c" -v m="$m" \
    -v rep="$rep" -v cpu="$(awk -v a="$cpu0" -v b="$cpu1" -v hz="$CLK_TCK" 'BEGIN { print (b - a) / hz }')" \
    -v load="$load_pct" '
    function us(v) {
      if (v ~ /us$/) { sub(/us$/, "", v); return v + 0 }
      if (v ~ /ms$/) { sub(/ms$/, "", v); return v * 1000 }
      if (v ~ /s$/) { sub(/s$/, "", v); return v * 1000000 }
      return -1
    }
    /^finished in/ { rps = $4 + 0 }
    /^requests:/ { total = $2; ok = $8; failed = $10; errored = $12; timeout = $14 }
    /^time for request:/ { mean = us($6); max = us($5) }
    END {
      if (ok == "") { ok = 0; failed = -1 }
      per_cpu = cpu > 0 ? ok / cpu : 0
      printf "%s %s %s %s %s %s %.2f %.1f %.1f %d %d %.3f %.1f %d\n", server, mode, method, c, m,
        rep, rps, mean, max, ok, failed + errored + timeout, cpu, per_cpu, load
    }' "$out" >>"$TMP/results"
  if ! grep -q ' 0 failed, 0 errored, 0 timeout' "$out"; then
    log "run with failures: $server $mode $method c=$c m=$m: $(grep -E '^(requests|status codes):' "$out" | tr '\n' ' ')"
  fi
}

SERVERS=(ours grpc_cpp grpc_go)
: >"$TMP/results"
total_runs=0
for m in "${METHODS[@]}"; do
  for s in "${SERVERS[@]}" ours-web; do
    if [[ -n "${OK[$s|$m]:-}" ]]; then
      total_runs=$((total_runs + ${#CASES[@]} * repeats))
    fi
  done
done
log "load: $total_runs runs of ${duration}+${WARMUP_S} s"
# Repeats outermost and servers innermost, so each server sees the same machine state in turn.
for ((rep = 1; rep <= repeats; rep++)); do
  for m in "${METHODS[@]}"; do
    for cm in "${CASES[@]}"; do
      read -r c mm <<<"$cm"
      for s in "${SERVERS[@]}"; do
        if [[ -n "${OK[$s|$m]:-}" ]]; then
          run_case "$s" h2 "$m" "$c" "$mm" "$rep"
        fi
      done
      if [[ -n "${OK[ours-web|$m]:-}" ]]; then
        run_case ours-web web "$m" "$c" "$mm" "$rep"
      fi
    done
  done
  log "repeat $rep/$repeats done"
done

# ---------------------------------------------------------------------------------------------
# Table: per (server, mode, method, c, m) the median of each column over the repeats.
# ---------------------------------------------------------------------------------------------
echo
echo "== results (median of $repeats; latency = h2load 'time for request', microseconds)"
awk '
  function median(key, col,    n, i, j, t, a) {
    n = split(vals[key, col], a, " ")
    for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] + 0 > t + 0; j--) a[j + 1] = a[j]; a[j + 1] = t }
    return a[int((n + 1) / 2)]
  }
  {
    key = $1 SUBSEP $3 SUBSEP $4 SUBSEP $5
    if (!(key in seen)) { seen[key] = 1; order[++nkeys] = key }
    for (col = 7; col <= 14; col++) vals[key, col] = vals[key, col] " " $col
    errs[key] += $11
  }
  END {
    printf "%-9s %-16s %4s %3s %11s %10s %10s %12s %8s %8s %7s\n", "server", "method", "c", "m",
      "req/s", "mean_us", "max_us", "req/cpu-s", "cpu%", "load%", "errors"
    for (i = 1; i <= nkeys; i++) {
      split(order[i], k, SUBSEP)
      rps = median(order[i], 7); cpu = median(order[i], 12); pc = median(order[i], 13)
      printf "%-9s %-16s %4s %3s %11.0f %10.0f %10.0f %12.0f %7.0f%% %7.0f%% %7d\n", k[1], k[2], k[3],
        k[4], rps, median(order[i], 8), median(order[i], 9), pc, 100 * cpu / '"$duration"',
        median(order[i], 14), errs[order[i]]
      r[k[1], k[2], k[3], k[4]] = rps; p[k[1], k[2], k[3], k[4]] = pc
      if (!((k[2], k[3], k[4]) in cm)) { cm[k[2], k[3], k[4]] = 1; cms[++ncm] = k[2] SUBSEP k[3] SUBSEP k[4] }
    }
    print ""
    print "== ratios (ours over peer; > 1 = ours ahead)"
    printf "%-16s %4s %3s %13s %13s %17s %17s\n", "method", "c", "m", "req/s ours/C++", "req/s ours/go",
      "req/cpu-s ours/C++", "req/cpu-s ours/go"
    for (i = 1; i <= ncm; i++) {
      split(cms[i], k, SUBSEP)
      o = r["ours", k[1], k[2], k[3]]; oc = p["ours", k[1], k[2], k[3]]
      printf "%-16s %4s %3s %13s %13s %17s %17s\n", k[1], k[2], k[3],
        ratio(o, r["grpc_cpp", k[1], k[2], k[3]]), ratio(o, r["grpc_go", k[1], k[2], k[3]]),
        ratio(oc, p["grpc_cpp", k[1], k[2], k[3]]), ratio(oc, p["grpc_go", k[1], k[2], k[3]])
    }
  }
  function ratio(a, b) { return (a > 0 && b > 0) ? sprintf("%.2f", a / b) : "-" }
' "$TMP/results"
echo
echo "rows: ours-web = gRPC-Web binary over HTTP/1.1 to our server (no peer speaks gRPC-Web);"
echo "cpu% = server CPU time over the ${duration} s measured interval (100% = the whole of CPU $SERVER_CPU);"
echo "load% = h2load CPU time over its whole run, warm-up included (near 100% = the load generator is the limit)."
echo "loadavg at end: $(cut -d' ' -f1-3 /proc/loadavg)."
echo "Absolute numbers depend on this shared 2-core machine; only the ratios from one run compare."
