"""Publish, Query, QueryNewest and Get against the real binary on the embedded SQLite engine
and, when XB_PG_PRIMARY names a cluster (always in CI), on PostgreSQL with a streaming replica
(API 3.2-3.7, OPS-001/002/020)."""
import hashlib
import os
import subprocess
import unittest
import uuid

import grpc

import envelopes as E
import harness
import identity_updates as U
from google.rpc import status_pb2
from xmtp.backend.v1 import backend_pb2

PUBLISH = "/xmtp.backend.v1.PublishService/Publish"
QUERY = "/xmtp.backend.v1.QueryService/Query"
NEWEST = "/xmtp.backend.v1.QueryService/QueryNewest"
GET = "/xmtp.backend.v1.QueryService/Get"
INT64_MAX = 9223372036854775807
RETENTION = 7776000


def publish_error(rpc_error):
    """The PublishError detail of a failed publish (API-223)."""
    for key, value in rpc_error.trailing_metadata() or ():
        if key == "grpc-status-details-bin":
            status = status_pb2.Status.FromString(value)
            assert status.code == 3, status
            assert len(status.details) == 1
            assert status.details[0].type_url == \
                "type.googleapis.com/xmtp.backend.v1.PublishError"
            return backend_pb2.PublishError.FromString(status.details[0].value)
    raise AssertionError("no grpc-status-details-bin")


