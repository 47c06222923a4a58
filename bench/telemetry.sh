#!/usr/bin/env bash
# bench/telemetry.sh: the throughput cost of telemetry (issue 5 goal: at most 5%). The unary case
# of bench/unary.sh (GetConfiguration over h2load) and the publish case of bench/publish.sh
# (bench/loadgen, SQLite) against servers started side by side in one run:
#   off  no OTLP endpoint (metrics are always recorded; no span is sampled or exported)
#   on   telemetry.otlp_endpoint at a local OTLP sink, sample_ratio = 1.0: every request,
#        handler and publish stage span is exported by the batch exporter, over
#        telemetry.otlp_protocol = --protocol (grpc, the default, or http/protobuf)
#   r0   the same exporter with sample_ratio = 0.0: every span is created, timed and recorded in
#        xmtp_operation_duration_seconds, none is sampled (the cost of tracing when sampled out)
# Each repeat starts the servers afresh (with empty databases) and rotates the order of the runs,
# so all see the same machine. Shown: medians, and the median of
# the per-repeat ratios to 'off' (each repeat's runs are seconds apart, so this pairing cancels
# most of the shared machine's drift), and the exporter thread's (xb-otlp) own CPU per request.
# Then, side by side: each repeat also loads 'on' and 'off' at the same moment (both servers
# share CPU 1, both loads run on CPU 0) and compares the CPU each spends per request; a fourth
# server 'off2', configured as 'off', is paired with 'off' the same way to show the method's own
# spread. Sequential runs on this machine drift by 10-30% between runs, and a run tends to be
# slower when it follows another at once; two loads at the same moment see the same machine.
#
#   bench/telemetry.sh [--quick] [--repeats N] [--duration S] [--binary PATH]
#                      [--protocol grpc|http/protobuf]
#
# Server pinned to CPU 1, load and the sink to CPU 0. Nothing here asserts a timing.
set -euo pipefail
export LC_ALL=C

readonly ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
readonly PROTO_DIR="$ROOT/proto"
readonly GEN_DIR="$ROOT/build-bench-loadgen"
readonly SERVER_CPU=1
readonly LOAD_CPU=0
readonly WARMUP_S=1
readonly UNARY_C=10 UNARY_M=10
readonly PUBLISH_CLIENTS=8 PAYLOAD=1024 TOPICS=64
readonly PACKAGES=(g++ pkg-config protobuf-compiler libgrpc++-dev protobuf-compiler-grpc
                   libnghttp2-dev libsqlite3-dev nghttp2-client python3)

repeats=5
duration=5
binary="$ROOT/build/src/xmtp-backend"
protocol=grpc
usage() { sed -n '2,24p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --quick) repeats=1; duration=3 ;;
    --repeats) repeats="$2"; shift ;;
    --duration) duration="$2"; shift ;;
    --binary) binary="$2"; shift ;;
    --protocol) protocol="$2"; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "unknown argument: $1" >&2; usage >&2; exit 2 ;;
  esac
  shift
done
[[ "$repeats" =~ ^[1-9][0-9]*$ ]] || { echo "--repeats wants a positive integer" >&2; exit 2; }
[[ "$duration" =~ ^[1-9][0-9]*$ ]] || { echo "--duration wants whole seconds" >&2; exit 2; }
[[ "$protocol" == grpc || "$protocol" == http/protobuf ]] ||
  { echo "--protocol wants grpc or http/protobuf" >&2; exit 2; }
# The key only when it is not the default, so that --binary may name a build older than the key.
protocol_key=""
[[ "$protocol" == grpc ]] || protocol_key="otlp_protocol = \"$protocol\"
"
binary="$(realpath "$binary")"
[[ -x "$binary" ]] || { echo "--binary $binary is not an executable" >&2; exit 2; }

