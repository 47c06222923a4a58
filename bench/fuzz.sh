#!/usr/bin/env bash
# bench/fuzz.sh: builds the libFuzzer targets of tests/fuzz with clang-14 (ASan + UBSan) in
# build-fuzz and runs each for a bounded time from a small generated seed corpus.
#
#   bench/fuzz.sh [--time SECONDS] [TARGET...]
#
# Default: 60 s for each of frame_decoder_fuzz, grpc_web_fuzz and auth_token_fuzz. Exits non-zero when a target
# crashed (sanitizer report, broken invariant, timeout or out-of-memory); the input that did it is
# kept under build-fuzz/artifacts/ and printed as hex. The corpus lives in a temp dir, removed on
# exit.
set -euo pipefail
export LC_ALL=C

readonly ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
readonly BUILD="$ROOT/build-fuzz"
readonly ARTIFACTS="$BUILD/artifacts"
readonly ALL_TARGETS=(frame_decoder_fuzz grpc_web_fuzz auth_token_fuzz)

ARGS=("$@")
seconds=60
targets=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --time) seconds="$2"; shift ;;
    -h|--help) sed -n '2,11p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "unknown argument: $1" >&2; exit 2 ;;
    *) targets+=("$1") ;;
  esac
  shift
done
[[ "$seconds" =~ ^[1-9][0-9]*$ ]] || { echo "--time wants whole seconds" >&2; exit 2; }
[[ ${#targets[@]} -gt 0 ]] || targets=("${ALL_TARGETS[@]}")

log() { printf '[fuzz.sh] %s\n' "$*" >&2; }

TMP="$(mktemp -d /tmp/xb-fuzz.XXXXXX)"
trap 'rm -rf "$TMP"' EXIT
trap 'exit 130' INT TERM

echo "command: $0 ${ARGS[*]}"

# clang-14 with its libFuzzer runtime (Debian: clang-14, libclang-rt-14-dev).
missing=()
for p in clang-14 libclang-rt-14-dev ninja-build cmake; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [[ ${#missing[@]} -gt 0 ]]; then
  log "installing: ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

if [[ ! -f "$BUILD/build.ninja" ]]; then
  log "configuring $BUILD"
  CC=clang-14 CXX=clang++-14 cmake -S "$ROOT" -B "$BUILD" -G Ninja \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DXB_FUZZ=ON -DXB_BUILD_TESTS=OFF >"$TMP/cmake.log" 2>&1 ||
    { cat "$TMP/cmake.log" >&2; exit 1; }
fi
log "building ${targets[*]}"
cmake --build "$BUILD" --target "${targets[@]}" >"$TMP/build.log" 2>&1 ||
  { tail -n 40 "$TMP/build.log" >&2; exit 1; }

# ---------------------------------------------------------------------------------------------
# Seed corpora. Layouts are described at the top of each target's .cc.
# ---------------------------------------------------------------------------------------------
# frame HEXFLAG PAYLOAD: one gRPC frame.
frame() {
  local n=${#2}
  printf "\\x$1"
  printf "$(printf '\\x%02x\\x%02x\\x%02x\\x%02x' $((n >> 24 & 255)) $((n >> 16 & 255)) \
    $((n >> 8 & 255)) $((n & 255)))"
  printf '%s' "$2"
}
seed_frame_decoder() {
  local d="$1"
  # byte 0: budget index (5 = 4096 bytes, 4 = 64, 1 = 1), byte 1: chunk-size count, sizes, body.
  { printf '\x05\x00'; frame 00 'hello'; } >"$d/one"
  { printf '\x05\x03\x01\x02\x03'; frame 00 ''; frame 00 'abc'; frame 00 'xyz'; } >"$d/three_chunked"
  { printf '\x05\x01\x01'; frame 00 '0123456789'; } >"$d/bytewise"
  { printf '\x05\x00'; frame 01 'compressed'; } >"$d/compressed"
  { printf '\x05\x00'; frame 80 'grpc-status: 0'; } >"$d/trailer_flag"
  { printf '\x04\x00'; frame 00 "$(printf 'a%.0s' $(seq 100))"; } >"$d/over_budget"
  { printf '\x01\x00'; frame 00 'x'; frame 00 'yy'; } >"$d/budget_edge"
  printf '\x05\x02\x04\x00\x00\x00\x00\x00\x09trun' >"$d/truncated"  # declares 9, has 4
}
seed_grpc_web() {
  local d="$1"
  # byte 0: status code, byte 1: split point, byte 2: chunk-size count, sizes, payload.
  printf '\x00\x05\x00hello world' >"$d/plain"
  printf '\x03\x04\x02\x01\x03aGVsbG8=' >"$d/padded"
  printf '\x0d\x00\x01\x05QUJDREVGR0g=QUI=' >"$d/two_segments"
  printf '\x02\x08\x00100%% \x01\r\nline\xff\xfe' >"$d/controls"
  printf '\x10\x03\x00grpc-status: 0\r\ngrpc-message: x\r\n' >"$d/header_like"
  printf '\x05\x01\x03\x00\x01\x02A===' >"$d/bad_padding"
}
seed_auth_token() {
  local d="$1"
  # byte 0: mode (even: header/token, odd: JWKS), byte 1: claim policy steering, payload.
  # {"alg":"ES256","kid":"k"} . {"exp":1800000000,"aud":"a","iss":"i","scope":"s t"} . sig
  printf '\x00\x07eyJhbGciOiJFUzI1NiIsImtpZCI6ImsifQ.eyJleHAiOjE4MDAwMDAwMDAsImF1ZCI6ImEiLCJpc3MiOiJpIiwic2NvcGUiOiJzIHQifQ.c2ln' >"$d/jwt"
  # {"alg":"none"} . {} . (empty)
  printf '\x00\x00eyJhbGciOiJub25lIn0.e30.' >"$d/alg_none"
  printf '\x00\x00Basic abc' >"$d/basic"
  printf '\x01\x00{"keys":[{"alg":"EdDSA","kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"},{"alg":"ES256","kty":"EC","crv":"P-256","x":"AA","y":"AA"},{"kty":"RSA","n":"AQAB","e":"AQAB","alg":"RS256"}]}' >"$d/jwks"
}

# ---------------------------------------------------------------------------------------------
# Runs
# ---------------------------------------------------------------------------------------------
mkdir -p "$ARTIFACTS"
failed=0
summary=()
for t in "${targets[@]}"; do
  corpus="$TMP/corpus/$t"
  mkdir -p "$corpus"
  case "$t" in
    frame_decoder_fuzz) seed_frame_decoder "$corpus" ;;
    grpc_web_fuzz) seed_grpc_web "$corpus" ;;
    auth_token_fuzz) seed_auth_token "$corpus" ;;
  esac
  before=$(ls "$ARTIFACTS" | wc -l)
  log "running $t for ${seconds} s ($(ls "$corpus" | wc -l) seeds)"
  rc=0
  "$BUILD/tests/fuzz/$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$ARTIFACTS/$t-" "$corpus" >"$TMP/$t.log" 2>&1 || rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$TMP/$t.log")
  cov=$(grep -E '^#[0-9]+' "$TMP/$t.log" | tail -n 1 | grep -oE 'cov: [0-9]+ ft: [0-9]+ corp: [0-9]+/[^ ]+' || true)
  if [[ $rc -ne 0 ]]; then
    failed=1
    summary+=("$t: CRASH (exit $rc) after ${execs:-?} runs")
    log "$t crashed (exit $rc):"
    grep -E 'ERROR|invariant broken|runtime error|SUMMARY|#[0-9]+ in |Test unit written' \
      "$TMP/$t.log" | head -n 40 >&2
    for f in $(ls -t "$ARTIFACTS" | head -n $(($(ls "$ARTIFACTS" | wc -l) - before))); do
      log "input $ARTIFACTS/$f:"
      od -An -tx1 -v "$ARTIFACTS/$f" | head -n 16 >&2
    done
  else
    summary+=("$t: ok, ${execs:-?} runs in ${seconds} s, ${cov:-no stats}")
  fi
done

echo
echo "== fuzz results (clang-14, -fsanitize=fuzzer,address,undefined)"
printf '%s\n' "${summary[@]}"
exit "$failed"