class EnvelopeApiMixin:
    """Tests shared by both engines; `self.server` is running."""

    def call(self, path, request, response_type):
        with self.server.channel() as ch:
            resp, _ = harness.unary(ch, path, request, response_type, timeout=20)
        return resp

    def publish(self, *envs):
        return self.call(PUBLISH, backend_pb2.PublishRequest(envelopes=list(envs)),
                         backend_pb2.PublishResponse)

    def publish_fails(self, *envs):
        with self.server.channel() as ch:
            with self.assertRaises(grpc.RpcError) as ctx:
                harness.unary(ch, PUBLISH, backend_pb2.PublishRequest(envelopes=list(envs)),
                              backend_pb2.PublishResponse, timeout=20)
        return ctx.exception

    def query(self, queries, limit=0):
        req = backend_pb2.QueryRequest(limit=limit)
        for t, cursor in queries:
            q = req.queries.add()
            q.topic.topic = t
            if cursor is not None:
                q.cursor.sequence_id = cursor
        return self.call(QUERY, req, backend_pb2.QueryResponse)

    def fresh_id(self, n=16):
        return uuid.uuid4().bytes[:n] if n <= 16 else (uuid.uuid4().bytes * 2)[:n]

    # verifies: API-211, API-212, API-286, API-221
    def test_publish_assigns_metadata(self):
        gid = self.fresh_id()
        envs = [E.group_message(gid, 1, b"a"), E.group_message(gid, 3, b"commit"),
                E.welcome(self.fresh_id(32)), E.commit_log(gid),
                U.envelope(U.registration(int.from_bytes(self.fresh_id(8), "big"))[1])]
        resp = self.publish(*envs)
        self.assertEqual(len(resp.envelope_metas), len(envs))
        ids = [m.cursor.sequence_id for m in resp.envelope_metas]
        self.assertEqual(ids, sorted(ids))
        self.assertEqual(len(set(ids)), len(ids))
        self.assertTrue(all(0 < i <= INT64_MAX for i in ids))
        server_ns = {m.server_ns for m in resp.envelope_metas}
        self.assertEqual(len(server_ns), 1)  # read once per publish
        ns = server_ns.pop()
        self.assertGreater(ns, 1_600_000_000 * 10**9)
        expected_expiry = [ns + RETENTION * 10**9, 0, ns + RETENTION * 10**9, 0, 0]
        self.assertEqual([m.expiry_ns for m in resp.envelope_metas], expected_expiry)
        self.assertEqual([m.is_commit_or_proposal for m in resp.envelope_metas],
                         [False, True, False, False, False])
        self.assertEqual(resp.envelope_metas[0].topic.topic, E.group_topic(gid))
        self.assertEqual(resp.envelope_metas[3].topic.topic, E.topic(4, gid))
        # The stored bytes are our canonical encoding; the hash is their SHA-256.
        page = self.query([(E.group_topic(gid), None)])
        self.assertEqual(len(page.envelopes), 2)
        stored = page.envelopes[0]
        self.assertEqual(stored.meta, resp.envelope_metas[0])
        self.assertEqual(hashlib.sha256(stored.envelope.SerializeToString()).digest(),
                         stored.meta.message_hash.sha256)
        self.assertEqual(stored.envelope.group_message.data, envs[0].group_message.data)

    # verifies: API-222 — a retry of the same bytes returns the stored metadata as duplicates.
    def test_retry_and_in_request_duplicates_return_stored_metadata(self):
        gid = self.fresh_id()
        env = E.group_message(gid, 1, b"same")
        first = self.publish(env, env)
        self.assertEqual(first.envelope_metas[0], first.envelope_metas[1])
        again = self.publish(E.group_message(gid, 1, b"new"), env)
        self.assertEqual(again.envelope_metas[1], first.envelope_metas[0])
        self.assertGreater(again.envelope_metas[0].cursor.sequence_id,
                           first.envelope_metas[0].cursor.sequence_id)
        page = self.query([(E.group_topic(gid), None)])
        self.assertEqual(len(page.envelopes), 2)

    # verifies: API-220, API-223 — a malformed envelope fails the request, names its index, and
    # nothing of the request is stored.
    def test_malformed_envelope_fails_whole_request_with_index(self):
        gid = self.fresh_id()
        bad = backend_pb2.ClientEnvelope(group_message=backend_pb2.GroupMessage(data=b"\x00\x01"))
        err = self.publish_fails(E.group_message(gid, 1, b"ok"), bad)
        self.assertEqual(err.code(), grpc.StatusCode.INVALID_ARGUMENT)
        detail = publish_error(err)
        self.assertTrue(detail.HasField("index"))
        self.assertEqual(detail.index, 1)
        self.assertEqual(detail.reason, backend_pb2.PublishError.REASON_MALFORMED_PAYLOAD)
        self.assertEqual(len(self.query([(E.group_topic(gid), None)]).envelopes), 0)
        unset = self.publish_fails(backend_pb2.ClientEnvelope())
        self.assertEqual(publish_error(unset).index, 0)

    def test_bounds_are_too_large(self):
        big = E.group_message(self.fresh_id(), 1, b"x" * (1048576 + 10))
        err = self.publish_fails(E.group_message(self.fresh_id(), 1, b"fine"), big)
        detail = publish_error(err)
        self.assertEqual(detail.reason, backend_pb2.PublishError.REASON_TOO_LARGE)
        self.assertEqual(detail.index, 1)
        many = [E.group_message(self.fresh_id(), 1, b"t") for _ in range(1001)]
        detail = publish_error(self.publish_fails(*many))
        self.assertEqual(detail.reason, backend_pb2.PublishError.REASON_TOO_LARGE)
        self.assertFalse(detail.HasField("index"))

    # verifies: API-233
    def test_two_identity_updates_for_one_inbox_fail_at_the_later_index(self):
        # The first is a valid registration (an invalid one would fail first, at index 0).
        inbox, first = U.registration(int.from_bytes(self.fresh_id(8), "big"))
        detail = publish_error(self.publish_fails(U.envelope(first),
                                                  E.identity_update(inbox, 2)))
        self.assertEqual(detail.reason, backend_pb2.PublishError.REASON_INVALID_IDENTITY_UPDATE)
        self.assertEqual(detail.index, 1)

    # verifies: API-240, API-241 — paging as API.md example 4.2.
    def test_query_pages_are_per_topic_prefixes(self):
        a, b = self.fresh_id(), self.fresh_id()
        ta, tb = E.group_topic(a), E.topic(4, b)
        self.publish(E.group_message(a, 1, b"a1"))
        self.publish(E.commit_log(b, 1))
        self.publish(E.commit_log(b, 2))
        self.publish(E.group_message(a, 1, b"a2"))
        self.publish(E.group_message(a, 1, b"a3"))
        page1 = self.query([(ta, None), (tb, None)], limit=3)
        self.assertTrue(page1.HasField("continuation"))
        self.assertTrue(page1.continuation.has_more)
        self.assertEqual(len(page1.envelopes), 3)
        by_topic = {}
        for e in page1.envelopes:
            by_topic.setdefault(e.meta.topic.topic, []).append(e.meta.cursor.sequence_id)
        all_a = [e.meta.cursor.sequence_id for e in self.query([(ta, None)]).envelopes]
        all_b = [e.meta.cursor.sequence_id for e in self.query([(tb, None)]).envelopes]
        self.assertEqual(by_topic.get(ta, []), all_a[:len(by_topic.get(ta, []))])
        self.assertEqual(by_topic.get(tb, []), all_b[:len(by_topic.get(tb, []))])
        cursors = {ta: max(by_topic.get(ta, [0])), tb: max(by_topic.get(tb, [0]))}
        page2 = self.query([(ta, cursors[ta]), (tb, cursors[tb])], limit=3)
        self.assertFalse(page2.continuation.has_more)
        self.assertEqual(len(page1.envelopes) + len(page2.envelopes), 5)
        # A repeated topic reads from its lowest cursor (API-242).
        self.assertEqual(len(self.query([(ta, all_a[-1]), (ta, 0)]).envelopes), 3)

    # verifies: API-243, TOPIC-003
    def test_query_rejects_bad_topics_and_cursors(self):
        with self.server.channel() as ch:
            for queries in ([(E.topic(3, b"k" * 32), None)], [(b"\x05" + b"x" * 16, None)],
                            [(b"", None)], [(E.group_topic(b"x" * 15), None)],
                            [(E.group_topic(b"x" * 16), INT64_MAX + 1)]):
                req = backend_pb2.QueryRequest()
                for t, c in queries:
                    q = req.queries.add()
                    q.topic.topic = t
                    if c is not None:
                        q.cursor.sequence_id = c
                with self.assertRaises(grpc.RpcError) as ctx:
                    harness.unary(ch, QUERY, req, backend_pb2.QueryResponse)
                self.assertEqual(ctx.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)

    # verifies: API-244
    def test_query_newest_returns_head_per_topic(self):
        a, kp = self.fresh_id(), self.fresh_id(32)
        self.publish(E.group_message(a, 1, b"old"))
        newest = self.publish(E.group_message(a, 1, b"new")).envelope_metas[0]
        req = backend_pb2.QueryNewestRequest(topics=[
            backend_pb2.Topic(topic=E.group_topic(a)), backend_pb2.Topic(topic=E.group_topic(a)),
            backend_pb2.Topic(topic=E.topic(3, kp))])
        # QueryNewest may read a replica (OPS-009): wait until it has replayed the write.
        harness.wait_for(lambda: [r.meta for r in self.call(
            NEWEST, req, backend_pb2.QueryNewestResponse).results] == [newest], 10,
            "the read database to show the newest write")
        resp = self.call(NEWEST, req, backend_pb2.QueryNewestResponse)
        self.assertEqual(len(resp.results), 1)  # repeated topic once; empty topic absent
        self.assertEqual(resp.results[0].topic.topic, E.group_topic(a))
        self.assertEqual(resp.results[0].meta, newest)
        self.assertFalse(resp.results[0].HasField("envelope"))
        req.include_full_envelope = True
        full = self.call(NEWEST, req, backend_pb2.QueryNewestResponse)
        self.assertEqual(full.results[0].envelope.group_message.data,
                         E.private_message(a, 1, b"new"))

    def test_get_by_sequence_id(self):
        meta = self.publish(E.group_message(self.fresh_id(), 1, b"g")).envelope_metas[0]
        got = self.call(GET, backend_pb2.GetRequest(sequence_id=meta.cursor.sequence_id),
                        backend_pb2.ServerEnvelope)
        self.assertEqual(got.meta, meta)
        with self.server.channel() as ch:
            for sid, code in ((0, grpc.StatusCode.INVALID_ARGUMENT),
                              (INT64_MAX + 1, grpc.StatusCode.INVALID_ARGUMENT),
                              (INT64_MAX, grpc.StatusCode.NOT_FOUND)):
                with self.assertRaises(grpc.RpcError) as ctx:
                    harness.unary(ch, GET, backend_pb2.GetRequest(sequence_id=sid),
                                  backend_pb2.ServerEnvelope)
                self.assertEqual(ctx.exception.code(), code)


