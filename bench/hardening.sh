#!/usr/bin/env bash
# bench/hardening.sh: what one abusive client costs the server, for the cases of issue 28 (peak
# and settled RSS, a concurrent good client's latency, time to cut off stalled responses, SIGTERM
# under load N times). Builds Release into build/ unless --binary is given. See bench/README.md.
#
#   bench/hardening.sh [--binary PATH] [--budget-mib N] [--connection-mib N] [--sigterm-runs N]
set -euo pipefail
readonly ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
binary=""
args=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --binary) binary="$2"; shift ;;
    *) args+=("$1") ;;
  esac
  shift
done
if [[ -z "$binary" ]]; then
  "$ROOT/scripts/build" >/dev/null
  binary="$ROOT/build/src/xmtp-backend"
fi
for p in nghttp2-client python3-h2 python3-grpcio; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$p" >/dev/null
done
export PYTHONPATH="$ROOT/build/python:$ROOT/tests/integration:$ROOT/bench" PYTHONDONTWRITEBYTECODE=1
exec /usr/bin/python3 "$ROOT/bench/hardening.py" --binary "$binary" "${args[@]}"
