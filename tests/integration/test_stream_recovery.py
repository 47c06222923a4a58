"""Stream recovery on PostgreSQL (OPS-006; STORE.md 4.3, 5.2, 5.3), with no replica configured so
that the tailer reads the primary: its connection is the one named 'xmtp-backend tailer' in
pg_stat_activity of the test's database.

Recovery is made observable by making it slow: a psql session holds the allocation barrier
(advisory lock (0, 2)) so the new generation's boundary advance keeps timing out
(publishing.max_barrier_wait_ms) until the test releases it.
"""
import hashlib
import queue
import subprocess
import threading
import unittest

import grpc

import envelopes as E
import harness
import health_pb2
import stream_client as S

EXTRA = """[streams]
poll_interval_ms = 50
max_gap_ranges = {gaps}
[publishing]
max_barrier_wait_ms = 200
"""


class PrimaryOnlyEngine(S.PostgresEngine):
    replica = False


class Psql:
    """One interactive psql session; every read of its output has a deadline."""

    def __init__(self, dsn):
        self.proc = subprocess.Popen(["psql", "-X", "-q", "-t", "-A", "-v", "ON_ERROR_STOP=1", dsn],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True)
        self.lines = queue.Queue()
        self.n = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def run(self, sql, timeout=30):
        """Runs `sql` and returns its non-empty output lines."""
        self.n += 1
        marker = "done-%d" % self.n
        self.proc.stdin.write(sql.rstrip() + "\nSELECT '%s';\n" % marker)
        self.proc.stdin.flush()
        out = []
        while True:
            try:
                line = self.lines.get(timeout=timeout)
            except queue.Empty:
                raise AssertionError("psql did not answer %r in time" % sql) from None
            if line is None:
                raise AssertionError("psql ended: %r" % out)
            if line == marker:
                return out
            if line:
                out.append(line)

    def close(self):
        try:
            self.proc.stdin.close()
            self.proc.wait(10)
        except Exception:  # noqa: BLE001
            self.proc.kill()
            self.proc.wait(10)
        self.proc.stdout.close()


def query(dsn, sql):
    return subprocess.run(["psql", "-X", "-t", "-A", "-v", "ON_ERROR_STOP=1", dsn, "-c", sql],
                          capture_output=True, text=True, check=True, timeout=30).stdout.split()


def try_open_static(server, topic):
    """Opens a static stream; returns it once Started arrived, or None when refused UNAVAILABLE
    before any frame (OPS-006)."""
    ch = server.channel()
    stream = S.Static(ch, [(topic, 0)])
    first = stream.next()
    if isinstance(first, S.Ended):
        ch.close()
        if first.code != grpc.StatusCode.UNAVAILABLE:
            raise AssertionError("refused with %r" % (first,))
        return None
    if first.WhichOneof("response") != "started":
        raise AssertionError(first)
    stream.channel = ch
    return stream


class PgStreamCase(unittest.TestCase):
    """Helpers: a server per test on a fresh database (no replica), psql sessions, metrics."""

    def setUp(self):
        self.engine = PrimaryOnlyEngine()
        self.addCleanup(self.engine.cleanup)
        self.sessions = []
        self.addCleanup(lambda: [p.close() for p in self.sessions])

    def psql(self, dsn):
        p = Psql(dsn)
        self.sessions.append(p)
        return p

    def metric(self, server, name, **labels):
        return S.value(S.scrape(server), name, **labels)

    def assert_refused_while_serving(self, server, topic):
        """OPS-006: opens of both kinds get UNAVAILABLE before any frame; health stays SERVING."""
        self.assertIsNone(try_open_static(server, topic))
        with server.channel() as ch:
            bidi = S.Bidi(ch)
            ended, frames = bidi.until_end()
            self.assertEqual(ended.code, grpc.StatusCode.UNAVAILABLE, ended)
            self.assertEqual(frames, [])
            self.assertEqual(S.health_status(ch), health_pb2.HealthCheckResponse.SERVING)
        self.assertEqual(self.metric(server, "xmtp_tailer_ready"), 0)
        self.assertEqual(self.metric(server, "xmtp_backend_ready"), 1)

    def wait_recovered(self, server, topic):
        holder = {}

        def opened():
            holder["stream"] = try_open_static(server, topic)
            return holder["stream"] is not None
        harness.wait_for(opened, S.READ_TIMEOUT, "stream recovery to complete")
        self.addCleanup(holder["stream"].channel.close)
        self.addCleanup(holder["stream"].cancel)
        return holder["stream"]

    def open_streams(self, ch, topic, history):
        """A static and a bidi stream on `topic`, both through their history."""
        static = S.Static(ch, [(topic, 0)])
        static.started(self)
        bidi = S.Bidi(ch)
        bidi.started(self)
        bidi.update(1, adds=[(topic, 0)])
        bidi.applied(self, 1)
        for s in (static, bidi):
            self.addCleanup(s.cancel)
            self.assertEqual(s.ids(len(history)), history)
        return static, bidi