log() { printf '[telemetry.sh] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"

TMP="$(mktemp -d /tmp/xb-bench-tel.XXXXXX)"
PIDS=()
PAIR_PIDS=()  # the loads running now (one, or the two of a side-by-side pair)
cleanup() {
  local pid
  for pid in "${PAIR_PIDS[@]}"; do
    kill -TERM "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  for pid in "${PIDS[@]}"; do
    kill -TERM "$pid" 2>/dev/null || true
  done
  for pid in "${PIDS[@]}"; do
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

# The OTLP sink (bench/lib.sh; gRPC and OTLP/HTTP), on the load CPU: a collector runs on another machine, and an
# unpinned sink would take turns on the server's CPU and be charged to telemetry as lost
# throughput.
SINK_PORT=$(pick_port)
start_otlp_sink "$SINK_PORT" "$TMP/sink.count" "$LOAD_CPU"
PIDS+=("$SINK_PID")

# start_xb NAME EXTRA_TELEMETRY: our server on CPU 1; sets PORT_<NAME>, PID_<NAME>.
declare -A PORT PID
start_xb() {
  local name=$1 extra=$2 port deadline
  port=$(pick_port)
  rm -rf "${TMP:?}/$name"  # a fresh database too: every repeat starts alike
  mkdir -p "$TMP/$name"
  cat >"$TMP/$name.toml" <<TOML
[server]
identifier = "bench.local"
listen = "127.0.0.1:$port"
log_level = "warn"
request_logger = false
[telemetry]
metrics_listen = ""
$extra
[database]
url = "sqlite://$TMP/$name/xmtp.db"
TOML
  taskset -c "$SERVER_CPU" "$binary" --config "$(cat "$TMP/$name.toml")" >>"$TMP/$name.log" 2>&1 &
  PID[$name]=$!
  PIDS+=("${PID[$name]}")
  deadline=$((SECONDS + 30))
  until [[ -n "$(ss -Htln "sport = :$port")" ]]; do
    kill -0 "${PID[$name]}" 2>/dev/null || die "$name exited: $(tail -n 3 "$TMP/$name.log")"
    ((SECONDS < deadline)) || die "$name did not listen within 30 s"
    sleep 0.05
  done
  PORT[$name]=$port
}
# start_servers / stop_servers: the four servers, started afresh for each repeat. One process
# can run about 1% faster or slower than another of the same binary and configuration for as
# long as it lives (where its heap and its threads' stacks fell); with the same four processes
# for every repeat, that bias would be in every pair's ratio alike instead of averaging out.
start_servers() {
  start_xb off ""
  start_xb on "otlp_endpoint = \"http://127.0.0.1:$SINK_PORT\"
${protocol_key}sample_ratio = 1.0"
  start_xb r0 "otlp_endpoint = \"http://127.0.0.1:$SINK_PORT\"
${protocol_key}sample_ratio = 0.0"
  start_xb off2 ""
}
stop_servers() {
  local name
  for name in off on r0 off2; do
    kill -TERM "${PID[$name]}" 2>/dev/null || true
  done
  for name in off on r0 off2; do
    wait "${PID[$name]}" 2>/dev/null || true
  done
}

# CPU time, in microseconds, the process's threads have run so far: the first field of each
# thread's schedstat (nanoseconds on CPU). /proc/PID/stat counts in clock ticks (10 ms), which
# over a 5 s run at half a CPU is +-0.4% on its own.
cpu_us() { cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{s += $1} END {printf "%d", s / 1000}'; }
# The same for the process's exporter thread (named xb-otlp); 0 when it has none.
exporter_us() {
  local task
  for task in /proc/"$1"/task/*; do
    if [[ "$(cat "$task/comm" 2>/dev/null)" == xb-otlp ]]; then
      awk '{printf "%d", $1 / 1000}' "$task/schedstat"
      return
    fi
  done
  echo 0
}
# per_request MICROSECONDS REQUESTS: microseconds of CPU per request.
per_request() {
  awk -v t="$1" -v n="${2:-0}" 'BEGIN {if (n > 0) printf "%.2f", t / n; else print "nan"}'
}

printf '\0\0\0\0\0' >"$TMP/empty.body"  # one gRPC frame holding an empty GetConfigurationRequest
declare -A R C E
# The loads, started in the background (their pids in PAIR_PIDS, which wait_pair waits for).
unary_load() {  # unary_load NAME OUT
  taskset -c "$LOAD_CPU" h2load -t1 -D"$duration" --warm-up-time="$WARMUP_S" -c"$UNARY_C" \
    -m"$UNARY_M" -d "$TMP/empty.body" -H 'content-type: application/grpc' -H 'te: trailers' \
    "http://127.0.0.1:${PORT[$1]}/xmtp.backend.v1.ConfigurationService/GetConfiguration" \
    >"$2" 2>&1 &
  PAIR_PIDS+=($!)
}
publish_load() {  # publish_load NAME OUT
  taskset -c "$LOAD_CPU" "$LOADGEN" --target "127.0.0.1:${PORT[$1]}" \
    --server-pid "${PID[$1]}" --payload "$PAYLOAD" --topics "$TOPICS" --mode publish \
    --clients "$PUBLISH_CLIENTS" --envelopes 1 --duration "$duration" --warmup "$WARMUP_S" \
    >"$2" 2>&1 &
  PAIR_PIDS+=($!)
}
wait_pair() {
  local pid rc=0
  for pid in "${PAIR_PIDS[@]}"; do
    wait "$pid" || rc=1
  done
  PAIR_PIDS=()
  return $rc
}
# h2load_done NAME OUT: the requests h2load completed; logs failed ones.
h2load_done() {
  grep -q "requests: .* 0 failed, 0 errored" "$2" || log "unary $1: failures: $(grep '^requests:' "$2")"
  sed -n 's/^requests: [0-9]* total, [0-9]* started, \([0-9]*\) done.*/\1/p' "$2"
}
# publish_cpu LINE: the server's CPU per publish (microseconds) over the loadgen's measured
# interval (--server-pid), from its RESULT line.
publish_cpu() {
  awk -v c="$(kv server_cpu_s "$1")" -v r="$(kv rps "$1")" -v s="$(kv secs "$1")" \
    'BEGIN {if (r > 0) printf "%.2f", c * 1e6 / (r * s); else print "nan"}'
}
unary() {  # unary NAME REP
  local out="$TMP/h2load.$1.$2" t0 t1 e0 e1 n
  t0=$(cpu_us "${PID[$1]}")
  e0=$(exporter_us "${PID[$1]}")
  unary_load "$1" "$out"
  wait_pair || log "h2load exited non-zero ($1)"
  t1=$(cpu_us "${PID[$1]}")
  e1=$(exporter_us "${PID[$1]}")
  R[unary.$1.$2]=$(sed -n 's/^finished in [^,]*, \([0-9.]*\) req\/s.*/\1/p' "$out")
  # Server CPU per request (warm-up included on both sides of the ratio): microseconds.
  n=$(h2load_done "$1" "$out")
  C[unary.$1.$2]=$(per_request $((t1 - t0)) "$n")
  E[unary.$1.$2]=$(per_request $((e1 - e0)) "$n")
}
publish() {  # publish NAME REP
  local out="$TMP/loadgen.$1.$2" line e0 e1
  e0=$(exporter_us "${PID[$1]}")
  publish_load "$1" "$out"
  wait_pair || log "loadgen failed ($1): $(tail -n 2 "$out")"
  e1=$(exporter_us "${PID[$1]}")
  line=$(grep '^RESULT ' "$out" || true)
  [[ "$(kv errors "$line")" == "0" ]] || log "publish $1: errors: $(kv error_codes "$line")"
  R[publish.$1.$2]=$(kv rps "$line")
  C[publish.$1.$2]=$(publish_cpu "$line")
  # The exporter's CPU spans the warm-up too: per request over warm-up and measured interval.
  E[publish.$1.$2]=$(per_request $((e1 - e0)) "$(awk -v r="$(kv rps "$line")" \
    -v s="$(kv secs "$line")" -v w="$WARMUP_S" 'BEGIN {printf "%d", r * (s + w)}')")
}

# Side by side. pair_unary A B REP / pair_publish A B REP: both loads at once; records in S the
# ratio of B's server CPU per request to A's, and in P each one's CPU per request. The load
# started first alternates with the repeat, so neither server always leads.
declare -A S P
pair_order() { if (($3 % 2)); then echo "$1 $2"; else echo "$2 $1"; fi; }
pair_unary() {
  local a=$1 b=$2 rep=$3 name t0a t0b t1a t1b
  t0a=$(cpu_us "${PID[$a]}")
  t0b=$(cpu_us "${PID[$b]}")
  for name in $(pair_order "$a" "$b" "$rep"); do
    unary_load "$name" "$TMP/pair.$name.$rep"
  done
  wait_pair || log "side by side unary $a/$b: h2load exited non-zero"
  t1a=$(cpu_us "${PID[$a]}")
  t1b=$(cpu_us "${PID[$b]}")
  P[unary.$a-$b.$a.$rep]=$(per_request $((t1a - t0a)) "$(h2load_done "$a" "$TMP/pair.$a.$rep")")
  P[unary.$a-$b.$b.$rep]=$(per_request $((t1b - t0b)) "$(h2load_done "$b" "$TMP/pair.$b.$rep")")
  S[unary.$a-$b.$rep]=$(ratio3 "${P[unary.$a-$b.$b.$rep]}" "${P[unary.$a-$b.$a.$rep]}")
}
pair_publish() {
  local a=$1 b=$2 rep=$3 name line
  for name in $(pair_order "$a" "$b" "$rep"); do
    publish_load "$name" "$TMP/pairpub.$name.$rep"
  done
  wait_pair || log "side by side publish $a/$b: loadgen failed"
  for name in "$a" "$b"; do
    line=$(grep '^RESULT ' "$TMP/pairpub.$name.$rep" || true)
    [[ "$(kv errors "$line")" == "0" ]] || log "side by side publish $name: errors"
    P[publish.$a-$b.$name.$rep]=$(publish_cpu "$line")
  done
  S[publish.$a-$b.$rep]=$(ratio3 "${P[publish.$a-$b.$b.$rep]}" "${P[publish.$a-$b.$a.$rep]}")
}
ratio3() { awk -v a="$1" -v b="$2" 'BEGIN {if (a == "nan" || b == "nan" || b + 0 == 0) print "nan"; else printf "%.3f", a / b}'; }

for rep in $(seq "$repeats"); do
  ((rep == 1)) || stop_servers
  start_servers
  case $((rep % 3)) in
    1) order=(off on r0) ;;
    2) order=(on r0 off) ;;
    *) order=(r0 off on) ;;
  esac
  # off2 takes the sequential loads too (not shown): its heap and its database have then served
  # as much as the others' when the side-by-side pairs compare it with off. Without the unary
  # load it read 1-2% below off (a fresher heap: malloc is a sixth of a unary call's CPU).
  for name in "${order[@]}" off2; do
    log "repeat $rep: unary $name"
    unary "$name" "$rep"
  done
  for name in "${order[@]}" off2; do
    log "repeat $rep: publish $name"
    publish "$name" "$rep"
  done
  log "repeat $rep: side by side, unary on/off and off2/off, publish on/off and off2/off"
  pair_unary off on "$rep"
  pair_unary off off2 "$rep"
  pair_publish off on "$rep"
  pair_publish off off2 "$rep"
