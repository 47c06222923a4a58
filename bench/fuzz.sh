#!/usr/bin/env bash
# bench/fuzz.sh: builds the libFuzzer targets of tests/fuzz with clang-14 (ASan + UBSan) in
# build-fuzz and runs each for a bounded time from a generated seed corpus.
#
#   bench/fuzz.sh [--time SECONDS] [--corpus DIR] [--decode-ratio N] [TARGET...]
#
# Default: 60 s for each target of tests/fuzz (every parser that takes request bytes). CI runs
# `--time 5` (scripts/test). --corpus DIR keeps each target's corpus in DIR/TARGET across runs
# (default: a temp dir, removed on exit). --decode-ratio N turns on request_message_fuzz's
# decode-cost check (heap held <= N x wire bytes + 16 KiB; off by default, see bench/README.md).
# Exits non-zero when a target crashed (sanitizer report, broken invariant, timeout, out of
# memory, or a single allocation over the malloc limit); the input that did it is kept under
# build-fuzz/artifacts/ and printed as hex. Ends with a table: runs, execs/s, coverage, result.
set -euo pipefail
export LC_ALL=C

readonly ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
readonly BUILD="$ROOT/build-fuzz"
readonly ARTIFACTS="$BUILD/artifacts"
readonly ALL_TARGETS=(frame_decoder_fuzz grpc_web_fuzz http1_request_fuzz request_message_fuzz
                      envelope_fuzz key_package_fuzz mls_message_fuzz identity_update_fuzz
                      auth_token_fuzz v3_wire_fuzz proxy_header_fuzz)
# Per run: RSS and single-allocation limits (an input that costs far more memory than its size
# is reported as a crash), and a per-input time limit.
readonly RSS_LIMIT_MB=2048
readonly MALLOC_LIMIT_MB=256
readonly UNIT_TIMEOUT_S=10

ARGS=("$@")
seconds=60
corpus_root=""
decode_ratio=""
targets=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --time) seconds="$2"; shift ;;
    --corpus) corpus_root="$2"; shift ;;
    --decode-ratio) decode_ratio="$2"; shift ;;
    -h|--help) sed -n '2,13p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "unknown argument: $1" >&2; exit 2 ;;
    *) targets+=("$1") ;;
  esac
  shift
done
[[ "$seconds" =~ ^[1-9][0-9]*$ ]] || { echo "--time wants whole seconds" >&2; exit 2; }
[[ -z "$decode_ratio" || "$decode_ratio" =~ ^[1-9][0-9]*$ ]] ||
  { echo "--decode-ratio wants a whole number" >&2; exit 2; }
