# Shell helpers shared by the bench scripts (sourced, never run). The sourcing script defines
# log, die, PACKAGES and PROTO_DIR first.

# Installs the Debian packages of PACKAGES that are missing (idempotent).
ensure_packages() {
  local missing=() p
  for p in "${PACKAGES[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
      missing+=("$p")
    fi
  done
  if [[ ${#missing[@]} -eq 0 ]]; then
    return
  fi
  log "installing: ${missing[*]}"
  [[ "$(id -u)" -eq 0 ]] || die "need root to apt-get install ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
}

# The .proto files $@ and everything they import (well-known types excepted).
proto_closure() {
  local -A seen=()
  local queue=("$@") f dep
  while [[ ${#queue[@]} -gt 0 ]]; do
    f="${queue[0]}"
    queue=("${queue[@]:1}")
    [[ -n "${seen[$f]:-}" ]] && continue
    seen[$f]=1
    echo "$f"
    while read -r dep; do
      [[ "$dep" == google/protobuf/* ]] || queue+=("$dep")
    done < <(sed -n 's/^import \(public \)\{0,1\}"\([^"]*\)";.*/\2/p' "$PROTO_DIR/$f")
  done
}

# A free port below the ephemeral range (an ephemeral port may be taken by an outgoing
# connection at any moment).
pick_port() {
  local low port
  read -r low _ </proc/sys/net/ipv4/ip_local_port_range
  ((low > 12000)) || low=32768
  while true; do
    port=$((10000 + RANDOM % (low - 10000)))
    if [[ -z "$(ss -Htan "sport = :$port")" ]]; then
      echo "$port"
      return
    fi
  done
}
