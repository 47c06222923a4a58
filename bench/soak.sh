#!/usr/bin/env bash
# bench/soak.sh: the soak of issue 32 (deliverable 4). The cluster of tests/cluster/ (instances on
# one PostgreSQL primary + streaming replica behind HAProxy) carries 10,000 subscriber streams
# and steady publishing for a set time, all through the balancer (bench/loadgen, mode
# subscribe-latency). Every 10 s it samples each instance's RSS and open file descriptors, the
# publish p99 of the interval and the database size into a CSV, plotted into an SVG (gnuplot).
# At the end it checks the goals and exits 1 when one fails: nothing lost, RSS flat after the
# warm-up, publish p99 trending up by at most 20% (judged in runs of 20 intervals or more). See
# bench/README.md ("bench/soak.sh").
#
#   bench/soak.sh [--minutes M | --seconds S] [--streams N] [--topics T] [--rate R]
#                 [--instances N] [--warmup S] [--out DIR] [--binary PATH]
#
# Default: 30 minutes, 10,000 streams over 1,000 topics, 50 publishes/s of one 1 KiB envelope,
# 3 instances, warm-up the first fifth of the run; results in build/soak/ (soak.csv, soak.svg,
# summary.txt, the loadgen's output). --binary defaults to build/src/xmtp-backend (run
# scripts/build first). Uses the PostgreSQL cluster in XB_PG_PRIMARY / XB_PG_REPLICA when set,
# else starts a throwaway one (tests/support/pg_cluster.sh).
set -euo pipefail
export LC_ALL=C

readonly ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
readonly PROTO_DIR="$ROOT/proto"
readonly GEN_DIR="$ROOT/build-bench-loadgen"
readonly PACKAGES=(g++ pkg-config protobuf-compiler libgrpc++-dev protobuf-compiler-grpc
                   libnghttp2-dev libsqlite3-dev postgresql-15 postgresql-client-15 haproxy
                   gnuplot-nox python3-grpcio python3-protobuf)

ARGS=("$@")
seconds=1800
binary="$ROOT/build/src/xmtp-backend"
out="$ROOT/build/soak"
py_args=()
usage() {
  sed -n '2,18p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
}
positive() { [[ "$2" =~ ^[1-9][0-9]*$ ]] || { echo "$1 wants a positive integer" >&2; exit 2; }; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --minutes) positive "$1" "${2:-}"; seconds=$(($2 * 60)); shift ;;
    --seconds) positive "$1" "${2:-}"; seconds="$2"; shift ;;
    --streams|--topics|--rate|--instances|--warmup)
      positive "$1" "${2:-}"; py_args+=("$1" "$2"); shift ;;
    --out) out="${2:?--out wants a directory}"; shift ;;
    --binary) binary="${2:?--binary wants a path}"; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "unknown argument: $1" >&2; usage >&2; exit 2 ;;
  esac
  shift
done
binary="$(realpath "$binary")"
[[ -x "$binary" ]] || {
  echo "--binary $binary is not an executable (run scripts/build)" >&2
  exit 2
}
[[ -d "$ROOT/build/python" ]] || { echo "no build/python: run scripts/build first" >&2; exit 2; }

log() { printf '[soak.sh] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"

PG_DIR=""
cleanup() {
  if [[ -n "$PG_DIR" ]]; then
    "$ROOT/tests/support/pg_cluster.sh" stop "$PG_DIR" >/dev/null 2>&1 || true
  fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "command: $0 ${ARGS[*]}"
ensure_packages
build_loadgen

mkdir -p "$out"
if [[ -z "${XB_PG_PRIMARY:-}" ]]; then
  PG_DIR="$(mktemp -d /tmp/xb-soak-pg.XXXXXX)"
  chmod 755 "$PG_DIR"  # the cluster runs as user postgres when we are root
  log "starting a PostgreSQL 15 primary + replica in $PG_DIR"
  pg_env=$("$ROOT/tests/support/pg_cluster.sh" start "$PG_DIR" 2>"$out/pg_cluster.log") ||
    die "pg_cluster.sh start failed: $(tail -n 5 "$out/pg_cluster.log")"
  eval "$pg_env"
fi

# The cluster harness starts XB_TEST_BINARY; the soak runs the production build.
export XB_TEST_BINARY="$binary" XB_BINARY="$binary"
export PYTHONPATH="$ROOT/build/python:$ROOT/tests/integration:$ROOT/tests/cluster"
export PYTHONDONTWRITEBYTECODE=1
# Not exec: the trap above stops the PostgreSQL cluster afterwards.
/usr/bin/python3 "$ROOT/bench/soak.py" --loadgen "$GEN_DIR/loadgen" --seconds "$seconds" \
  --out "$(realpath "$out")" "${py_args[@]}"