done

# per_rep ARRAY KEY: ARRAY[KEY.rep] for every repeat, one per line ("nan" where missing);
# med_of ARRAY KEY: their median.
per_rep() {
  local -n values=$1
  for rep in $(seq "$repeats"); do echo "${values[$2.$rep]:-nan}"; done
}
med_of() { per_rep "$1" "$2" | median; }
# pmed ARRAY CASE NAME: the median over repeats of NAME's value / off's value in the same repeat.
pmed() {
  local -n values=$1
  for rep in $(seq "$repeats"); do
    echo "$(ratio "${values[$2.$3.$rep]:-nan}" "${values[$2.off.$rep]:-nan}")"
  done | grep -v '^-$' | median
}
case_label() {  # case_label CASE
  if [[ "$1" == publish ]]; then
    echo "publish sqlite c=$PUBLISH_CLIENTS e=1 (1 KiB)"
  else
    echo "unary GetConfiguration h2load c=$UNARY_C m=$UNARY_M"
  fi
}
# cost_pct CASE: the side-by-side median on/off ratio as a cost, e.g. +5.5%.
cost_pct() {
  med_of S "$1.off-on" | awk '{if ($1 == "nan") print "-"; else printf "%+.1f%%", ($1 - 1) * 100}'
}
echo "== telemetry overhead (median of $repeats x ${duration} s; server on CPU $SERVER_CPU, load on CPU $LOAD_CPU)"
echo "machine: $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg) (shared: figures are noisy)"
printf '%-44s %-4s %10s %7s %7s %10s %7s %7s %8s\n' case server "req/s" "vs off" paired \
  "cpu/req" "vs off" paired "xb-otlp"
