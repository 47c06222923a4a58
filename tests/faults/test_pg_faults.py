"""PostgreSQL faults under load (issue 32, deliverable 2): two instances on the shared primary +
replica behind HAProxy (tests/cluster/), publishers, reconnecting Subscribe streams and a Query
reader running, while the primary is restarted (`pg_ctl stop -m fast`, held down, started again)
or the replica is stopped and restarted, or its replay paused. Each test prints, per fault:
envelopes acknowledged, envelopes found afterwards, stream gaps, time to recover, and what health,
metrics and a probe of each RPC class said during the fault; then the ordering checker's verdict.
The cluster is restored (primary up, replay resumed, replica streaming) whatever happens."""
import contextlib
import os
import time
import unittest

import cluster as C
import faults as F
import harness
import load as L
import stream_client as S

LOAD_BEFORE_S = float(os.environ.get("XB_FAULT_LOAD_S", "2"))
LOAD_AFTER_S = float(os.environ.get("XB_FAULT_LOAD_S", "3"))
DOWN_S = 3  # how long a stopped server stays down: long enough to sample health and metrics
INSTANCES = 2


@contextlib.contextmanager
def deployment(replica):
    """(balancer or instance address, [instances]): INSTANCES instances on the primary and the
    replica behind HAProxy (tests/cluster/), or with `replica` False one instance on the primary
    alone, which then also reads its streams from it."""
    if replica:
        with C.Cluster(instances=INSTANCES) as cluster:
            yield cluster.target, cluster.instances
        return
    database = harness.create_pg_database()
    server = harness.Server(config=S.config(database=database, replica=False),
                            binary=harness.TEST_BINARY)
    try:
        server.start()
        yield server.target, [server]
    finally:
        server.kill()
        server.tmp.cleanup()
        database.drop()
    server.check_sanitizers()