class SqliteEnvelopeApiTest(EnvelopeApiMixin, harness.ServerTestCase):
    pass


@unittest.skipUnless(os.environ.get("XB_PG_PRIMARY"), "needs XB_PG_PRIMARY")
class PostgresEnvelopeApiTest(EnvelopeApiMixin, harness.PgServerTestCase):
    # verifies: OPS-009, OPS-010, API-202 — with the replica's replay paused, QueryNewest (read
    # from the replica) is an earlier view while Query (the primary) reads the client's own write.
    def test_replica_lag_newest_is_an_earlier_view_query_reads_own_write(self):
        gid = self.fresh_id()
        first = self.publish(E.group_message(gid, 1, b"before")).envelope_metas[0]
        newest_req = backend_pb2.QueryNewestRequest(topics=[backend_pb2.Topic(
            topic=E.group_topic(gid))])
        harness.wait_for(lambda: [r.meta for r in self.call(
            NEWEST, newest_req, backend_pb2.QueryNewestResponse).results] == [first], 10,
            "the replica to show the first write")
        replica = self.database.replica
        subprocess.run(["psql", "-q", "-v", "ON_ERROR_STOP=1", replica, "-c",
                        "SELECT pg_wal_replay_pause()"], check=True, capture_output=True)
        try:
            second = self.publish(E.group_message(gid, 1, b"during lag")).envelope_metas[0]
            page = self.query([(E.group_topic(gid), None)])
            self.assertEqual([e.meta for e in page.envelopes], [first, second])  # API-202
            lagged = self.call(NEWEST, newest_req, backend_pb2.QueryNewestResponse)
            self.assertEqual([r.meta for r in lagged.results], [first])  # an earlier view
        finally:
            subprocess.run(["psql", "-q", replica, "-c", "SELECT pg_wal_replay_resume()"],
                           check=True, capture_output=True)
        harness.wait_for(lambda: [r.meta for r in self.call(
            NEWEST, newest_req, backend_pb2.QueryNewestResponse).results] == [second], 10,
            "the replica to catch up")


