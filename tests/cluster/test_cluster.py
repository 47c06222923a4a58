"""Three instances on one PostgreSQL primary + replica behind HAProxy (issue 32, deliverable 1):
publishers and Subscribe streams (several topics each) talk only to the balancer for a bounded
time; afterwards every acknowledged envelope is readable with Query on every instance, every
instance reads the same order, and every stream's and Query's view of a topic is a gap-free,
duplicate-free prefix of it (the ordering checker), whichever instance served it."""
import os
import time
import unittest

import cluster as C
import envelopes as E
import h2_raw
import load as L
import stream_client as S
from xmtp.backend.v1 import backend_pb2

LOAD_S = float(os.environ.get("XB_CLUSTER_LOAD_S", "8"))


@unittest.skipUnless(C.HAVE_PG, "needs XB_PG_PRIMARY")
class ClusterTest(unittest.TestCase):
    # verifies: API-201, API-254, OPS-010 — across instances behind a balancer.
    def test_load_through_the_balancer_loses_nothing_and_keeps_order(self):
        with C.Cluster(instances=3) as cluster:
            load = L.Load(cluster.target, "cl%d" % os.getpid())
            load.start()
            time.sleep(LOAD_S)
            with cluster.channel() as ch:
                load.finish(ch)
            report = load.verify(cluster.instances, "no fault")
            handled = [S.value(S.scrape(s), "grpc_server_handled_total", grpc_method="Publish")
                       for s in cluster.instances]
            print("publish calls per instance: %s" % handled)
        L.check_no_loss(self, report)
        self.assertEqual(dict(report.stream_ends), {})  # no fault: no stream ended
        self.assertEqual(dict(report.publish_failures), {})
        self.assertEqual(dict(report.query_failures), {})
        # The balancer spreads calls over every instance (round robin per HTTP/2 stream).
        for n in handled:
            self.assertGreater(n, 0, handled)


PUBLISH = "/xmtp.backend.v1.PublishService/Publish"


def publish_from(source, port, group):
    """One Publish of one fresh group message over a raw HTTP/2 connection from `source` (a
    loopback address of its own) to the balancer; returns (grpc-status, grpc-message)."""
    client = h2_raw.Client(port, source=source)
    try:
        request = backend_pb2.PublishRequest(
            envelopes=[E.group_message(group, ciphertext=os.urandom(16))])
        stream = client.start(PUBLISH, request.SerializeToString())
        client.run_until(lambda: stream.ended, 10)
        return stream.grpc_status, stream.grpc_message
    finally:
        client.close()


@unittest.skipUnless(C.HAVE_PG, "needs XB_PG_PRIMARY")
class QuotasBehindTheBalancerTest(unittest.TestCase):
    # verifies: issue 32 (per-address quotas), server.proxy_protocol — behind HAProxy with
    # send-proxy-v2 (and check-send-proxy: the instance stays UP), the address quota charges each
    # client's own address: two clients of one balancer have a bucket each. One instance, so
    # that one bucket takes every call (buckets are per instance).
    def test_each_client_behind_the_balancer_has_its_own_bucket(self):
        quota = "[quotas.address]\npublish_per_second = 0.02\npublish_burst = 2\n"
        with C.Cluster(instances=1, extra_config=quota, proxy_protocol=True) as cluster:
            port = cluster.balancer.port
            group = os.urandom(16)
            first = [publish_from("127.0.0.2", port, group) for _ in range(3)]
            second = [publish_from("127.0.0.3", port, group) for _ in range(2)]
        self.assertEqual([code for code, _ in first], [0, 0, 8], first)
        self.assertRegex(first[2][1], "^publish quota of this client address is exhausted")
        self.assertEqual([code for code, _ in second], [0, 0], second)


if __name__ == "__main__":
    unittest.main()