@unittest.skipUnless(S.HAVE_PG, "needs XB_PG_PRIMARY")
class StreamRecoveryTest(PgStreamCase):

    # verifies: OPS-005 — until the first stream recovery completes (here the barrier is held, so
    # the boundary advance keeps timing out) the gRPC port is not bound and nothing reports
    # SERVING; a termination signal in that state ends the process cleanly (exit 0).
    def test_first_recovery_gates_serving_and_sigterm_exits_cleanly(self):
        database = harness.create_pg_database()
        self.addCleanup(database.drop)
        holder = self.psql(database.primary)
        holder.run("BEGIN;\nSELECT pg_advisory_xact_lock(0, 2);")
        config = harness.minimal_config(EXTRA.format(gaps=10000)).replace(
            'url = "sqlite://{data}/xmtp.db"', 'url = "%s"' % database.primary)
        server = harness.Server(config=config)
        self.addCleanup(server.tmp.cleanup)
        self.addCleanup(server.kill)
        server.spawn()
        # Several barrier attempts (200 ms each) pass without the server serving.
        self.assertFalse(server.wait_serving(2.0), "served before stream recovery completed")
        self.assertIsNone(server.port)
        self.assertIsNone(server.proc.poll(), server.stderr_text)
        server.terminate()
        self.assertEqual(server.wait(15), 0, server.stderr_text)
        messages = [r.get("msg") for r in server.log_records()]
        self.assertIn("stopped before serving", messages)
        self.assertNotIn("serving", messages)
        holder.run("COMMIT;")
        server.check_sanitizers()

    # verifies: OPS-006 (read-database loss), STORE.md 5.2 — terminating the tailer's connection
    # ends every open stream UNAVAILABLE; while the new generation cannot finish (the barrier is
    # held), Subscribe and SubscribeStatic opens get UNAVAILABLE and health stays SERVING; once
    # the barrier is released, opens succeed and deliver history and live envelopes.
    def test_tailer_connection_loss_ends_streams_and_refuses_opens_until_recovered(self):
        with self.engine.server(EXTRA.format(gaps=10000)) as server:
            database = self.engine.databases[-1]
            t = S.gtopic("rec", 0)
            with server.channel() as ch:
                history = S.publish(ch, [E.group_message(t[1:], 1, b"rec-%d" % k)
                                         for k in range(3)])
                static, bidi = self.open_streams(ch, t, history)
                self.assertEqual(self.metric(server, "xmtp_tailer_restarts_total"), 1)
                self.assertEqual(self.metric(server, "xmtp_tailer_ready"), 1)

                holder = self.psql(database.primary)
                holder.run("BEGIN;\nSELECT pg_advisory_xact_lock(0, 2);")
                pids = query(database.primary,
                             "SELECT pid FROM pg_stat_activity WHERE datname = current_database()"
                             " AND application_name = 'xmtp-backend tailer'")
                self.assertEqual(len(pids), 1, pids)
                self.assertEqual(query(database.primary,
                                       "SELECT pg_terminate_backend(%s)" % pids[0]), ["t"])
                for s in (static, bidi):
                    ended, frames = s.until_end()
                    self.assertEqual(ended.code, grpc.StatusCode.UNAVAILABLE, ended)
                    self.assertEqual([f for f in frames if S.envelopes_of(f)], [])
                # The new generation waits on the barrier; meanwhile opens are refused.
                harness.wait_for(lambda: self.metric(server, "xmtp_boundary_advances_total",
                                                     result="lock_timeout") >= 1,
                                 S.READ_TIMEOUT, "the bootstrap to time out on the barrier")
                self.assertEqual(self.metric(server, "xmtp_tailer_restarts_total"), 2)
                self.assertGreaterEqual(
                    self.metric(server, "xmtp_tailer_polls_total", result="error"), 1)
                self.assertEqual(self.metric(server, "xmtp_stream_ended_total", reason="tailer"),
                                 2)
                self.assert_refused_while_serving(server, t)

                holder.run("COMMIT;")
                stream = self.wait_recovered(server, t)
                self.assertEqual(self.metric(server, "xmtp_tailer_ready"), 1)
                self.assertEqual(self.metric(server, "xmtp_tailer_restarts_total"), 2)
                got = stream.ids(len(history))
                live = S.publish(ch, [E.group_message(t[1:], 1, b"rec-live")])
                got += stream.ids(len(history) + 1 - len(got))
                self.assertEqual(got, history + live)

    # verifies: OPS-006 (gap case), STORE.md 5.3 step 5 (ARC-042) — with
    # streams.max_gap_ranges = 1, two unresolved id ranges (ids drawn by transactions that hold
    # the barrier shared and stay open) end every open stream RESOURCE_EXHAUSTED before the row
    # that revealed the second gap is dispatched; opens are refused UNAVAILABLE while the
    # holders keep the new generation from advancing the boundary; afterwards nothing is lost.
    def test_gap_overflow_ends_streams_resource_exhausted(self):
        with self.engine.server(EXTRA.format(gaps=1)) as server:
            database = self.engine.databases[-1]
            u = S.gtopic("gap", 0)
            with server.channel() as ch:
                history = S.publish(ch, [E.group_message(u[1:], 1, b"gap-0")])
                static, bidi = self.open_streams(ch, u, history)

                first = self.psql(database.primary)
                x = int(first.run("BEGIN;\nSELECT pg_advisory_xact_lock_shared(0, 2);\n"
                                  "SELECT nextval('envelope_sequence');")[-1])
                a = S.publish(ch, [E.group_message(u[1:], 1, b"gap-a")])[0]
                self.assertGreater(a, x)
                # The tailer saw the first unresolved range; the row above it was delivered.
                harness.wait_for(lambda: self.metric(server, "xmtp_tailer_gap_ranges") == 1,
                                 S.READ_TIMEOUT, "one gap range")
                for s in (static, bidi):
                    self.assertEqual([S.sid(e) for e in S.envelopes_of(s.frame())], [a])

                second = self.psql(database.primary)
                y = int(second.run("BEGIN;\nSELECT pg_advisory_xact_lock_shared(0, 2);\n"
                                   "SELECT nextval('envelope_sequence');")[-1])
                self.assertGreater(y, a)
                b = S.publish(ch, [E.group_message(u[1:], 1, b"gap-b")])[0]
                self.assertGreater(b, y)
                for s in (static, bidi):
                    ended, frames = s.until_end()
                    self.assertEqual(ended.code, grpc.StatusCode.RESOURCE_EXHAUSTED, ended)
                    # Ended before dispatching the poll that overflowed.
                    self.assertEqual([f for f in frames if S.envelopes_of(f)], [])
                self.assertEqual(self.metric(server, "xmtp_stream_ended_total",
                                             reason="capacity"), 2)
                harness.wait_for(lambda: self.metric(server, "xmtp_tailer_restarts_total") == 2,
                                 S.READ_TIMEOUT, "a new generation")
                # The open holders keep the boundary from advancing: recovery cannot finish.
                harness.wait_for(lambda: self.metric(server, "xmtp_boundary_advances_total",
                                                     result="lock_timeout") >= 1,
                                 S.READ_TIMEOUT, "the bootstrap to time out on the barrier")
                self.assert_refused_while_serving(server, u)

                first.run("ROLLBACK;")
                second.run("ROLLBACK;")
                stream = self.wait_recovered(server, u)
                self.assertEqual(stream.ids(3), history + [a, b])
                harness.wait_for(lambda: self.metric(server, "xmtp_tailer_ready") == 1,
                                 S.READ_TIMEOUT, "ready")
                self.assertEqual(self.metric(server, "xmtp_tailer_gap_ranges"), 0)