class StoreLifecycleTest(unittest.TestCase):
    # verifies: API-288, API-291 — data and ids survive a restart on the embedded engine.
    def test_sqlite_restart_keeps_envelopes_and_ids_increase(self):
        with harness.Server() as server:
            config = server.args[2]
            with server.channel() as ch:
                first, _ = harness.unary(ch, PUBLISH, backend_pb2.PublishRequest(
                    envelopes=[E.group_message(b"r" * 16, 1, b"one")]), backend_pb2.PublishResponse)
            server.terminate()
            self.assertEqual(server.wait(15), 0)
            again = harness.Server(config=config)
            again.start()
            try:
                with again.channel() as ch:
                    page, _ = harness.unary(ch, QUERY, backend_pb2.QueryRequest(queries=[
                        backend_pb2.TopicQuery(topic=backend_pb2.Topic(topic=b"\x00" + b"r" * 16))]),
                        backend_pb2.QueryResponse)
                    second, _ = harness.unary(ch, PUBLISH, backend_pb2.PublishRequest(
                        envelopes=[E.group_message(b"r" * 16, 1, b"two")]),
                        backend_pb2.PublishResponse)
            finally:
                again.kill()
            self.assertEqual(page.envelopes[0].meta, first.envelope_metas[0])
            self.assertGreater(second.envelope_metas[0].cursor.sequence_id,
                               first.envelope_metas[0].cursor.sequence_id)

    # verifies: OPS-020 — a retention period that overflows the clock refuses start naming it.
    def test_retention_overflow_refuses_start_naming_the_key(self):
        config = harness.minimal_config("[retention]\nwelcome_seconds = 9223372036\n").replace(
            "{data}", harness.private_data_dir(self))
        result = harness.run_binary(["--config", config])
        self.assertNotEqual(result.returncode, 0)
        self.assertIn("retention.welcome_seconds", result.stderr)