[[ ${#targets[@]} -gt 0 ]] || targets=("${ALL_TARGETS[@]}")
for t in "${targets[@]}"; do
  [[ " ${ALL_TARGETS[*]} " == *" $t "* ]] || { echo "unknown target: $t" >&2; exit 2; }
done

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

# ccache (the top-level CMakeLists.txt uses it when present): paths below the checkout are hashed
# relative to it, and -fdebug-prefix-map keeps the checkout's path out of the debug info (ccache
# otherwise hashes the working directory of every -g compile), so CI's warm cache serves a fresh
# clone at any path.
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$ROOT}"
if [[ ! -f "$BUILD/build.ninja" ]]; then
  log "configuring $BUILD"
  CC=clang-14 CXX=clang++-14 cmake -S "$ROOT" -B "$BUILD" -G Ninja \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DXB_FUZZ=ON -DXB_BUILD_TESTS=OFF \
    -DCMAKE_C_FLAGS="-fdebug-prefix-map=$ROOT=." -DCMAKE_CXX_FLAGS="-fdebug-prefix-map=$ROOT=." \
    >"$TMP/cmake.log" 2>&1 || { cat "$TMP/cmake.log" >&2; exit 1; }
fi
log "building ${targets[*]}"
build_start=$SECONDS
cmake --build "$BUILD" --target "${targets[@]}" >"$TMP/build.log" 2>&1 ||
  { tail -n 40 "$TMP/build.log" >&2; exit 1; }
log "built in $((SECONDS - build_start)) s"

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
seed_proxy_header() {
  local d="$1"
  local sig='0d0a0d0a000d0a515549540a'
  # PROXY TCP4 203.0.113.7:50000 -> 10.0.0.1:5050; the same with an ALPN TLV; LOCAL; TCP6.
  unhex "${sig}2111000ccb0071070a000001c35013ba" >"$d/tcp4"
  unhex "${sig}21110011cb0071070a000001c35013ba0100026832" >"$d/tcp4_tlv"
  unhex "${sig}20000000" >"$d/local"
  unhex "${sig}21210024$(printf '20010db8%024x' 9)$(printf '%032x' 1)c35013ba" >"$d/tcp6"
  printf 'PROXY TCP4 203.0.113.7 10.0.0.1 50000 5050\r\n' >"$d/v1_text"
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
  # Tokens whose kid and alg select each key of the target's fixed set, with a signature of the
  # algorithm's length (bytes 0, 1, 2, ...), so Verify runs.
  local claims=eyJleHAiOjE4MDAwMDAwMDAsImF1ZCI6ImEiLCJpc3MiOiJpIiwic2NvcGUiOiJzIHQifQ
  local sig64=AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLS4vMDEyMzQ1Njc4OTo7PD0-Pw
  local sig96=AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLS4vMDEyMzQ1Njc4OTo7PD0-P0BBQkNERUZHSElKS0xNTk9QUVJTVFVWV1hZWltcXV5f
  local sig256=AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLS4vMDEyMzQ1Njc4OTo7PD0-P0BBQkNERUZHSElKS0xNTk9QUVJTVFVWV1hZWltcXV5fYGFiY2RlZmdoaWprbG1ub3BxcnN0dXZ3eHl6e3x9fn-AgYKDhIWGh4iJiouMjY6PkJGSk5SVlpeYmZqbnJ2en6ChoqOkpaanqKmqq6ytrq-wsbKztLW2t7i5uru8vb6_wMHCw8TFxsfIycrLzM3Oz9DR0tPU1dbX2Nna29zd3t_g4eLj5OXm5-jp6uvs7e7v8PHy8_T19vf4-fr7_P3-_w
  printf '\x00\x00eyJhbGciOiJFUzI1NiIsImtpZCI6ImVzMjU2In0.%s.%s' "$claims" "$sig64" >"$d/es256_kid"
  printf '\x00\x00eyJhbGciOiJFUzM4NCIsImtpZCI6ImVzMzg0In0.%s.%s' "$claims" "$sig96" >"$d/es384_kid"
  printf '\x00\x00eyJhbGciOiJSUzI1NiIsImtpZCI6InJzMjU2In0.%s.%s' "$claims" "$sig256" >"$d/rs256_kid"
  printf '\x00\x00eyJhbGciOiJFZERTQSJ9.%s.%s' "$claims" "$sig64" >"$d/eddsa_no_kid"
  printf '\x01\x00{"keys":[{"alg":"EdDSA","kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"},{"alg":"ES256","kty":"EC","crv":"P-256","x":"AA","y":"AA"},{"kty":"RSA","n":"AQAB","e":"AQAB","alg":"RS256"}]}' >"$d/jwks"
  # Two of the target's fixed keys; byte 1 (64) is the length of the signature tried on each.
  printf '\x01\x40%s' '{"keys":[{"kty":"EC","crv":"P-256","alg":"ES256","kid":"es256","x":"RXR6NUDd99G644oMWWKIHP4MFubQuh3OdtMHBPEV36k","y":"Ar7D_Arv3JDKaT1aledaGLr3guH7lpJ7SbIcCnaRYxM"},{"kty":"OKP","crv":"Ed25519","alg":"EdDSA","kid":"eddsa","x":"CMBnIBIssVY0L2qnGEHKN78ByWQQi2z-gdTaO6k4NjA"}]}' >"$d/jwks_signature_64"
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

# HTTP/1.1 seeds. Byte 0: body limit (0: the server's, 1: 0, 2: 1, 3: 7, 4: 100, 5: 4096);
# byte 1: how the fake exchanges answer (bits 0-1: at request end, at once, after the first body
# bytes; bit 2: streaming; bit 3: left open; bits 4-7: body size); byte 2: bytes already read
# while sniffing; byte 3: chunk-size count, sizes; the connection's bytes.
seed_http1_request() {
  local d="$1"
  local web='Content-Type: application/grpc-web+proto\r\n'
  { printf '\x00\x30\x00\x00'
    printf "POST /xmtp.backend.v1.QueryService/Query HTTP/1.1\r\nHost: x\r\n${web}"
    printf 'Content-Length: 5\r\n\r\n\x00\x00\x00\x00\x00'; } >"$d/content_length"
  { printf '\x00\x10\x18\x02\x05\x01'
    printf 'POST /p HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n'
    printf '3\r\nabc\r\n2;ext=1\r\nde\r\n0\r\nX-Trailer: t\r\n\r\n'
    printf 'GET / HTTP/1.1\r\nConnection: close\r\n\r\n'; } >"$d/chunked_then_pipelined"
  { printf '\x04\x02\x00\x03\x07\x01\x00'
    printf 'POST /p HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1000\r\n'
    printf 'a%.0s' $(seq 200); } >"$d/chunked_over_limit"
  { printf '\x03\x00\x00\x00'
    printf 'POST /p HTTP/1.1\r\nContent-Length: 100\r\n\r\n0123456789'; } >"$d/content_length_over_limit"
  { printf '\x00\x01\x00\x00'
    printf 'OPTIONS /p HTTP/1.1\r\nOrigin: https://a\r\nAccess-Control-Request-Method: POST\r\n\r\n'
    printf 'POST /p HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc'; } >"$d/early_answer"
  { printf '\x00\x5c\x08\x00'
    printf "POST /xmtp.backend.v1.SubscriptionService/SubscribeStatic HTTP/1.1\r\n${web}"
    printf 'Content-Length: 0\r\n\r\n'; } >"$d/streaming_left_open"
  { printf '\x00\x04\x00\x00'
    printf 'POST /p HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffff\r\n'; } >"$d/chunk_size_overflow"
  { printf '\x00\x00\x40\x00'
    printf 'GET / HTTP/1.1\r\nX-Big: '; printf 'v%.0s' $(seq 17000); printf '\r\n\r\n'; } >"$d/header_over_limit"
  { printf '\x00\x00\x00\x00'
    printf 'GET / HTTP/1.0\r\n\r\nGET / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab'; } >"$d/http10_and_duplicate_length"
}

# Protobuf helpers for the message seeds (hex in, hex out; field numbers below 16).
varint() {
  local n=$1 out=""
  while ((n >= 128)); do out+=$(printf '%02x' $(((n & 127) | 128))); n=$((n >> 7)); done
  printf '%s%02x' "$out" "$n"
}
pb_bytes() { printf '%02x%s%s' $(($1 << 3 | 2)) "$(varint $((${#2} / 2)))" "$2"; }  # FIELD HEX
pb_int() { printf '%02x%s' $(($1 << 3)) "$(varint "$2")"; }                          # FIELD N
ascii() { printf '%s' "$1" | xxd -p | tr -d '\n'; }
repeat() { local out="" i; for ((i = 0; i < $2; i++)); do out+="$1"; done; printf '%s' "$out"; }
# The payload of seed file FILE after its first SKIP steering bytes, as hex.
payload_hex() { tail -c +$(($2 + 1)) "$1" | xxd -p | tr -d '\n'; }

# Request-message seeds (API.md 2.1). Byte 0: the request type, in the order of kRequests in
# tests/fuzz/request_message_fuzz.cc; the rest is the message. The payloads of the publish seeds
# are the VALIDATION.md vectors of the targets above.
seed_request_message() {
  local d="$1" ref="$TMP/ref"
  mkdir -p "$ref/kp" "$ref/id" "$ref/mls"
  seed_key_package "$ref/kp"; seed_identity_update "$ref/id"; seed_mls_message "$ref/mls"
  local g16=00112233445566778899aabbccddeeff k32=00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff
  local gm="00$g16" welcome="01$k32" inbox="02$k32" kp="03$k32" log="04$g16"
  tq() { pb_bytes 1 "$(pb_bytes 1 "$1")$(pb_bytes 2 "$(pb_int 1 "$2")")"; }  # TOPIC CURSOR
  topic() { pb_bytes 1 "$(pb_bytes 1 "$1")"; }
  local empties; empties=$(repeat 0a00 8192)
  w() { unhex "$2" >"$d/$1"; }
  w query "00$(tq "$gm" 5)$(tq "$welcome" 0)$(tq "$log" 9223372036854775807)$(pb_int 2 100)"
  w query_bad_topics "00$(tq 05ff 0)$(tq "00$k32" 0)$(tq "" 0)"
  w query_empty_entries "00$empties"
  w newest "01$(topic "$gm")$(topic "$kp")$(topic "$inbox")$(pb_int 2 1)"
  w get "02$(pb_int 1 42)"
  local group_message key_package identity_update welcome_message commit_log
  group_message=$(pb_bytes 1 "$(pb_bytes 1 "$(payload_hex "$ref/mls/private_commit" 1)")")
  key_package=$(pb_bytes 3 "$(pb_bytes 1 "$(payload_hex "$ref/kp/minimal" 1)")")
  identity_update=$(pb_bytes 4 "$(payload_hex "$ref/id/registration" 1)")
  welcome_message=$(pb_bytes 2 "$(pb_bytes 1 "$(pb_bytes 1 "$k32")$(pb_bytes 2 abcd)$(pb_bytes 3 "$k32")")")
  commit_log=$(pb_bytes 5 "$(pb_bytes 1 "$(pb_bytes 1 "$g16")$(pb_int 2 3)")")
  w publish "03$(pb_bytes 1 "$group_message")$(pb_bytes 1 "$key_package")$(pb_bytes 1 "$welcome_message")"
  w publish_identity_and_log "03$(pb_bytes 1 "$identity_update")$(pb_bytes 1 "$commit_log")"
  w publish_empty_envelopes "03$empties"
  w subscribe_update "04$(pb_bytes 1 "$(pb_int 1 1)$(tq "$gm" 0)$(pb_bytes 3 "$(pb_bytes 1 "$welcome")")")"
  w subscribe_ping "04$(pb_bytes 2 "$(pb_int 1 7)")"
  w subscribe_pong "04$(pb_bytes 3 "$(pb_int 1 7)")"
  w subscribe_static "05$(tq "$gm" 3)$(tq "$inbox" 0)"
  # identifier_kind -1 as a 5-byte varint: re-encoded in 10 bytes.
  w get_inbox_ids_negative_kind "06$(pb_bytes 1 "10ffffffff0f")"
  w get_inbox_ids "06$(pb_bytes 1 "$(pb_bytes 1 "$(ascii 0x34dd95109b587ca90778cde5e2dd87e022453699)")$(pb_int 2 1)")$(pb_bytes 1 "$(pb_bytes 1 "$(ascii 03a1)")$(pb_int 2 2)")"
  w verify_scw "07$(pb_bytes 1 "$(pb_bytes 1 "$(ascii eip155:1:0x34dd95109b587ca90778cde5e2dd87e022453699)")$(pb_int 2 100)$(pb_bytes 3 "$k32")$(pb_bytes 4 00)")"
  w get_configuration "08"
  w register "09$(pb_bytes 1 "$k32")$(pb_bytes 2 "$k32")$(pb_bytes 5 "$(pb_bytes 1 "$(ascii https://push.example)")")"
  w unregister "0a$(pb_bytes 1 "$k32")$(pb_bytes 2 "$k32")"
  w update_subscriptions "0b$(pb_bytes 1 "$k32")$(pb_bytes 3 "$(pb_bytes 1 "$gm")$(pb_int 2 5)$(pb_bytes 3 "$k32$g16${g16:0:20}")$(pb_int 4 1)")$(pb_bytes 4 "$welcome")"
  w create_upload "0c$(pb_bytes 1 "$k32")$(pb_int 2 1000)"
  w health_check "0d$(pb_bytes 1 "$(ascii xmtp.backend.v1.QueryService)")"
  w health_list "0e"
}

# V3 wire seeds (tests/fuzz/v3_wire_fuzz.cc). Byte 0: the case; the rest as protoc would write it.
seed_v3_wire() {
  local d="$1"
  unhex "000a2a0a280a206b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b1201773a016d" >"$d/welcome_v1"
  unhex "000a2712250a206b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b120170" >"$d/welcome_pointer"
  unhex "000a2a0a280a206b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b1201773a016d0a2712250a206b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b1201700a00" >"$d/welcomes_three"
  unhex "010a050a03746c73" >"$d/key_package_upload"
  unhex "020a050a01641801" >"$d/group_message"
  unhex "0312080a060a016b2a016d" >"$d/welcome_row"
  # A field numbered 2^29 - 1, which the shift would push past protobuf's limit (found by this target).
  unhex "0312081206f8ffffff0f64" >"$d/welcome_row_top_field"
  unhex "042a080a016512030a0173" >"$d/commit_log_row"
  unhex "0522071a05696e626f78" >"$d/identity_row"
  unhex "060a0e0a0c0a050a010010031201042007" >"$d/subscribe_mutate"
  unhex "070e0a050801220164" >"$d/subscribe_row"
}
# Envelope seeds (src/validate/envelope_fuzz.cc). Byte 0 % 3: 0 ClientEnvelope, 1 GroupMessage
# data, 2 key_package_tls_serialized.
seed_envelope() {
  local d="$1" f
  seed_request_message "$TMP/ref/requests"
  # Each publish seed's envelopes, one per file.
  local i=0 hex
  for f in publish publish_identity_and_log; do
    hex=$(payload_hex "$TMP/ref/requests/$f" 1)
    while [[ -n "$hex" ]]; do
      # One field 1 entry: tag 0a, a varint length, the envelope.
      local rest=${hex:2} len=0 shift=0 byte
      while :; do
        byte=$((16#${rest:0:2})); rest=${rest:2}
        len=$((len | (byte & 127) << shift)); shift=$((shift + 7))
        ((byte & 128)) || break
      done
      unhex "00${rest:0:$((len * 2))}" >"$d/envelope_$i"
      hex=${rest:$((len * 2))}
      i=$((i + 1))
    done
  done
  unhex "01$(payload_hex "$TMP/ref/mls/private_commit" 1)" >"$d/group_message"
  unhex "01$(payload_hex "$TMP/ref/mls/public_remove_proposal" 1)" >"$d/group_message_proposal"
  unhex "02$(payload_hex "$TMP/ref/kp/xmtp_like" 1)" >"$d/key_package"
}

# ---------------------------------------------------------------------------------------------
# Runs
# ---------------------------------------------------------------------------------------------
# Largest input libFuzzer may build, per target: room for an HTTP/1.1 head over the 16 KiB
# header limit and a body, and for request messages of a few thousand small sub-messages.
max_len() {
  case "$1" in
    http1_request_fuzz) echo 40000 ;;
    request_message_fuzz|envelope_fuzz) echo 65536 ;;
    *) echo 8192 ;;
  esac
}

mkdir -p "$ARTIFACTS"
failed=0
rows=()
for t in "${targets[@]}"; do
  if [[ -n "$corpus_root" ]]; then
    corpus="$corpus_root/$t"
  else
    corpus="$TMP/corpus/$t"
  fi
  mkdir -p "$corpus" "$TMP/ref/requests"
  "seed_${t%_fuzz}" "$corpus"
  env=()
  if [[ -n "$decode_ratio" && "$t" == request_message_fuzz ]]; then
    env=(XB_FUZZ_DECODE_RATIO="$decode_ratio")
  fi
  before=$(ls "$ARTIFACTS" | wc -l)
  log "running $t for ${seconds} s ($(ls "$corpus" | wc -l) inputs in $corpus)"
  rc=0
  env "${env[@]}" "$BUILD/tests/fuzz/$t" -max_total_time="$seconds" -timeout="$UNIT_TIMEOUT_S" \
    -rss_limit_mb="$RSS_LIMIT_MB" -malloc_limit_mb="$MALLOC_LIMIT_MB" -max_len="$(max_len "$t")" \
    -print_final_stats=1 -artifact_prefix="$ARTIFACTS/$t-" "$corpus" >"$TMP/$t.log" 2>&1 || rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$TMP/$t.log")
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$TMP/$t.log")
  last=$(grep -E '^#[0-9]+' "$TMP/$t.log" | tail -n 1 || true)
  cov=$(grep -oE 'cov: [0-9]+' <<<"$last" | cut -d' ' -f2 || true)
  ft=$(grep -oE 'ft: [0-9]+' <<<"$last" | cut -d' ' -f2 || true)
  corp=$(grep -oE 'corp: [0-9]+/[^ ]+' <<<"$last" | cut -d' ' -f2 || true)
  if [[ $rc -ne 0 ]]; then
    failed=1
    result="CRASH (exit $rc)"
    log "$t crashed (exit $rc):"
    grep -E 'ERROR|invariant broken|runtime error|SUMMARY|decoding .* hold|#[0-9]+ (0x[0-9a-f]+ )?in |Test unit written' \
      "$TMP/$t.log" | head -n 40 >&2 || true  # head may close the pipe early
    for f in $(ls -t "$ARTIFACTS" | head -n $(($(ls "$ARTIFACTS" | wc -l) - before))); do
      log "input $ARTIFACTS/$f ($(stat -c %s "$ARTIFACTS/$f") bytes):"
      od -An -tx1 -v "$ARTIFACTS/$f" | head -n 16 >&2 || true
    done
  else
    result=ok
  fi
  rows+=("$(printf '%-22s %10s %8s %7s %8s %14s  %s' "$t" "${execs:-?}" "${rate:-?}" \
    "${cov:-?}" "${ft:-?}" "${corp:-?}" "$result")")
done

echo
echo "== fuzz results: ${seconds} s per target (clang-14, -fsanitize=fuzzer,address,undefined)"
printf '%-22s %10s %8s %7s %8s %14s  %s\n' target runs execs/s cov ft corpus result
printf '%s\n' "${rows[@]}"
exit "$failed"
