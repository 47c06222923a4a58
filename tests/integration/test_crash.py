"""Bad input and crashes never lose or half-store data (issue: envelope store, deliverable 6):
SIGKILL in the middle of publishing, then a restart: every request is stored whole or not at all,
and retrying the same bytes returns the stored ids as duplicates (API-220, API-222, API-224)."""
import os
import signal
import threading
import time
import unittest

import grpc

import envelopes as E
import harness
from xmtp.backend.v1 import backend_pb2

PUBLISH = "/xmtp.backend.v1.PublishService/Publish"
QUERY = "/xmtp.backend.v1.QueryService/Query"


def request(i):
    # Four topics per request, several envelopes each: a partial commit would show up as a topic
    # holding fewer envelopes than the request carried.
    envs = []
    for t in range(4):
        gid = ("crash-%04d-%d" % (i, t)).encode().ljust(16, b"_")[:16]
        for k in range(3):
            envs.append(E.group_message(gid, 1, b"payload-%d-%d-%d" % (i, t, k) + b"x" * 2000))
    return backend_pb2.PublishRequest(envelopes=envs)


def topics_of(i):
    return [E.group_topic(("crash-%04d-%d" % (i, t)).encode().ljust(16, b"_")[:16])
            for t in range(4)]


class CrashTest(unittest.TestCase):
    def test_sigkill_mid_publish_leaves_whole_requests_only(self):
        server = harness.Server()
        server.start()
        config = server.args[2]
        sent = []
        stop = threading.Event()

        def publisher():
            ch = server.channel()
            i = 0
            while not stop.is_set():
                sent.append(i)
                try:
                    harness.unary(ch, PUBLISH, request(i), backend_pb2.PublishResponse, timeout=5)
                except grpc.RpcError:
                    break
                i += 1
            ch.close()

        threads = [threading.Thread(target=publisher) for _ in range(1)]
        for t in threads:
            t.start()
        harness.wait_for(lambda: len(sent) >= 40, 30, "publishes under way")
        os.kill(server.proc.pid, signal.SIGKILL)
        server.proc.wait(10)
        stop.set()
        for t in threads:
            t.join(10)

        again = harness.Server(config=config)
        again.start()
        try:
            with again.channel() as ch:
                whole = 0
                for i in sent:
                    counts = []
                    for topic in topics_of(i):
                        page, _ = harness.unary(ch, QUERY, backend_pb2.QueryRequest(
                            queries=[backend_pb2.TopicQuery(topic=backend_pb2.Topic(topic=topic))]),
                            backend_pb2.QueryResponse)
                        counts.append(len(page.envelopes))
                    self.assertIn(counts, ([0, 0, 0, 0], [3, 3, 3, 3]), "request %d" % i)
                    stored = counts[0] == 3
                    whole += stored
                    # A retry returns the stored ids when it was stored, and stores it otherwise.
                    resp, _ = harness.unary(ch, PUBLISH, request(i), backend_pb2.PublishResponse)
                    if stored:
                        for meta, env_topic in zip(resp.envelope_metas,
                                                   [t for t in topics_of(i) for _ in range(3)]):
                            self.assertEqual(meta.topic.topic, env_topic)
                        page, _ = harness.unary(ch, QUERY, backend_pb2.QueryRequest(
                            queries=[backend_pb2.TopicQuery(
                                topic=backend_pb2.Topic(topic=topics_of(i)[0]))]),
                            backend_pb2.QueryResponse)
                        self.assertEqual([e.meta.cursor.sequence_id for e in page.envelopes],
                                         [m.cursor.sequence_id for m in resp.envelope_metas[:3]])
                self.assertGreaterEqual(whole, 39)
        finally:
            again.kill()
            server.tmp.cleanup()


if __name__ == "__main__":
    unittest.main()