class ExpiryNeverHidesTest(unittest.TestCase):
    # verifies: OPS-002, OPS-001 — an envelope whose expiry has passed is still returned by Query,
    # QueryNewest and Get; nothing is deleted.
    def test_expired_envelope_is_still_read(self):
        import time
        config = harness.minimal_config(
            "[retention]\nwelcome_seconds = 1\ngroup_message_seconds = 1\n")
        with harness.Server(config=config) as server, server.channel() as ch:
            key = b"w" * 32
            resp, _ = harness.unary(ch, PUBLISH, backend_pb2.PublishRequest(
                envelopes=[E.welcome(key), E.group_message(b"c" * 16, 3, b"commit")]),
                backend_pb2.PublishResponse)
            welcome, commit = resp.envelope_metas
            self.assertEqual(welcome.expiry_ns, welcome.server_ns + 10**9)
            self.assertEqual(commit.expiry_ns, 0)  # exempt: never expires
            # Wait for the expiry itself to pass on the wall clock (the condition under test).
            harness.wait_for(lambda: time.time_ns() > welcome.expiry_ns + 10**8, 5, "expiry")
            page, _ = harness.unary(ch, QUERY, backend_pb2.QueryRequest(queries=[
                backend_pb2.TopicQuery(topic=backend_pb2.Topic(topic=E.topic(1, key)))]),
                backend_pb2.QueryResponse)
            self.assertEqual([e.meta for e in page.envelopes], [welcome])
            newest, _ = harness.unary(ch, NEWEST, backend_pb2.QueryNewestRequest(
                topics=[backend_pb2.Topic(topic=E.topic(1, key))]), backend_pb2.QueryNewestResponse)
            self.assertEqual(newest.results[0].meta, welcome)
            got, _ = harness.unary(ch, GET, backend_pb2.GetRequest(
                sequence_id=welcome.cursor.sequence_id), backend_pb2.ServerEnvelope)
            self.assertEqual(got.meta, welcome)