@unittest.skipUnless(C.HAVE_PG, "needs XB_PG_PRIMARY and XB_PG_REPLICA")
class PgFaultTest(unittest.TestCase):
    def run_fault(self, label, fault, undo, replica=True):
        """Load through a fresh deployment; `fault()` then `undo()` DOWN_S later, observing the
        instances meanwhile. Returns (report, observations, metrics before, metrics after)."""
        with deployment(replica) as (target, servers), F.PgCluster() as pg:
            self.pg = pg
            self.servers = servers
            load = L.Load(target, "%s%d" % (label[:4], os.getpid()))
            load.start()
            time.sleep(LOAD_BEFORE_S)
            before = [S.scrape(s) for s in servers]
            fault_at = time.monotonic()
            fault()
            seen = F.observe(servers, DOWN_S, S.gtopic("probe"))
            undo()
            back_at = time.monotonic()
            with L.new_channel(target) as ch:
                caught_up_s = F.catch_up_time(load, ch)
                time.sleep(LOAD_AFTER_S)
                after = [S.scrape(s) for s in servers]
                load.finish(ch)
                report = load.verify(servers, label)
                # Recovered: publishing again, every stream reopened and caught up with what
                # was published before the fault ended.
                report.recover_s = max(F.recovered_after(load, fault_at, back_at),
                                       caught_up_s if caught_up_s is not None else float("inf"))
                resent, partial = F.partial_requests(load, ch)
            pg.restore()
        print("%s: down %.2f s" % (label, back_at - fault_at))
        for line in seen.lines():
            print("  " + line)
        print("  failed publishes resent: %d, stored in part: %d" % (resent, partial))
        F.check_no_loss(self, report)
        self.assertEqual(partial, 0)
        # OPS-004, OPS-006: a database fault is no drain: every instance stays SERVING (and in
        # the balancer's rotation), whatever its streams do.
        self.assertEqual(set(seen.health), {"SERVING"})
        self.assertEqual(seen.gauges["xmtp_backend_ready"], {1.0})
        return report, seen, before, after

    def logged(self, message):
        """Whether some instance wrote a log line with `message`."""
        return any(r.get("msg") == message for s in self.servers for r in s.log_records())

    # verifies: OPS-006, OPS-009, API-220 — PostgreSQL primary restart under load.
    def test_primary_restart_under_load(self):
        primary = F.PgNode(os.environ["XB_PG_PRIMARY"], "primary")
        report, seen, before, after = self.run_fault(
            "PostgreSQL primary restart (pg_ctl -m fast, held down %d s)" % DOWN_S,
            primary.stop, primary.start)
        # A publish while the primary is down fails UNAVAILABLE with the store's words.
        self.assertEqual(seen.codes("Publish"), {"UNAVAILABLE"}, seen.probes["Publish"])
        self.assertIn(("UNAVAILABLE", "the store is unavailable"), seen.probes["Publish"])
        self.assertEqual(seen.codes("Query"), {"UNAVAILABLE"}, seen.probes["Query"])
        self.assertGreater(report.publish_failures["UNAVAILABLE"], 0)
        self.assertLessEqual(set(report.publish_failures), {"UNAVAILABLE"})
        # Counted as connection failures (xmtp_db_errors_total, xmtp_db_failures_total).
        delta = sum(S.value(a, "xmtp_db_errors_total", kind="connection") -
                    S.value(b, "xmtp_db_errors_total", kind="connection")
                    for a, b in zip(after, before))
        causes = sum(S.value(a, "xmtp_db_failures_total", cause="connection") for a in after)
        print("  xmtp_db_errors_total{kind=connection} +%d, "
              "xmtp_db_failures_total{cause=connection} %d" % (delta, causes))
        self.assertGreater(delta, 0)
        self.assertGreater(causes, 0)
        self.assertTrue(self.logged("store failed: connection lost"))
        self.assertLessEqual(set(report.stream_ends), {"UNAVAILABLE", "CANCELLED"})
        self.assertLess(report.recover_s, 15)

    # verifies: OPS-006 — PostgreSQL primary restart under load, the primary also the read
    # database: the tailer loses its connection, so streams end and recover.
    def test_primary_restart_without_replica_under_load(self):
        primary = F.PgNode(os.environ["XB_PG_PRIMARY"], "primary")
        report, seen, before, after = self.run_fault(
            "PostgreSQL primary restart, no replica (held down %d s)" % DOWN_S,
            primary.stop, primary.start, replica=False)
        for rpc in ("Publish", "Query", "QueryNewest"):
            self.assertEqual(seen.codes(rpc), {"UNAVAILABLE"}, seen.probes[rpc])
        self.assertLessEqual(set(report.publish_failures), {"UNAVAILABLE"})
        # OPS-006: every open stream ended UNAVAILABLE, opens refused UNAVAILABLE until
        # recovery completed (xmtp_tailer_ready 0 meanwhile), health SERVING throughout.
        self.assertEqual(set(report.stream_ends), {"UNAVAILABLE"})
        self.assertIn(("UNAVAILABLE", "stream recovery restarted: the read database connection "
                       "was lost; reconnect from your cursors"), report.stream_end_details)
        self.assertIn(0.0, seen.gauges["xmtp_tailer_ready"])
        self.assertEqual(S.value(after[0], "xmtp_tailer_ready"), 1.0)
        self.assertGreater(S.value(after[0], "xmtp_db_failures_total", cause="connection"), 0)
        self.assertLess(report.recover_s, 15)

    # verifies: OPS-006, OPS-009 — the replica stopped and started again under load.
    def test_replica_stopped_and_restarted_under_load(self):
        replica = F.PgNode(os.environ["XB_PG_REPLICA"], "replica")
        report, seen, before, after = self.run_fault(
            "PostgreSQL replica stopped (pg_ctl -m fast, held down %d s) and restarted" % DOWN_S,
            replica.stop, replica.start)
        # OPS-009: Publish and Query are answered from the primary: they never noticed.
        self.assertEqual(dict(report.publish_failures), {})
        self.assertEqual(dict(report.query_failures), {})
        self.assertEqual(seen.codes("Publish"), {"OK"})
        self.assertEqual(seen.codes("Query"), {"OK"})
        # The lagged reads fail: QueryNewest UNAVAILABLE, streams end and reopen UNAVAILABLE
        # until recovery has the replica back (OPS-006), which xmtp_tailer_ready shows.
        self.assertEqual(seen.codes("QueryNewest"), {"UNAVAILABLE"}, seen.probes["QueryNewest"])
        self.assertIn(0.0, seen.gauges["xmtp_tailer_ready"])
        self.assertGreater(report.stream_ends["UNAVAILABLE"], 0)
        self.assertLessEqual(set(report.stream_ends), {"UNAVAILABLE", "CANCELLED"})
        errors = sum(S.value(a, "xmtp_tailer_polls_total", result="error") for a in after)
        print("  xmtp_tailer_polls_total{result=error} %d" % errors)
        self.assertGreater(errors, 0)
        self.assertEqual([S.value(a, "xmtp_tailer_ready") for a in after], [1.0] * INSTANCES)
        self.assertLess(report.recover_s, 15)

    # verifies: OPS-009, OPS-010 — the replica lagging (replay paused) under load.
    def test_replica_lagging_under_load(self):
        replica_url = os.environ["XB_PG_REPLICA"]
        lag = {}

        def pause():
            F.psql(replica_url, "SELECT pg_wal_replay_pause()")

        def resume():
            lag["bytes"] = self.pg.replay_lag_bytes()
            F.psql(replica_url, "SELECT pg_wal_replay_resume()")

        report, seen, before, after = self.run_fault(
            "PostgreSQL replica lagging (replay paused %d s)" % DOWN_S, pause, resume)
        print("  replica replay lag at resume: %d bytes of WAL" % lag["bytes"])
        self.assertGreater(lag["bytes"], 0)
        # Nothing fails: the lagged reads answer an earlier view (the checker proved each a
        # prefix), streams stay open and catch up after the resume.
        self.assertEqual(dict(report.publish_failures), {})
        self.assertEqual(dict(report.query_failures), {})
        self.assertEqual(dict(report.stream_ends), {})
        for rpc in ("Publish", "Query", "QueryNewest"):
            self.assertEqual(seen.codes(rpc), {"OK"}, seen.probes[rpc])
        self.assertEqual(seen.gauges["xmtp_tailer_ready"], {1.0})
        # The lag as a client sees it: QueryNewest trails the probe it had just published.
        self.assertGreater(seen.lagging, 0)
        self.assertLess(report.recover_s, 15)


if __name__ == "__main__":
    unittest.main()
