"""Ordering proof under concurrency (API-201, API-289, OPS-010): 8 publishers over overlapping
topics — some requests spanning many topics, some failing whole because one envelope is
malformed — while a checker reads continuously with Query and QueryNewest. Every per-topic view
must be a prefix of the topic's final id order: no hole that later fills, no reordering."""
import functools
import os
import random
import threading
import unittest

import grpc

import envelopes as E
import harness
import ordering_check
from xmtp.backend.v1 import backend_pb2

PUBLISH = "/xmtp.backend.v1.PublishService/Publish"
NEWEST = "/xmtp.backend.v1.QueryService/QueryNewest"
TOPICS = 12
PUBLISHERS = 8
REQUESTS_PER_PUBLISHER = 40


def gid(t):
    return ("order-topic-%03d" % t).encode()[:16].ljust(16, b"_")


class OrderingMixin:
    def test_concurrent_publishers_never_show_a_hole(self):
        topics = [E.group_topic(gid(t)) for t in range(TOPICS)]
        rng = random.Random(7)
        plans = []
        for p in range(PUBLISHERS):
            reqs = []
            for r in range(REQUESTS_PER_PUBLISHER):
                width = TOPICS if r % 10 == 0 else rng.randint(1, 4)
                chosen = rng.sample(range(TOPICS), width)
                envs = [E.group_message(gid(t), 1, b"p%d-r%d-t%d" % (p, r, t)) for t in chosen]
                if r % 7 == 3:  # aborts: the whole request fails, nothing is stored
                    envs.append(backend_pb2.ClientEnvelope())
                reqs.append(envs)
            plans.append(reqs)

        done = threading.Event()
        errors = []
        views = []  # (topic index, ids seen by one Query)
        newest_seen = {t: [] for t in range(TOPICS)}

        def publisher(reqs):
            with self.server.channel() as ch:
                for envs in reqs:
                    try:
                        harness.unary(ch, PUBLISH, backend_pb2.PublishRequest(envelopes=envs),
                                      backend_pb2.PublishResponse, timeout=30)
                    except grpc.RpcError as e:
                        if e.code() != grpc.StatusCode.INVALID_ARGUMENT:
                            errors.append(e.code())

        def checker():
            with self.server.channel() as ch:
                while not done.is_set():
                    t = rng.randrange(TOPICS)
                    views.append((t, ordering_check.read_all(ch, topics[t])))
                    resp, _ = harness.unary(ch, NEWEST, backend_pb2.QueryNewestRequest(
                        topics=[backend_pb2.Topic(topic=x) for x in topics]),
                        backend_pb2.QueryNewestResponse, timeout=30)
                    for r in resp.results:
                        newest_seen[topics.index(r.topic.topic)].append(r.meta.cursor.sequence_id)

        ordering_check.run_beside_checker(
            [functools.partial(publisher, reqs) for reqs in plans], checker, done)
        self.assertEqual(errors, [])

        with self.server.channel() as ch:
            final = [ordering_check.read_all(ch, topic) for topic in topics]
        all_ids = [i for ids in final for i in ids]
        self.assertEqual(len(all_ids), len(set(all_ids)))  # API-287
        expected = sum(len(envs) for reqs in plans for r, envs in enumerate(reqs) if r % 7 != 3)
        self.assertEqual(len(all_ids), expected)
        self.assertGreater(len(views), 5)
        for t, seen in views:
            # API-201: a read is a prefix of the final order.
            ordering_check.assert_prefix(self, seen, final[t], "topic %d" % t)
        for t, heads in newest_seen.items():
            # OPS-010: each newest answer is an id of the topic, and heads never go back.
            self.assertEqual(heads, sorted(heads))
            for h in heads:
                self.assertIn(h, final[t])


class SqliteOrderingTest(OrderingMixin, harness.ServerTestCase):
    pass


@unittest.skipUnless(os.environ.get("XB_PG_PRIMARY"), "needs XB_PG_PRIMARY")
class PostgresOrderingTest(OrderingMixin, harness.PgServerTestCase):
    """QueryNewest here reads the streaming replica."""
    pass


if __name__ == "__main__":
    unittest.main()