@unittest.skipUnless(os.environ.get("XB_PG_PRIMARY"), "needs XB_PG_PRIMARY")
class PostgresPublishDeadlineTest(harness.PgServerTestCase):
    @classmethod
    def setUpClass(cls):
        cls.database = harness.create_pg_database()
        cls.config = harness.minimal_config(
            "[publishing]\nmax_publish_duration_ms = 1500\n").replace(
            'url = "sqlite://{data}/xmtp.db"',
            'url = "%s"\nmax_statement_timeout_ms = 1000' % cls.database.primary)
        harness.ServerTestCase.setUpClass.__func__(cls)

    # verifies: API-281 (DEADLINE_EXCEEDED row) — a publish that cannot get its locks within
    # publishing.max_publish_duration_ms fails DEADLINE_EXCEEDED and stores nothing.
    def test_publish_over_its_time_limit_is_deadline_exceeded(self):
        # Another session holds the allocation barrier exclusively (as the boundary task would).
        holder = subprocess.Popen(["psql", "-q", "-t", "-A", self.database.primary],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        try:
            holder.stdin.write("BEGIN;\nSELECT pg_advisory_xact_lock(0, 2);\nSELECT 'locked';\n")
            holder.stdin.flush()
            self.assertEqual(holder.stdout.readline().strip(), "")  # the lock call's empty row
            self.assertEqual(holder.stdout.readline().strip(), "locked")
            gid = b"d" * 16
            with self.server.channel() as ch:
                with self.assertRaises(grpc.RpcError) as ctx:
                    harness.unary(ch, PUBLISH, backend_pb2.PublishRequest(
                        envelopes=[E.group_message(gid, 1, b"late")]), backend_pb2.PublishResponse,
                        timeout=20)
            self.assertEqual(ctx.exception.code(), grpc.StatusCode.DEADLINE_EXCEEDED)
        finally:
            holder.stdin.write("ROLLBACK;\n")
            holder.stdin.close()
            holder.wait(10)
        with self.server.channel() as ch:
            page, _ = harness.unary(ch, QUERY, backend_pb2.QueryRequest(queries=[
                backend_pb2.TopicQuery(topic=backend_pb2.Topic(topic=E.group_topic(gid)))]),
                backend_pb2.QueryResponse)
        self.assertEqual(len(page.envelopes), 0)



@unittest.skipUnless(os.environ.get("XB_PG_PRIMARY"), "needs XB_PG_PRIMARY")
class PostgresIdentityRaceTest(harness.PgServerTestCase):
    # verifies: API-232 — an identity update validated against a history whose head moved before
    # its commit fails ABORTED and stores nothing.
    def test_identity_head_moved_is_aborted(self):
        inbox_hex, registration = U.registration(int.from_bytes(os.urandom(8), "big"))
        inbox = bytes.fromhex(inbox_hex)
        topic_hex = "02" + inbox.hex()
        other = E.identity_update(inbox.hex(), 99).SerializeToString()
        # Another writer holds the identity lock, then commits an entry on the same identity topic
        # (as a concurrent identity publish would) while ours waits for the lock.
        holder = subprocess.Popen(["psql", "-q", "-t", "-A", "-v", "ON_ERROR_STOP=1",
                                   self.database.primary],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        result = {}

        def publish():
            with self.server.channel() as ch:
                try:
                    harness.unary(ch, PUBLISH, backend_pb2.PublishRequest(
                        envelopes=[U.envelope(registration)]), backend_pb2.PublishResponse,
                        timeout=30)
                    result["code"] = grpc.StatusCode.OK
                except grpc.RpcError as e:
                    result["code"] = e.code()

        import threading
        try:
            holder.stdin.write("BEGIN;\nSELECT pg_advisory_xact_lock(0, 1);\nSELECT 'locked';\n")
            holder.stdin.flush()
            self.assertEqual(holder.stdout.readline().strip(), "")
            self.assertEqual(holder.stdout.readline().strip(), "locked")
            t = threading.Thread(target=publish)
            t.start()
            # Ours has read the empty history and now queues on the identity lock.
            harness.wait_for(lambda: self._waiting_on_advisory_lock(), 10, "a lock waiter")
            holder.stdin.write(
                "INSERT INTO envelopes (sequence_id, topic, server_ns, expiry_ns, message_hash, "
                "is_commit_or_proposal, payload, push_eligible, sender_hmac) VALUES "
                "(nextval('envelope_sequence'), '\\x%s', 1, NULL, '\\x%s', false, '\\x%s', "
                "false, NULL);\n" % (topic_hex, hashlib.sha256(other).hexdigest(), other.hex()))
            holder.stdin.write(
                "INSERT INTO topic_watermark (topic, last_sequence_id) SELECT topic, sequence_id "
                "FROM envelopes WHERE topic = '\\x%s';\nCOMMIT;\n" % topic_hex)
            holder.stdin.flush()
            t.join(30)
        finally:
            holder.stdin.close()
            holder.wait(10)
        self.assertEqual(result.get("code"), grpc.StatusCode.ABORTED)
        with self.server.channel() as ch:
            page, _ = harness.unary(ch, QUERY, backend_pb2.QueryRequest(queries=[
                backend_pb2.TopicQuery(topic=backend_pb2.Topic(topic=bytes.fromhex(topic_hex)))]),
                backend_pb2.QueryResponse)
        self.assertEqual(len(page.envelopes), 1)  # only the other writer's entry

    def _waiting_on_advisory_lock(self):
        out = subprocess.run(["psql", "-t", "-A", self.database.primary, "-c",
                              "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' "
                              "AND NOT granted"], capture_output=True, text=True).stdout.strip()
        return out not in ("", "0")


if __name__ == "__main__":
    unittest.main()
