"""Every bound of API.md 3.12 that unary calls enforce, at the limit and one past it, with the
status the error contract tables (API-281): INVALID_ARGUMENT (+ REASON_TOO_LARGE on publish),
OUT_OF_RANGE for budgets on the wire and for responses."""
import unittest

import grpc

import envelopes as E
import harness
from test_envelope_api import publish_error
from xmtp.backend.v1 import backend_pb2

PUBLISH = "/xmtp.backend.v1.PublishService/Publish"
QUERY = "/xmtp.backend.v1.QueryService/Query"
NEWEST = "/xmtp.backend.v1.QueryService/QueryNewest"

# Small bounds so each edge is cheap to reach; OPS-021 holds (1000 + 256 <= 2000, 1000 + 3 <= 4000).
LIMITS = """[limits]
max_envelope_bytes = 1000
max_request_bytes = 4000
max_response_bytes = 2000
max_publish_topics = 5
max_query_topics = 6
max_newest_metadata_topics = 7
max_newest_full_topics = 3
"""


def sized_group_message(gid, size):
    """A group message whose canonical ClientEnvelope encoding is exactly `size` bytes."""
    for pad in range(size, 0, -1):
        env = E.group_message(gid, 1, b"x" * pad)
        if len(env.SerializeToString()) == size:
            return env
        if len(env.SerializeToString()) < size:
            break
    raise AssertionError("no padding gives %d bytes" % size)


class LimitsTest(harness.ServerTestCase):
    config = harness.minimal_config(LIMITS)

    def call(self, path, request, response_type):
        with self.server.channel() as ch:
            return harness.unary(ch, path, request, response_type, timeout=20)[0]

    def fails(self, path, request, response_type):
        with self.server.channel() as ch:
            with self.assertRaises(grpc.RpcError) as ctx:
                harness.unary(ch, path, request, response_type, timeout=20)
        return ctx.exception

    def test_envelope_bytes_at_and_past_the_bound(self):
        ok = sized_group_message(b"e" * 16, 1000)
        self.call(PUBLISH, backend_pb2.PublishRequest(envelopes=[ok]), backend_pb2.PublishResponse)
        over = sized_group_message(b"f" * 16, 1001)
        err = self.fails(PUBLISH, backend_pb2.PublishRequest(envelopes=[over]),
                         backend_pb2.PublishResponse)
        self.assertEqual(err.code(), grpc.StatusCode.INVALID_ARGUMENT)
        detail = publish_error(err)
        self.assertEqual(detail.reason, backend_pb2.PublishError.REASON_TOO_LARGE)
        self.assertEqual(detail.index, 0)

    def test_publish_topics_at_and_past_the_bound(self):
        five = [E.group_message(bytes([65 + i]) * 16, 1, b"t") for i in range(5)]
        self.call(PUBLISH, backend_pb2.PublishRequest(envelopes=five), backend_pb2.PublishResponse)
        six = five + [E.group_message(b"Z" * 16, 1, b"t")]
        detail = publish_error(self.fails(PUBLISH, backend_pb2.PublishRequest(envelopes=six),
                                          backend_pb2.PublishResponse))
        self.assertEqual(detail.reason, backend_pb2.PublishError.REASON_TOO_LARGE)
        self.assertFalse(detail.HasField("index"))  # a request-level bound

    # verifies: API-282 — a request whose wire length is over max_request_bytes: OUT_OF_RANGE.
    def test_request_bytes_on_the_wire(self):
        envs = [sized_group_message(bytes([97 + i]) * 16, 900) for i in range(5)]
        req = backend_pb2.PublishRequest(envelopes=envs)
        self.assertGreater(len(req.SerializeToString()), 4000)
        err = self.fails(PUBLISH, req, backend_pb2.PublishResponse)
        self.assertEqual(err.code(), grpc.StatusCode.OUT_OF_RANGE)
        four = backend_pb2.PublishRequest(envelopes=envs[:4])
        self.assertLessEqual(len(four.SerializeToString()), 4000)
        self.call(PUBLISH, four, backend_pb2.PublishResponse)

    def test_query_topics_at_and_past_the_bound(self):
        def req(n):
            return backend_pb2.QueryRequest(queries=[
                backend_pb2.TopicQuery(topic=backend_pb2.Topic(topic=E.group_topic(b"q" * 16)))
                for _ in range(n)])  # counted before repeated topics merge (API-242)
        self.call(QUERY, req(6), backend_pb2.QueryResponse)
        self.assertEqual(self.fails(QUERY, req(7), backend_pb2.QueryResponse).code(),
                         grpc.StatusCode.INVALID_ARGUMENT)

    def test_newest_topic_bounds_depend_on_full_envelopes(self):
        def req(n, full):
            return backend_pb2.QueryNewestRequest(
                topics=[backend_pb2.Topic(topic=E.group_topic(b"n" * 16)) for _ in range(n)],
                include_full_envelope=full)
        self.call(NEWEST, req(7, False), backend_pb2.QueryNewestResponse)
        self.assertEqual(self.fails(NEWEST, req(8, False), backend_pb2.QueryNewestResponse).code(),
                         grpc.StatusCode.INVALID_ARGUMENT)
        self.call(NEWEST, req(3, True), backend_pb2.QueryNewestResponse)
        self.assertEqual(self.fails(NEWEST, req(4, True), backend_pb2.QueryNewestResponse).code(),
                         grpc.StatusCode.INVALID_ARGUMENT)

    # verifies: API-283 — a page over max_response_bytes fails OUT_OF_RANGE, never truncated.
    def test_response_over_budget_is_out_of_range(self):
        gid = b"r" * 16
        for i in range(3):
            self.call(PUBLISH, backend_pb2.PublishRequest(
                envelopes=[sized_group_message(gid, 900 - i)]), backend_pb2.PublishResponse)
        query = backend_pb2.QueryRequest(queries=[
            backend_pb2.TopicQuery(topic=backend_pb2.Topic(topic=E.group_topic(gid)))], limit=3)
        self.assertEqual(self.fails(QUERY, query, backend_pb2.QueryResponse).code(),
                         grpc.StatusCode.OUT_OF_RANGE)
        query.limit = 1
        page = self.call(QUERY, query, backend_pb2.QueryResponse)
        self.assertEqual(len(page.envelopes), 1)
        self.assertTrue(page.continuation.has_more)


if __name__ == "__main__":
    unittest.main()
