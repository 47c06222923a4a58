"""The pruning pass through the real binary (issue 35, STORE.md 9.2), on SQLite and on PostgreSQL
with its replica: the smallest retention (1 s), a pass every second in batches of 7. Exempt rows
and each topic's newest survive byte for byte, nothing is deleted before the store clock passes
its expiry, a stream opened at an old cursor across pruned ranges gets exactly the survivors and
then live rows, and concurrent publishers with passes running show no ordering violation. With a
push channel configured, nothing above the push dispatcher's cursor is pruned."""
import functools
import os
import re
import threading
import time
import unittest
import urllib.request

import envelopes as E
import harness
import ordering_check
import push_client as P
import push_fakes as F
import stream_client as S
from xmtp.backend.v1 import backend_pb2

NEWEST = "/xmtp.backend.v1.QueryService/QueryNewest"
RETENTION = ('[retention]\ngroup_message_seconds = 1\nwelcome_seconds = 1\n'
             'key_package_seconds = 1\nprune = true\nprune_interval_seconds = 1\n'
             'prune_batch = 7\n')
COMMIT = 3  # RFC 9420 ContentType commit: exempt (OPS-001)


def newest(ch, topics):
    resp, _ = harness.unary(ch, NEWEST, backend_pb2.QueryNewestRequest(
        topics=[backend_pb2.Topic(topic=t) for t in topics], include_full_envelope=True),
        backend_pb2.QueryNewestResponse)
    return {r.topic.topic: (r.meta.cursor.sequence_id, r.envelope.SerializeToString())
            for r in resp.results}


def read_rows(ch, topic):
    """Every stored row of `topic` as {id: envelope bytes}, paging Query from cursor 0."""
    rows, cursor = {}, 0
    while True:
        page, _ = harness.unary(ch, ordering_check.QUERY, backend_pb2.QueryRequest(
            queries=[S.topic_query(topic, cursor)], limit=1000), backend_pb2.QueryResponse,
            timeout=30)
        for e in page.envelopes:
            rows[e.meta.cursor.sequence_id] = e.envelope.SerializeToString()
        if not page.continuation.has_more or not page.envelopes:
            return rows
        cursor = page.envelopes[-1].meta.cursor.sequence_id