for c in unary publish; do
  label=$(case_label "$c")
  off=$(med_of R "$c.off")
  coff=$(med_of C "$c.off")
  for name in off on r0; do
    printf '%-44s %-4s %10s %7s %7s %8sus %7s %7s %6sus\n' "$label" "$name" \
      "$(med_of R "$c.$name")" "$(ratio "$(med_of R "$c.$name")" "$off")" "$(pmed R "$c" "$name")" \
      "$(med_of C "$c.$name")" "$(ratio "$(med_of C "$c.$name")" "$coff")" "$(pmed C "$c" "$name")" \
      "$(med_of E "$c.$name")"
  done
done
echo "cpu/req: server process CPU (all threads, exporter included) per completed request; paired:"
echo "median of the per-repeat ratios to off; xb-otlp: the exporter thread's share of cpu/req."
echo "per repeat req/s: $(for k in "${!R[@]}"; do echo "$k=${R[$k]}"; done | sort | tr '\n' ' ')"
echo "per repeat cpu/req: $(for k in "${!C[@]}"; do echo "$k=${C[$k]}"; done | sort | tr '\n' ' ')"
echo "sink: $(cat "$TMP/sink.count" 2>/dev/null || echo '0 0') (export requests, bytes) received from 'on'"
echo
echo "== side by side ($repeats pairs each; both servers on CPU $SERVER_CPU at once, both loads on CPU $LOAD_CPU)"
printf '%-44s %-9s %12s %12s %9s  %s\n' case pair "first cpu/req" "second" median "per pair (second / first)"
for c in unary publish; do
  label=$(case_label "$c")
  for pair in off-on off-off2; do
    first=${pair%-*}
    second=${pair#*-}
    printf '%-44s %-9s %10sus %10sus %9s  %s\n' "$label" "$second/$first" \
      "$(med_of P "$c.$pair.$first")" "$(med_of P "$c.$pair.$second")" \
      "$(med_of S "$c.$pair")" "$(per_rep S "$c.$pair" | tr '\n' ' ')"
  done
done
echo "Each pair's ratio is the second server's CPU per request over the first's, measured over the"
echo "same seconds (server process CPU, exporter included). off2/off is two identically configured"
echo "servers: its spread around 1.000 is the method's own. Throughput is not compared side by side:"
echo "the scheduler shares CPU 1 per thread, and 'on' has one thread more (the exporter)."
echo "telemetry cost (side by side, median on/off - 1): unary $(cost_pct unary), publish $(cost_pct publish) (goal: at most 5%, issue 5)"
