"""Three instances on one PostgreSQL primary + replica behind HAProxy (issue 32, deliverable 1):
publishers and Subscribe streams (several topics each) talk only to the balancer for a bounded
time; afterwards every acknowledged envelope is readable with Query on every instance, every
instance reads the same order, and every stream's and Query's view of a topic is a gap-free,
duplicate-free prefix of it (the ordering checker), whichever instance served it."""
import os
import time
import unittest

import cluster as C
import load as L
import stream_client as S

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


if __name__ == "__main__":
    unittest.main()