@unittest.skipUnless(S.HAVE_PG, "needs XB_PG_PRIMARY")
class StreamGapTest(PgStreamCase):
    """Unresolved id ranges that resolve without a restart (STORE.md 5.3)."""

    def open_gap(self, server, database, other_topic):
        """A transaction that holds the barrier shared and drew id x, and a server publish on
        `other_topic` above it: the tailer then has the range [x, x] unresolved."""
        holder = self.psql(database.primary)
        x = int(holder.run("BEGIN;\nSELECT pg_advisory_xact_lock_shared(0, 2);\n"
                           "SELECT nextval('envelope_sequence');")[-1])
        with server.channel() as ch:
            above = S.publish(ch, [E.group_message(other_topic[1:], 1, b"above-gap")])[0]
        self.assertEqual(above, x + 1)
        harness.wait_for(lambda: self.metric(server, "xmtp_tailer_gap_ranges") == 1,
                         S.READ_TIMEOUT, "the gap range")
        return holder, x

    # verifies: API-254, STORE.md 5.3 (gap probes), ARC-037 — an id drawn before a higher row
    # became visible, committed later (a slow publisher), is found by the gap probe and delivered
    # live to the streams of its topic, in order, exactly once; the range is then resolved.
    def test_late_commit_in_a_gap_is_delivered(self):
        with self.engine.server(EXTRA.format(gaps=10000)) as server:
            database = self.engine.databases[-1]
            u, t = S.gtopic("late", 0), S.gtopic("late", 1)
            with server.channel() as ch:
                history = S.publish(ch, [E.group_message(u[1:], 1, b"late-0")])
                static, bidi = self.open_streams(ch, u, history)
                holder, x = self.open_gap(server, database, t)
                # The slow publisher stores its row on u (as a publish would) and commits.
                payload = E.group_message(u[1:], 1, b"late-slow").SerializeToString()
                holder.run(
                    "INSERT INTO envelopes (sequence_id, topic, server_ns, expiry_ns, "
                    "message_hash, is_commit_or_proposal, payload, push_eligible, sender_hmac) "
                    "VALUES (%d, '\\x%s', 1, NULL, '\\x%s', false, '\\x%s', false, NULL);\n"
                    "INSERT INTO topic_watermark (topic, last_sequence_id) VALUES ('\\x%s', %d) "
                    "ON CONFLICT (topic) DO UPDATE SET last_sequence_id = "
                    "GREATEST(topic_watermark.last_sequence_id, EXCLUDED.last_sequence_id);\n"
                    "COMMIT;" % (x, u.hex(), hashlib.sha256(payload).hexdigest(), payload.hex(),
                                 u.hex(), x))
                for s in (static, bidi):
                    self.assertEqual([S.sid(e) for e in S.envelopes_of(s.frame())], [x])
                harness.wait_for(lambda: self.metric(server, "xmtp_tailer_gap_ranges") == 0,
                                 S.READ_TIMEOUT, "the gap to resolve")
                self.assertGreaterEqual(self.metric(server, "xmtp_tailer_rows_total",
                                                    source="gap"), 1)
                live = S.publish(ch, [E.group_message(u[1:], 1, b"late-after")])
                for s in (static, bidi):
                    self.assertEqual([S.sid(e) for e in S.envelopes_of(s.frame())], live)
                self.assertEqual(S.read_topic(ch, u), history + [x] + live)
                self.assertEqual(self.metric(server, "xmtp_tailer_restarts_total"), 1)

    # verifies: STORE.md 4.2, 4.3, 5.3 (ARC-038, ARC-040) — an id whose drawer rolls back is
    # retired once the boundary passes it (the tailer asks for an advance); no stream fails.
    def test_rolled_back_id_is_retired_by_the_boundary(self):
        with self.engine.server(EXTRA.format(gaps=10000)) as server:
            database = self.engine.databases[-1]
            u, t = S.gtopic("roll", 0), S.gtopic("roll", 1)
            with server.channel() as ch:
                history = S.publish(ch, [E.group_message(u[1:], 1, b"roll-0")])
                static, bidi = self.open_streams(ch, u, history)
                holder, _ = self.open_gap(server, database, t)
                holder.run("ROLLBACK;")
                harness.wait_for(lambda: self.metric(server, "xmtp_tailer_gap_ranges") == 0,
                                 S.READ_TIMEOUT, "the boundary to retire the gap")
                self.assertGreaterEqual(self.metric(server, "xmtp_boundary_advances_total",
                                                    result="ok"), 2)
                live = S.publish(ch, [E.group_message(u[1:], 1, b"roll-after")])
                for s in (static, bidi):
                    self.assertEqual([S.sid(e) for e in S.envelopes_of(s.frame())], live)
                self.assertEqual(self.metric(server, "xmtp_tailer_restarts_total"), 1)


if __name__ == "__main__":
    unittest.main()
