#!/usr/bin/env bash
# bench/fuzz.sh: builds the libFuzzer targets of tests/fuzz with clang-14 (ASan + UBSan) in
# build-fuzz and runs each for a bounded time from a small generated seed corpus.
#
#   bench/fuzz.sh [--time SECONDS] [TARGET...]
#
# Default: 60 s for each of frame_decoder_fuzz, grpc_web_fuzz, key_package_fuzz, mls_message_fuzz,
# identity_update_fuzz, auth_token_fuzz.
# Exits non-zero when a target crashed (sanitizer report, broken invariant, timeout or
# out-of-memory); the input that did it is kept under build-fuzz/artifacts/ and printed as hex.
# The corpus lives in a temp dir, removed on exit.
set -euo pipefail
export LC_ALL=C

readonly ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
readonly BUILD="$ROOT/build-fuzz"
readonly ARTIFACTS="$BUILD/artifacts"
readonly ALL_TARGETS=(frame_decoder_fuzz grpc_web_fuzz key_package_fuzz mls_message_fuzz
                      identity_update_fuzz auth_token_fuzz)

ARGS=("$@")
seconds=60
targets=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --time) seconds="$2"; shift ;;
    -h|--help) sed -n '2,10p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
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
for p in clang-14 libclang-rt-14-dev ninja-build cmake xxd; do
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
unhex() { xxd -r -p <<<"$1"; }
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

# Identity-update seeds: the VALIDATION.md 8.2 identity log (VALIDATION-vectors.json, identity_log),
# whose signatures verify. Byte 0 bit 0: one stored update (2-byte length, bytes) precedes the new one.
seed_identity_update() {
  local d="$1"
  local u1="0a770a750a2a307833346464393531303962353837636139303737386364653565326464383765303232343533363939"
  u1+="1a450a430a413249138830018a2cd8954058d18a3d9773ac5e62ebf4f1aee368cc392027f84854347f9fdf92a5c51020"
  u1+="2792ff078e8531a997e0bd44669fe9eba57e542132f91c20010ad60112d3010a22122003a107bff3ce10be1d70dd18e7"
  u1+="4bc09967e4d6309ba50d5f1ddc8664125531b812450a430a413249138830018a2cd8954058d18a3d9773ac5e62ebf4f1"
  u1+="aee368cc392027f84854347f9fdf92a5c510202792ff078e8531a997e0bd44669fe9eba57e542132f91c1a661a640a40"
  u1+="39e7e5a9362dd59960be9de2ea46cb3cf8c163e075443f292327786aaeff82d8f3cccad7f3218c58975e627269816c30"
  u1+="1d7cf4ff7086f0df704b9829d0b8e00f122003a107bff3ce10be1d70dd18e74bc09967e4d6309ba50d5f1ddc86641255"
  u1+="31b8108080a8b1e39fe7cb171a4033663332656461306534356165343963383731666464366661636562653866323965"
  u1+="313162373838643833306365643234393839643634646231316238636237"
  local u2="0a6d1a6b0a22122003a107bff3ce10be1d70dd18e74bc09967e4d6309ba50d5f1ddc8664125531b812450a430a41ed33"
  u2+="0c8fb8f69eaa54c084cbd96c43c4951a7ffa10b0b94db0b5d1dac206a0ae4d251ba00704c46d99154c5c4047942fd858"
  u2+="6fcff961300529470f8e2ff71efc1c1080b0c5f3c2a1e7cb171a40336633326564613065343561653439633837316664"
  u2+="64366661636562653866323965313162373838643833306365643234393839643634646231316238636237"
  local u3="0aff0612fc060a5b1a590a410460fed4ba255a9d31c961eb74c6356d68c049b8923b61fa6ce669622e60f29fb67903fe"
  u3+="1008b8bc99a41ae9e95628bc64f2f1b20c2d7e9f5177a3c294d4462299121468747470733a2f2f6578616d706c652e74"
  u3+="65737412450a430a412ea7c9be62e7893c987310e2922815e2f37f8dd08d4dab6019460c223c0dd6c12d2873a6c688f7"
  u3+="f5883cdbc3807ae1ce917a6c30ab78f5bea8f48cff14c1361c1c1ad5052ad2050a410460fed4ba255a9d31c961eb74c6"
  u3+="356d68c049b8923b61fa6ce669622e60f29fb67903fe1008b8bc99a41ae9e95628bc64f2f1b20c2d7e9f5177a3c294d4"
  u3+="46229912473045022100b2dd83a85a2223b8092cf7bc8fb93eb47b55fa55f025ae067a25ed9e895dc4fd0220635ed6fc"
  u3+="6aeb4bf7e023c2cd00a2d65932d6e83f991c7f0b3ded8d4a4c8afcd41a259b263fbcb589853137b33ddcafa5bcc54034"
  u3+="64ead4da766d0f819348bf8d472c0500000001229c047b2274797065223a22776562617574686e2e676574222c226368"
  u3+="616c6c656e6765223a225745315555434136494546316447686c626e5270593246305a53423062794270626d4a766541"
  u3+="6f4b53573569623367675355513649444e6d4d7a4a6c5a4745775a545131595755304f574d344e7a466d5a4751325a6d"
  u3+="466a5a574a6c4f4759794f5755784d5749334f44686b4f444d775932566b4d6a51354f446c6b4e6a526b596a4578596a"
  u3+="686a596a634b51335679636d5675644342306157316c4f6941794d44497a4c5445784c544530564449794f6a45314f6a"
  u3+="497757676f4b4c53424d615735724948426863334e725a586b6764473867615735696233674b4943416f5547467a6332"
  u3+="746c65546f674d4451324d475a6c5a445269595449314e5745355a444d78597a6b324d5756694e7a526a4e6a4d314e6d"
  u3+="51324f474d774e446c694f446b794d3249324d575a684e6d4e6c4e6a59354e6a49795a5459775a6a49355a6d49324e7a"
  u3+="6b774d325a6c4d5441774f474934596d4d354f5745304d57466c4f5755354e5459794f474a6a4e6a526d4d6d5978596a"
  u3+="4977597a4a6b4e3255355a6a55784e7a64684d324d794f54526b4e4451324d6a49354f536b4b436b5a76636942746233"
  u3+="4a6c49476c755a6d3836494768306448427a4f6938766547313063433576636d637663326c6e626d463064584a6c6377"
  u3+="222c226f726967696e223a2268747470733a2f2f6578616d706c652e74657374227d1080e0e2b5a2a3e7cb171a403366"
  u3+="333265646130653435616534396338373166646436666163656265386632396531316237383864383330636564323439"
  u3+="3839643634646231316238636237"
  unhex "00$u1" >"$d/registration"
  unhex "01019e$u1$u2" >"$d/revoke_after_registration"
  unhex "01019e$u1$u3" >"$d/passkey_after_registration"
  unhex "00$u3" >"$d/passkey_without_inbox"
}

