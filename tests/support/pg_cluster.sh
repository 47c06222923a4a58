#!/usr/bin/env bash
# A throwaway PostgreSQL 15 primary and streaming replica for the `pg` tests (TESTING.md).
#
#   pg_cluster.sh start DIR   DIR must be absent or empty. Starts both servers, unix sockets in DIR,
#                             TCP on 127.0.0.1 at two free ports, and prints on stdout exactly:
#                               export XB_PG_PRIMARY=postgres://postgres@127.0.0.1:P/postgres
#                               export XB_PG_REPLICA=postgres://postgres@127.0.0.1:R/postgres
#                             Progress and server logs go to stderr. On any failure both servers
#                             are stopped, DIR is removed and the exit status is non-zero.
#   pg_cluster.sh stop DIR    Stops both servers and removes DIR. Idempotent: a missing DIR or a
#                             server that is not running is fine.
#
# Callers running under `set -e` must not write `eval "$(pg_cluster.sh start DIR)"` (eval of an empty
# string succeeds and hides the failure); assign first: `env=$(pg_cluster.sh start DIR); eval "$env"`.
#
# PostgreSQL refuses to run as root; as root (CI) the server binaries run as the `postgres` user via
# runuser, otherwise as the calling user. DIR and its parents must be reachable by that user.
set -euo pipefail

readonly PG_BIN=${XB_PG_BIN:-/usr/lib/postgresql/15/bin}

log() { echo "pg_cluster: $*" >&2; }

usage() {
  echo "usage: $0 start|stop DIR" >&2
  exit 2
}

as_pg() {
  if [ "$(id -u)" -eq 0 ]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

# Prints two distinct free TCP ports on 127.0.0.1 (both sockets are held while the second is chosen).
free_ports() {
  python3 - <<'EOF'
import socket
a = socket.socket(); a.bind(("127.0.0.1", 0))
b = socket.socket(); b.bind(("127.0.0.1", 0))
print(a.getsockname()[1], b.getsockname()[1])
a.close(); b.close()
EOF
}

# Stops the server whose data directory is $1 if it is running; never fails.
stop_server() {
  local data=$1
  if [ -f "$data/postmaster.pid" ]; then
    as_pg "$PG_BIN/pg_ctl" -D "$data" -m fast -t 60 stop >/dev/null 2>&1 || true
  fi
  if [ -f "$data/postmaster.pid" ]; then
    # pg_ctl failed (or timed out): end the postmaster by the pid it wrote, then wait for it.
    local pid
    pid=$(head -n 1 "$data/postmaster.pid" 2>/dev/null || true)
    if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
      kill -QUIT "$pid" 2>/dev/null || true
      for _ in $(seq 1 100); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
      done
      kill -KILL "$pid" 2>/dev/null || true
    fi
  fi
}

stop_cluster() {
  local dir=$1
  [ -d "$dir" ] || return 0
  stop_server "$dir/replica"
  stop_server "$dir/primary"
  rm -rf "$dir"
}

# EXIT trap while starting: on failure show the log tails, stop what started, remove the folder.
on_start_exit() {
  local status=$?
  if [ $status -ne 0 ] && [ -n "${STARTING_DIR:-}" ]; then
    local f
    for f in "$STARTING_DIR"/initdb.log "$STARTING_DIR"/primary.log "$STARTING_DIR"/replica.log; do
      if [ -f "$f" ]; then
        log "--- $f"
        tail -n 20 "$f" >&2
      fi
    done
    stop_cluster "$STARTING_DIR"
    log "start failed"
  fi
  return $status
}

start_cluster() {
  local dir=$1
  if [ -e "$dir" ] && [ -n "$(ls -A "$dir" 2>/dev/null)" ]; then
    log "$dir exists and is not empty; refusing to use it"
    exit 1
  fi
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)

  # From here on a failure stops whatever started and removes DIR.
  # (The trap runs after this function's locals are gone, hence the global.)
  STARTING_DIR=$dir
  trap on_start_exit EXIT

  if [ "$(id -u)" -eq 0 ]; then
    chown postgres:postgres "$dir"
  fi
  if ! as_pg test -w "$dir"; then
    log "the server user cannot write $dir (are its parent directories searchable?)"
    exit 1
  fi

  local ports primary_port replica_port
  ports=$(free_ports)
  primary_port=${ports% *}
  replica_port=${ports#* }

  log "initdb"
  as_pg "$PG_BIN/initdb" -D "$dir/primary" -U postgres --auth=trust -E UTF8 >"$dir/initdb.log" 2>&1
  cat >>"$dir/primary/postgresql.conf" <<EOF
listen_addresses = '127.0.0.1'
port = $primary_port
unix_socket_directories = '$dir'
wal_level = replica
max_wal_senders = 4
hot_standby = on
EOF
  echo "host replication all 127.0.0.1/32 trust" >>"$dir/primary/pg_hba.conf"

  log "starting primary on 127.0.0.1:$primary_port"
  as_pg "$PG_BIN/pg_ctl" -D "$dir/primary" -l "$dir/primary.log" -w -t 60 start >/dev/null

  log "base backup"
  as_pg "$PG_BIN/pg_basebackup" -h 127.0.0.1 -p "$primary_port" -U postgres -D "$dir/replica" \
    -R -X stream >>"$dir/initdb.log" 2>&1
  sed -i "s/^port = $primary_port\$/port = $replica_port/" "$dir/replica/postgresql.conf"
  # STORE.md 6: fewer recovery-conflict cancellations of replica snapshots.
  echo "hot_standby_feedback = on" >>"$dir/replica/postgresql.conf"
  # The feedback's xmin holds back pruning on the primary until the next status message (10 s by
  # default); every publish updates its topics' topic_watermark rows, so busy topics piled up
  # unprunable versions that each upsert walked. 1 s: PostgreSQL CPU per publish 204-223 -> 162-168
  # us at 32 clients (docs/configuration.md, "PostgreSQL deployment").
  echo "wal_receiver_status_interval = 1s" >>"$dir/replica/postgresql.conf"

  log "starting replica on 127.0.0.1:$replica_port"
  as_pg "$PG_BIN/pg_ctl" -D "$dir/replica" -l "$dir/replica.log" -w -t 60 start >/dev/null

  # The replica must be a streaming standby that accepts queries before the tests start.
  local in_recovery
  in_recovery=$(as_pg "$PG_BIN/psql" -X -At -h 127.0.0.1 -p "$replica_port" -U postgres \
    -d postgres -c 'SELECT pg_is_in_recovery()')
  if [ "$in_recovery" != "t" ]; then
    log "the replica is not in recovery"
    exit 1
  fi

  trap - EXIT
  echo "export XB_PG_PRIMARY=postgres://postgres@127.0.0.1:$primary_port/postgres"
  echo "export XB_PG_REPLICA=postgres://postgres@127.0.0.1:$replica_port/postgres"
}

[ $# -eq 2 ] || usage
case $1 in
  start) start_cluster "$2" ;;
  stop) stop_cluster "$2" ;;
  *) usage ;;
esac
