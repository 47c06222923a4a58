"""Shared pieces of the fault suites (issue 32, deliverable 2): the PostgreSQL servers of
tests/support/pg_cluster.sh as things a test can stop, start and pause (and always puts back), a
sampler of what health and metrics said while a fault lasted, the resend that proves no failed
publish was stored in part, and the checks every fault shares. The cluster, the load and the
ordering checker are tests/cluster/'s (cluster.py, load.py)."""
import collections
import os
import subprocess
import time

import grpc

import envelopes as E
import harness
import load as L
import ordering_check
import stream_client as S

PG_BIN = os.environ.get("XB_PG_BIN", "/usr/lib/postgresql/15/bin")


def psql(url, sql, timeout=10):
    """One statement on `url`; its output (unaligned, tuples only), or raises."""
    done = subprocess.run(["psql", "-X", "-At", "-v", "ON_ERROR_STOP=1", url, "-c", sql],
                          capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        raise AssertionError("psql failed: " + done.stderr.strip())
    return done.stdout.strip()


def _as_pg(command):
    """PostgreSQL refuses to run as root: as root (CI) its tools run as `postgres`, as
    pg_cluster.sh runs them."""
    return ["runuser", "-u", "postgres", "--", *command] if os.geteuid() == 0 else command


class PgNode:
    """One server of the pg_cluster.sh cluster, `role` "primary" or "replica", found from its URL:
    its data directory is what the server says (`SHOW data_directory`), its log the one
    pg_cluster.sh started it with (DIR/<role>.log beside DIR/<role>)."""

    def __init__(self, url, role):
        self.url = url
        self.role = role
        self.data_dir = psql(url, "SHOW data_directory")
        self.log_path = os.path.join(os.path.dirname(self.data_dir), role + ".log")

    def _pg_ctl(self, *args):
        # The server inherits no pipe of ours: pg_ctl would otherwise wait on its output.
        return subprocess.run(_as_pg([os.path.join(PG_BIN, "pg_ctl"), "-D", self.data_dir, *args]),
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True, timeout=90)

    def stop(self):
        """`pg_ctl stop -m fast`: sessions are terminated, then a shutdown checkpoint."""
        done = self._pg_ctl("-m", "fast", "-w", "-t", "60", "stop")
        if done.returncode != 0:
            raise AssertionError("pg_ctl stop of the %s failed: %s" % (self.role, done.stderr))

    def start(self):
        done = self._pg_ctl("-l", self.log_path, "-w", "-t", "60", "start")
        if done.returncode != 0:
            raise AssertionError("pg_ctl start of the %s failed: %s" % (self.role, done.stderr))

    def running(self):
        return self._pg_ctl("status").returncode == 0


class PgCluster:
    """The shared primary and replica (XB_PG_PRIMARY, XB_PG_REPLICA). A context manager that
    leaves them as it found them whatever the test did: both running, replay resumed and the
    replica streaming from the primary and caught up with it (other suites share the cluster,
    after it: these suites hold both of its ctest locks, tests/CMakeLists.txt)."""

    def __init__(self):
        self.primary = PgNode(os.environ["XB_PG_PRIMARY"], "primary")
        self.replica = PgNode(os.environ["XB_PG_REPLICA"], "replica")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.restore()

    def restore(self, timeout=60):
        for node in (self.primary, self.replica):
            if not node.running():
                node.start()
        psql(self.replica.url, "SELECT pg_wal_replay_resume()")
        harness.wait_for(self.replica_streaming, timeout, "the replica to stream again")
        target = psql(self.primary.url, "SELECT pg_current_wal_lsn()")
        harness.wait_for(lambda: self.replayed(target), timeout, "the replica to catch up")

    def replica_streaming(self):
        try:
            return psql(self.primary.url, "SELECT count(*) FROM pg_stat_replication "
                        "WHERE state = 'streaming'") != "0"
        except (AssertionError, subprocess.TimeoutExpired):
            return False

    def replayed(self, lsn):
        return psql(self.replica.url, "SELECT pg_last_wal_replay_lsn() >= '%s'::pg_lsn" %
                    lsn) == "t"

    def replay_lag_bytes(self):
        """WAL the primary wrote that the replica has not replayed (what an operator's
        replication monitoring shows: STORE.md 6, no backend metric carries it)."""
        lsn = psql(self.primary.url, "SELECT pg_current_wal_lsn()")
        return int(float(psql(self.replica.url,
                              "SELECT pg_wal_lsn_diff('%s', pg_last_wal_replay_lsn())" % lsn)))


class Observations:
    """What each instance told clients while a fault lasted (`observe`): health answers, metric
    values and the status of a probe Publish, Query and QueryNewest sent to it directly."""

    def __init__(self):
        self.health = collections.Counter()  # status name or the failing call's code
        self.gauges = collections.defaultdict(set)  # metric name -> values seen
        self.probes = collections.defaultdict(collections.Counter)  # rpc -> (code, details)
        self.lagging = 0  # QueryNewest answers that missed the probe published just before

    def probe(self, rpc, call):
        """Counts the outcome of `call`; returns its result (None when it failed)."""
        try:
            result = call()
            self.probes[rpc][("OK", "")] += 1
            return result
        except grpc.RpcError as e:
            self.probes[rpc][(e.code().name, e.details())] += 1
            return None

    def codes(self, rpc):
        return {code for code, _ in self.probes[rpc]}

    def lines(self):
        out = ["health answers: %s" % dict(self.health)]
        out += ["%s seen: %s" % (name, sorted(values)) for name, values in self.gauges.items()]
        out += ["probe %s: %s" % (rpc, dict(c)) for rpc, c in self.probes.items()]
        out.append("QueryNewest behind the probe just published: %d times" % self.lagging)
        return out


GAUGES = ("xmtp_backend_ready", "xmtp_tailer_ready")


def observe(servers, seconds, topic, out=None, connect=S.own_channel):
    """Samples every server in `servers` until `seconds` have passed: health, the GAUGES and a
    probe of each RPC class (Publish on the primary, Query on the primary, QueryNewest on the read
    copy, OPS-009), on the channel `connect(server)` opens (load.new_channel with a token when
    auth is on). Returns the Observations (`out` when given, to add to it)."""
    import health_pb2
    out = out or Observations()
    deadline = time.monotonic() + seconds
    n = 0
    while time.monotonic() < deadline:
        for server in servers:
            with connect(server) as ch:
                try:
                    status = S.health_status(ch, timeout=2)
                    out.health[health_pb2.HealthCheckResponse.ServingStatus.Name(status)] += 1
                except grpc.RpcError as e:
                    out.health[e.code().name] += 1
                text = S.scrape(server)
                for name in GAUGES:
                    out.gauges[name].add(S.value(text, name))
                envs = [E.group_message(topic[1:], 1, b"probe-%d-%d" % (server.port, n))]
                published = out.probe("Publish", lambda: S.publish(ch, envs, timeout=5))
                out.probe("Query", lambda: ordering_check.read_all(ch, topic))
                newest = out.probe("QueryNewest", lambda: S.newest(ch, [topic]))
                if published and newest is not None and newest[topic] < published[0]:
                    out.lagging += 1  # the read copy does not show the probe just published
        n += 1
        time.sleep(0.2)
    return out


def counters(servers, name, **labels):
    """The sum over `servers` of metric `name` with `labels`."""
    return sum(S.value(S.scrape(s), name, **labels) for s in servers)


# verifies: API-220 (all or none), API-222 (a resend returns the stored ids) — after a fault.
def partial_requests(load, channel):
    """Resends every publish that failed during the run; returns how many came back partly
    stored (some envelopes answered with an id from before the resend, a duplicate, and some
    with a new one). Call after Load.verify: the resend adds what was not stored."""
    requests = [r for p in load.publishers for r in p.failed_requests]
    heads = {t: (ids[-1] if ids else 0) for t in load.topics
             for ids in [ordering_check.read_all(channel, t)]}
    partial = 0
    for topics, envs in requests:
        ids = S.publish(channel, envs, timeout=30)
        stored = [i <= heads[t] for i, t in zip(ids, topics)]
        if any(stored) and not all(stored):
            partial += 1
    return len(requests), partial


def recovered_after(load, fault_at, back_at):
    """Seconds from `back_at` (the fault undone) until publishing succeeded again and every
    stream ended by the fault was registered again; 0 when nothing had to recover."""
    times = [t for t in (load.stream_recovery_after(fault_at),
                         load.publish_recovery_after(fault_at)) if t is not None]
    return max(0.0, max(times) - (back_at - fault_at)) if times else 0.0


def catch_up_time(load, channel, timeout=30):
    """Seconds until every stream has delivered each topic up to its head now (Query, the
    primary); None when they did not within `timeout` (Load.verify then counts the gaps)."""
    started = time.monotonic()
    heads = harness.wait_for(lambda: _heads(load, channel), timeout, "Query to answer")
    while not all(s.caught_up(heads) for s in load.subscribers):
        if time.monotonic() - started > timeout:
            return None
        time.sleep(0.05)
    return time.monotonic() - started


def _heads(load, channel):
    try:
        return {t: (ids[-1] if ids else 0) for t in load.topics
                for ids in [ordering_check.read_all(channel, t)]}
    except grpc.RpcError:
        return None


def check_no_loss(test, report):
    """The properties every fault keeps (load.check_no_loss)."""
    L.check_no_loss(test, report, min_acknowledged=50)