# Key-package seeds: VALIDATION.md 8.2 vectors (VALIDATION-vectors.json, key_package), whose
# signatures verify, so mutations reach every validation step. Byte 0 picks the clock.
seed_key_package() {
  local d="$1"
  local minimal="0001000320358072d6365880d1aeea329adf9121383851ed21a28e3b75e965d0d2cd1662542079a631eede1bf9c98f12"
  minimal+="032cdeadd0e7a079398fc786b88cc846ec89af85a51a2003a107bff3ce10be1d70dd18e74bc09967e4d6309ba50d5f1d"
  minimal+="dc8664125531b8000140420a403366333265646130653435616534396338373166646436666163656265386632396531"
  minimal+="316237383864383330636564323439383964363464623131623863623702000102000300000200010100000000000000"
  minimal+="00ffffffffffffffff0040404d8146485c0d938cd52947292fcbf0b2cf70e7f10b231177145644a133c5a3e5c3219dc5"
  minimal+="0d669c45532c2c72f3cbfb11b64ba5cddb5e1f01457c18c797ca9204004040f8a5aa2e025f3c5541acdfc71597f8847e"
  minimal+="9ea8a6dbbf2d95bef38fae92bd8c5e21823fcfb34caf6e54dfe76e9b1e3430277946c193c4454d044e6f2e40e24b04"
  local xmtp_like="0001000320358072d6365880d1aeea329adf9121383851ed21a28e3b75e965d0d2cd1662542079a631eede1bf9c98f12"
  xmtp_like+="032cdeadd0e7a079398fc786b88cc846ec89af85a51a2003a107bff3ce10be1d70dd18e74bc09967e4d6309ba50d5f1d"
  xmtp_like+="dc8664125531b8000140420a403366333265646130653435616534396338373166646436666163656265386632396531"
  xmtp_like+="316237383864383330636564323439383964363464623131623863623702000102000312000a0001f0000006ff02ff00"
  xmtp_like+="ff01ff03ff040400070008020001010000000000000000ffffffffffffffff4046000140424040336633326564613065"
  xmtp_like+="343561653439633837316664643666616365626538663239653131623738386438333063656432343938396436346462"
  xmtp_like+="313162386362374040bea480a7148029b9ea1ef2a01ae6d94592f201f7b3033f25ace3e7251535dc4387db9bbbb76185"
  xmtp_like+="a50a8165c700b96ce5d773e4e5c224722c9efd1e049a214f0309000a00ff04030a010340408ebe8082437109c5bbc9ed"
  xmtp_like+="c1d0bc67e7dbe9365ba419a9f8ab04d14a4779210ca3fd3ba2b9ccbf5d4c3fd16432c9314eb38af143d6dbb6ff16e582"
  xmtp_like+="6b42366209"
  local cs1="0001000120358072d6365880d1aeea329adf9121383851ed21a28e3b75e965d0d2cd1662542079a631eede1bf9c98f12"
  cs1+="032cdeadd0e7a079398fc786b88cc846ec89af85a51a2003a107bff3ce10be1d70dd18e74bc09967e4d6309ba50d5f1d"
  cs1+="dc8664125531b8000140420a403366333265646130653435616534396338373166646436666163656265386632396531"
  cs1+="316237383864383330636564323439383964363464623131623863623702000102000300000200010100000000000000"
  cs1+="00ffffffffffffffff0040404d8146485c0d938cd52947292fcbf0b2cf70e7f10b231177145644a133c5a3e5c3219dc5"
  cs1+="0d669c45532c2c72f3cbfb11b64ba5cddb5e1f01457c18c797ca9204004040e7a11ab0aa7bd4d8ef9a693761977942e6"
  cs1+="a880def9adb8be8a162d7e9579a2d90e7276acf0826a1a18da2d537c5b5ed4d9a94943f689a5f699df7f1d2917bc0b"
  local last_resort="0001000320358072d6365880d1aeea329adf9121383851ed21a28e3b75e965d0d2cd1662542079a631eede1bf9c98f12"
  last_resort+="032cdeadd0e7a079398fc786b88cc846ec89af85a51a2003a107bff3ce10be1d70dd18e74bc09967e4d6309ba50d5f1d"
  last_resort+="dc8664125531b8000140420a403366333265646130653435616534396338373166646436666163656265386632396531"
  last_resort+="316237383864383330636564323439383964363464623131623863623702000102000300000200010100000000000000"
  last_resort+="00ffffffffffffffff0040404d8146485c0d938cd52947292fcbf0b2cf70e7f10b231177145644a133c5a3e5c3219dc5"
  last_resort+="0d669c45532c2c72f3cbfb11b64ba5cddb5e1f01457c18c797ca920403000a0040407cab2cc0a301c70fbccbf83e566b"
  last_resort+="3c5178d95e0062658541c966648e65d8168d28457b8ea536c63c195a72bd808bede369b215714c2a4754ca45168d5c86"
  last_resort+="f50a"
  { printf '\x02'; unhex "$minimal"; } >"$d/minimal"
  { printf '\x00'; unhex "$minimal"; } >"$d/minimal_at_epoch"
  { printf '\x04'; unhex "$minimal"; } >"$d/minimal_at_end_of_time"
  { printf '\x02'; unhex "$xmtp_like"; } >"$d/xmtp_like"
  { printf '\x02'; unhex "$cs1"; } >"$d/suite_1"
  { printf '\x02'; unhex "$last_resort"; } >"$d/last_resort_not_in_caps"
}
# Group-message seeds: VALIDATION.md 8.2 (group_message cases). Byte 0: trailer length.
seed_mls_message() {
  local d="$1"
  { printf '\x02'; unhex "000100021000112233445566778899aabbccddeeff0000000000000005030005010203040508a0a1a2a3a4a5a6a7"; } >"$d/private_commit"
  { printf '\x02'; unhex "000100011000112233445566778899aabbccddeeff000000000000000501000000000002000300000001404011111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111202222222222222222222222222222222222222222222222222222222222222222"; } >"$d/public_remove_proposal"
  { printf '\x02'; unhex "000100020f00112233445566778899aabbccddee0000000000000005010001010102"; } >"$d/neg_group_id_15"
  { printf '\x02'; unhex "00010002401000112233445566778899aabbccddeeff0000000000000005010001010102"; } >"$d/neg_nonminimal_varint"
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
    key_package_fuzz) seed_key_package "$corpus" ;;
    mls_message_fuzz) seed_mls_message "$corpus" ;;
    identity_update_fuzz) seed_identity_update "$corpus" ;;
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
