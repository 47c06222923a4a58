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

# wait_listen PID PORT LOG: 0 once PORT listens; 1 if PID exited first; dies after 30 s.
wait_listen() {
  local deadline=$((SECONDS + 30))
  while [[ -z "$(ss -Htln "sport = :$2")" ]]; do
    kill -0 "$1" 2>/dev/null || return 1
    ((SECONDS < deadline)) || die "pid $1 did not listen on 127.0.0.1:$2 within 30 s (log: $3)"
    sleep 0.05
  done
}

# Builds bench/loadgen (every .cc there but sqlite_raw.cc, with grpc++ generated code from
# proto/, linked with grpc++ and libnghttp2) and bench/loadgen/sqlite_raw.cc into $GEN_DIR, only
# when a source or .proto changed. Our sources compile with -Wall -Wextra (the generated code
# without). Needs ROOT, PROTO_DIR, GEN_DIR, log and die, and the Debian packages libgrpc++-dev,
# protobuf-compiler-grpc, libnghttp2-dev, libsqlite3-dev. No CMakeLists includes them, so the
# main build never needs grpc++ (CI installs it for bench/soak.sh alone).
build_loadgen() {
  local protos stamp f o srcs grpcxx_flags grpcxx_libs
  mapfile -t protos < <(proto_closure xmtp/backend/v1/backend.proto)
  stamp="$(cat "$ROOT/bench/loadgen/"*.cc "$ROOT/bench/loadgen/"*.h "${protos[@]/#/$PROTO_DIR/}" |
    sha256sum | cut -c1-16)"
  if [[ "$(cat "$GEN_DIR/stamp" 2>/dev/null)" == "$stamp" && -x "$GEN_DIR/loadgen" &&
        -x "$GEN_DIR/sqlite_raw" ]]; then
    return
  fi
  log "building bench/loadgen into $GEN_DIR"
  rm -rf "$GEN_DIR/gen" "$GEN_DIR/obj"
  mkdir -p "$GEN_DIR/gen" "$GEN_DIR/obj"
  protoc -I "$PROTO_DIR" --cpp_out="$GEN_DIR/gen" "${protos[@]}"
  protoc -I "$PROTO_DIR" --grpc_out="$GEN_DIR/gen" \
    --plugin=protoc-gen-grpc="$(command -v grpc_cpp_plugin)" xmtp/backend/v1/backend.proto
  read -r -a grpcxx_flags <<<"$(pkg-config --cflags grpc++ protobuf libnghttp2)"
  read -r -a grpcxx_libs <<<"$(pkg-config --libs grpc++ protobuf libnghttp2)"
  srcs=()
  for f in "$ROOT/bench/loadgen/"*.cc; do
    [[ "$f" == */sqlite_raw.cc ]] || srcs+=("$f")
  done
  while IFS= read -r f; do srcs+=("$f"); done < <(find "$GEN_DIR/gen" -name '*.cc' | sort)
  for f in "${srcs[@]}"; do
    o="$GEN_DIR/obj/$(echo "${f#"$ROOT"/}" | tr / _).o"
    printf '%s\0%s\0' "$f" "$o"
  done | xargs -0 -n 2 -P 2 sh -c \
      'case "$2" in */bench/loadgen/*) w="-Wall -Wextra" ;; *) w="" ;; esac
       g++ -std=c++20 -O2 -pthread $w -I"$0" $1 -c "$2" -o "$3"' \
      "$GEN_DIR/gen" "${grpcxx_flags[*]}" || die "loadgen: compile failed"
  g++ -O2 -pthread "$GEN_DIR"/obj/*.o -o "$GEN_DIR/loadgen" "${grpcxx_libs[@]}" \
    || die "loadgen: link failed"
  g++ -std=c++20 -O2 "$ROOT/bench/loadgen/sqlite_raw.cc" -o "$GEN_DIR/sqlite_raw" \
    $(pkg-config --cflags --libs sqlite3) || die "sqlite_raw: build failed"
  echo "$stamp" >"$GEN_DIR/stamp"
}

# Shared by the measuring scripts (they set LOAD_PID="" and end it in their cleanup).
# Runs "$@" in the background as LOAD_PID (so cleanup can end it) and waits for it.
run_tracked() {
  "$@" &
  LOAD_PID=$!
  local rc=0
  wait "$LOAD_PID" || rc=$?
  LOAD_PID=""
  return $rc
}

median() { sort -g | awk '{v[NR]=$1} END {if (NR == 0) print "nan"; else print v[int((NR + 1) / 2)]}'; }

# kv KEY LINE: the value of KEY=... in a RESULT line.
kv() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<" $2"; }

ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (a == "nan" || b == "nan" || b + 0 == 0) print "-"; else printf "%.2f", a / b}'; }

# build_go_peer MAIN_GO DIR BIN PROTO...: builds a grpc-go peer in GOPATH mode (Debian's
# golang-google-grpc-dev, no module proxy) from MAIN_GO and the Go code generated for PROTO...
# (paths under $PROTO_DIR), working in DIR, into BIN. Non-zero when a step fails.
build_go_peer() {
  local main_go=$1 dir=$2 bin=$3 go_map="" f
  shift 3
  rm -rf "$dir/gopath"
  mkdir -p "$dir/gopath/src/xbpeer/cmd"
  for f in "$@"; do
    go_map+=",M$f=xbpeer/pb/$(dirname "$f")"
  done
  go_map="${go_map#,}"
  protoc -I "$PROTO_DIR" --go_out="$dir/gopath/src" --go_opt="$go_map" \
    --go-grpc_out="$dir/gopath/src" --go-grpc_opt="$go_map" "$@" || return 1
  cp "$main_go" "$dir/gopath/src/xbpeer/cmd/" || return 1
  (cd "$dir/gopath/src/xbpeer/cmd" &&
    GO111MODULE=off GOPATH="$dir/gopath:/usr/share/gocode" GOCACHE="$dir/cache" GOFLAGS="" \
      go build -o "$bin" .)
}

# Starts an OTLP sink on 127.0.0.1:PORT in the background (pinned to CPU $3 when given) that
# speaks both protocols of the exporter (telemetry.otlp_protocol), told apart by a connection's
# first bytes: OTLP/HTTP (every POST answered 200 with an empty body) and OTLP/gRPC over h2c (the
# HTTP/2 preface: every call answered with an empty message and grpc-status 0; HPACK is not
# decoded, the answer's fields use the static table only). It keeps "requests bytes" in
# COUNT_FILE (written at most 5 times a second and whenever it goes idle); its script is written
# beside COUNT_FILE. Sets SINK_PID. It stands in for a collector on another machine, so it is kept
# cheap (one thread, kept connections, bodies read and dropped without parsing; for gRPC, flow
# control windows opened to 2^31-1 so that the exporter never waits on them): on a 2-CPU host it
# shares a CPU with the load generator. Usage: start_otlp_sink PORT COUNT_FILE [CPU]
start_otlp_sink() {
  local script="${2%/*}/otlp_sink.py"
  cat >"$script" <<'PY'
import re, selectors, socket, struct, sys, time
LENGTH = re.compile(rb"\r\ncontent-length:[ \t]*([0-9]+)", re.I)
REPLY = b"HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n"
PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
WINDOW = 2**31 - 1
def frame(kind, flags, stream, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", stream) + payload
# SETTINGS_INITIAL_WINDOW_SIZE 2^31-1, and the connection window opened as far.
H2_HELLO = frame(4, 0, 0, struct.pack(">HI", 4, WINDOW)) + frame(8, 0, 0, struct.pack(">I", WINDOW - 65535))
# :status 200 (static 8), content-type (static 31, literal not indexed): application/grpc; an empty
# message; trailers grpc-status: 0 (literal, new name, not indexed), ending the stream.
GRPC_HEAD = b"\x88\x0f\x10\x10application/grpc"
GRPC_TRAILERS = b"\x00\x0bgrpc-status\x010"
def grpc_reply(stream):
    return (frame(1, 4, stream, GRPC_HEAD) + frame(0, 0, stream, b"\0\0\0\0\0") +
            frame(1, 5, stream, GRPC_TRAILERS))
count, size, written = 0, 0, 0.0
def save(force=False):
    global written
    now = time.monotonic()
    if force or now - written > 0.2:
        with open(sys.argv[2], "w") as f:
            f.write("%d %d\n" % (count, size))
        written = now
def h2(sock, st):
    """Frames of st[0] (past the preface); st[1]: connection window consumed since the update."""
    global count, size
    buf, at, out = st[0], 0, []
    while len(buf) - at >= 9:
        n = int.from_bytes(buf[at:at + 3], "big")
        if len(buf) - at < 9 + n:
            break
        kind, flags = buf[at + 3], buf[at + 4]
        stream = int.from_bytes(buf[at + 5:at + 9], "big") & 0x7fffffff
        if kind == 0:  # DATA
            size += n
            st[1] += n
            if flags & 1:
                count += 1
                out.append(grpc_reply(stream))
        elif kind == 1 and flags & 1:  # HEADERS ending the stream: a call without a body
            count += 1
            out.append(grpc_reply(stream))
        elif kind == 4 and not flags & 1:  # SETTINGS: acknowledged
            out.append(frame(4, 1, 0))
        elif kind == 6 and not flags & 1:  # PING: answered
            out.append(frame(6, 1, 0, buf[at + 9:at + 17]))
        at += 9 + n
    st[0] = buf[at:]
    if st[1] > 2**30:
        out.append(frame(8, 0, 0, struct.pack(">I", st[1])))
        st[1] = 0
    if out:
        sock.sendall(b"".join(out))
sel = selectors.DefaultSelector()
listener = socket.create_server(("127.0.0.1", int(sys.argv[1])))
listener.setblocking(False)
sel.register(listener, selectors.EVENT_READ)
# socket -> [buffered head bytes, body bytes still to drop, mode: None (unknown), "h1" or "h2"]
state = {}
while True:
    events = sel.select(0.5)
    if not events:
        save(True)
    for key, _ in events:
        sock = key.fileobj
        if sock is listener:
            conn, _ = listener.accept()
            conn.setblocking(False)
            sel.register(conn, selectors.EVENT_READ)
            state[conn] = [b"", 0, None]
            continue
        try:
            data = sock.recv(262144)
        except (BlockingIOError, InterruptedError):
            continue
        except OSError:
            data = b""
        if not data:
            sel.unregister(sock)
            sock.close()
            del state[sock]
            continue
        st = state[sock]
        if st[2] is None:
            st[0] += data
            data = b""
            if len(st[0]) < len(PREFACE) and PREFACE.startswith(st[0]):
                continue  # not yet told apart
            if st[0].startswith(PREFACE):
                st[0], st[2] = st[0][len(PREFACE):], "h2"
                sock.sendall(H2_HELLO)
            else:
                data, st[0], st[2] = st[0], b"", "h1"
        if st[2] == "h2":
            st[0] += data
            h2(sock, st)
            continue
        while data:
            if st[1] > 0:  # dropping a body
                n = min(st[1], len(data))
                st[1] -= n
                size += n
                data = data[n:]
                if st[1] == 0:
                    count += 1
                    sock.sendall(REPLY)
                continue
            st[0] += data
            data = b""
            end = st[0].find(b"\r\n\r\n")
            if end < 0:
                break
            m = LENGTH.search(st[0], 0, end + 2)
            st[1] = int(m.group(1)) if m else 0
            data = st[0][end + 4:]
            st[0] = b""
            if st[1] == 0:
                count += 1
                sock.sendall(REPLY)
    save()
PY
  if [[ -n "${3:-}" ]]; then
    taskset -c "$3" python3 "$script" "$1" "$2" &
  else
    python3 "$script" "$1" "$2" &
  fi
  SINK_PID=$!
}

# start_pg_cluster DIR LOG: a throwaway PostgreSQL 15 primary + streaming replica
# (tests/support/pg_cluster.sh) in DIR, its progress and server logs in LOG. Exports XB_PG_PRIMARY
# and XB_PG_REPLICA and sets PG_BASE (the primary's URL without a database:
# postgres://postgres@127.0.0.1:PORT) and PG_VERSION. Dies when it cannot start. Needs ROOT, log
# and die; the caller's cleanup stops it (stop_pg_cluster).
start_pg_cluster() {
  local env
  log "starting a throwaway PostgreSQL 15 cluster"
  env=$("$ROOT/tests/support/pg_cluster.sh" start "$1" 2>"$2") \
    || die "pg_cluster.sh start failed: $(tail -n 5 "$2")"
  eval "$env"
  PG_BASE="${XB_PG_PRIMARY%/*}"
  PG_VERSION="$(psql "$XB_PG_PRIMARY" -XAtc 'SHOW server_version')"
}

# stop_pg_cluster DIR: stops the cluster start_pg_cluster started there and removes DIR; an empty
# DIR is nothing to do. Never fails.
stop_pg_cluster() {
  [[ -n "$1" ]] || return 0
  "$ROOT/tests/support/pg_cluster.sh" stop "$1" >/dev/null 2>&1 || true
}

# Stops a process we started: SIGTERM, up to `grace` tenths of a second (default 100) for it to
# exit, then SIGKILL; reaps it. An empty pid is nothing to do.
stop_pid() {
  local pid=$1 grace=${2:-100}
  [[ -n "$pid" ]] || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq "$grace"); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}