class PruneMixin:
    def pruned_total(self):
        text = urllib.request.urlopen(
            "http://127.0.0.1:%d/metrics" % self.server.metrics_port, timeout=5).read().decode()
        return int(re.search(r"^xmtp_ext_prune_envelopes_total (\d+)$", text, re.M).group(1))

    def wait_pruned(self, ch, topic, keep):
        harness.wait_for(lambda: set(read_rows(ch, topic)) == set(keep), 30,
                         "the pass to prune down to the survivors")

    # verifies: OPS-001, OPS-002, STORE.md 9.2 — exempt kinds and each topic's newest row survive
    # many passes byte for byte; nothing goes while the clock is not past its expiry.
    def test_exempt_and_newest_survive_and_nothing_goes_early(self):
        t = S.gtopic("prune-ex")
        log = E.topic(4, S.gid("prune-ex"))
        with self.server.channel() as ch:
            ids = []
            t0 = time.time()  # no row published from now on expires before t0 + 1 s
            for k in range(12):
                content = COMMIT if k % 4 == 1 else 1
                ids += S.publish(ch, [E.group_message(t[1:], content, b"m%d" % k)])
            ids += S.publish(ch, [E.commit_log(S.gid("prune-ex"))])
            first = read_rows(ch, t)
            self.assertEqual(sorted(first), ids[:12])
            exempt = [ids[k] for k in range(12) if k % 4 == 1] + [ids[11]]
            S.wait_replica_shows(ch, {t: ids[11], log: ids[12]})
            heads = newest(ch, [t, log])
            # Not expired yet (1 s): every step before the expiry still shows every row.
            while time.time() < t0 + 0.95:
                self.assertEqual(read_rows(ch, t), first)
                time.sleep(0.1)
            self.wait_pruned(ch, t, exempt)
            time.sleep(3)  # three more passes
            after = read_rows(ch, t)
            self.assertEqual(after, {i: first[i] for i in exempt})
            self.assertEqual(len(read_rows(ch, log)), 1)
            self.assertEqual(newest(ch, [t, log]), heads)
            self.assertGreaterEqual(self.pruned_total(), 8)

    # verifies: STORE.md 9.2 rule 6, STORE.md 5.5 — a stream opened at an old cursor across pruned
    # ranges delivers exactly the survivors in order, then live rows, with no UNAVAILABLE.
    def test_stream_at_an_old_cursor_gets_exactly_the_survivors(self):
        t = S.gtopic("prune-st")
        with self.server.channel() as ch:
            ids = S.publish_history(ch, t, 30, b"x")
            keep = ids[-1:]
            marker = S.gtopic("prune-mk")
            for cursor in (0, ids[3], ids[-2]):
                # Pruned on the primary (the row before the last live one goes too), then on the
                # read copy the stream reads: it replays in commit order, so once it shows a row
                # published after the deletions it shows them too (before, it would show an
                # earlier view, OPS-010).
                self.wait_pruned(ch, t, keep)
                mark = S.publish(ch, [E.group_message(marker[1:], 1, b"m%d" % cursor)])
                S.wait_replica_shows(ch, {marker: mark[0]})
                stream = S.Static(ch, [(t, cursor)])
                try:
                    stream.started(self)
                    # Exactly the survivors, through the newest: also no row an earlier stream's
                    # catch-up left in the shared history cache before the pass deleted it.
                    got = stream.ids(1, timeout=15)
                    while got[-1] != keep[0]:
                        got += stream.ids(1, timeout=15)
                    self.assertEqual(got, keep)
                    live = S.publish(ch, [E.group_message(t[1:], 1, b"live-%d" % cursor)])
                    self.assertEqual(stream.ids(1, timeout=15), live)
                    keep = live
                finally:
                    stream.cancel()

    # verifies: API-201, STORE.md 9.2 — publishers, live streams and passes together: each
    # stream's view passes the ordering checker against the topic's published order (it sees
    # exactly what was published after it opened), and every Query view is ascending, holds
    # only published ids and always the topic's newest row at the time of the read.
    def test_concurrent_publishers_streams_and_passes(self):
        topics = [S.gtopic("prune-c", i) for i in range(4)]
        published = {t: [] for t in topics}
        errors, views = [], []
        lock = threading.Lock()
        done = threading.Event()
        pruned = threading.Event()  # a pass has deleted rows while all this runs

        def publisher(p):
            # 60 rounds, and on until a pass has pruned: the second pass starts about two
            # seconds after the server, and 60 rounds can end before its first batch.
            deadline = time.monotonic() + 60
            r = 0
            with self.server.channel() as pch:
                while r < 60 or (not pruned.is_set() and time.monotonic() < deadline):
                    t = topics[(p + r) % len(topics)]
                    try:
                        got = S.publish(pch, [E.group_message(t[1:], 1, b"c%d-%d" % (p, r))])
                    except Exception as e:  # pylint: disable=broad-except
                        errors.append(repr(e))
                        return
                    with lock:
                        published[t] += got
                    r += 1
                    time.sleep(0.03)

        def checker():
            with self.server.channel() as cch:
                while not done.is_set():
                    for t in topics:
                        with lock:
                            before = sorted(published[t])
                        views.append((t, before[-1:], list(read_rows(cch, t))))
                    if not pruned.is_set() and self.pruned_total() > 0:
                        pruned.set()

        with self.server.channel() as ch:
            streams = [S.Static(ch, [(t, None)]) for t in topics]
            for s in streams:
                s.started(self)
            ordering_check.run_beside_checker(
                [functools.partial(publisher, p) for p in range(4)], checker, done, timeout=120)
            self.assertEqual(errors, [])
            for t, newest_before, seen in views:
                # Ascending, only published ids, and never without the newest row it had.
                self.assertEqual(seen, sorted(set(seen)))
                self.assertLessEqual(set(seen), set(published[t]))
                if newest_before:
                    self.assertTrue(seen and seen[-1] >= newest_before[0], (seen, newest_before))
            for t, s in zip(topics, streams):
                try:
                    final = sorted(published[t])
                    ordering_check.assert_prefix(self, s.ids(len(final), timeout=30), final,
                                                 "stream through passes")
                finally:
                    s.cancel()
            self.assertGreater(self.pruned_total(), 0)


class SqlitePruneTest(PruneMixin, harness.ServerTestCase):
    config = harness.minimal_config(RETENTION)


@unittest.skipUnless(os.environ.get("XB_PG_PRIMARY"), "needs XB_PG_PRIMARY")
class PostgresPruneTest(PruneMixin, harness.PgServerTestCase):
    @classmethod
    def setUpClass(cls):
        cls.database = harness.create_pg_database()
        cls.config = harness.minimal_config(RETENTION).replace(
            'url = "sqlite://{data}/xmtp.db"',
            'url = "%s"\nreplica_url = "%s"' % (cls.database.primary, cls.database.replica))
        harness.ServerTestCase.setUpClass.__func__(cls)


class PrunePushMixin(P.ProvidersServer):
    """Pruning with a webhook channel configured: a push held in flight holds the dispatcher's
    cursor (PUSH.md 8.4, a low watermark) and with it the pass."""
    HANG = 8.0  # the webhook's answer delay: under the 10 s attempt bound, so it is delivered

    @classmethod
    def server_config(cls, providers):
        return RETENTION + providers.push_config(("http",))

    def tearDown(self):
        self.assertEqual(self.providers.problems(), [])

    def rows(self, topic):
        with self.server.channel() as ch:
            return sorted(read_rows(ch, topic))

    # verifies: STORE.md 9.2 rule 4 — with push configured no envelope above the push cursor is
    # pruned; once the dispatcher moves past them they go.
    def test_nothing_above_the_push_cursor_is_pruned(self):
        hooks = self.providers.webhooks
        r = P.Recipient()
        r.path = "/hook-" + os.urandom(8).hex()
        key = os.urandom(24)
        P.register(self.server, r, url=hooks.url(r.path, key), signing_key=key)
        gid = P.group_id()
        pushed_topic = P.group_topic(gid)
        P.update(self.server, r, adds=[P.subscription(pushed_topic)])
        other = P.group_id()
        other_topic = P.group_topic(other)

        # Below the cursor: no one is owed these, the dispatcher passes them, the pass prunes them.
        early = [seq(m) for m in P.publish(self.server, *[P.app_message(other) for _ in range(4)])]
        harness.wait_for(lambda: self.rows(other_topic) == early[-1:], 30,
                         "the pass to prune the rows below the push cursor")

        # A push held in flight holds the cursor below it; the rows published after it expire.
        hooks.script(r.path, F.Answer(200, b"", delay=self.HANG))
        P.publish(self.server, P.app_message(gid))
        hooks.wait_for(lambda q: q.path == r.path, 1, 20)
        held_since = time.monotonic()
        late = [seq(m) for m in P.publish(self.server, *[P.app_message(other) for _ in range(4)])]
        # Past their 1 s expiry, passes every second: the pass keeps running (the early newest
        # row, no longer its topic's newest and below the cursor, goes) but none of them goes.
        harness.wait_for(lambda: self.rows(other_topic)[0] != early[-1], 10,
                         "the pass to prune the row below the push cursor")
        time.sleep(max(0.0, held_since + 4 - time.monotonic()))
        self.assertLess(time.monotonic() - held_since, self.HANG - 1, "the push ended too soon")
        self.assertEqual(self.rows(other_topic), late)

        # Delivered: the cursor moves past them and they go (all but the topic's newest).
        harness.wait_for(lambda: self.rows(other_topic) == late[-1:], 30,
                         "the pass to prune the rows once the push cursor passed them")


def seq(meta):
    return meta.cursor.sequence_id


class SqlitePrunePushTest(PrunePushMixin, unittest.TestCase):
    pass


@unittest.skipUnless(S.HAVE_PG, "needs XB_PG_PRIMARY")
class PostgresPrunePushTest(PrunePushMixin, unittest.TestCase):
    engine_class = S.PostgresEngine


if __name__ == "__main__":
    unittest.main()
