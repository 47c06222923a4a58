"""One dispatcher per deployment (PUSH.md 8.1): two backend instances (test build) on one
PostgreSQL primary elect one dispatcher through the advisory lock (xmtp_push_dispatcher 1 on one,
0 on the other); no duplicate push under a publish load; after SIGKILL of the holder mid-load the
other takes over within two poll intervals plus the lock retry, and every eligible envelope is
pushed at least once (duplicates, inside the documented at-least-once window, are counted and
printed). PostgreSQL only (XB_PG_PRIMARY)."""
import collections
import os
import threading
import time
import unittest

import grpc

import harness
import push_client as P
import push_fakes as F
import stream_client as S

POLL_S = 0.1  # streams.poll_interval_ms default
RECIPIENTS = 3


@unittest.skipUnless(S.HAVE_PG, "needs XB_PG_PRIMARY")
class ClusterTest(unittest.TestCase):
    def setUp(self):
        self.ca = F.TestCa()
        self.receiver = F.WebhookReceiver(self.ca)
        self.database = harness.create_pg_database()
        self.addCleanup(self.ca.cleanup)
        self.addCleanup(self.receiver.close)
        self.addCleanup(self.database.drop)
        config = P.server_config("[push]\nmax_attempts = 2\n[push.http]\n"
                                 "allow_private_addresses = true\n", self.database)
        self.servers = []
        for _ in range(2):
            server = harness.Server(config=config, binary=harness.TEST_BINARY, env=self.ca.env())
            server.start()
            self.addCleanup(self.stop, server)
            self.servers.append(server)
        # single_holder answers an index, and index 0 is falsy: wait on "is there one".
        harness.wait_for(lambda: self.single_holder() is not None, 20, "exactly one dispatcher")
        self.holder = self.single_holder()
        self.gid = P.group_id()
        self.recipients = []
        for i in range(RECIPIENTS):
            r = P.Recipient()
            r.path = "/hook-%d" % i
            key = os.urandom(32)
            P.register(self.servers[i % 2], r, url=self.receiver.url(r.path, key),
                       signing_key=key)
            P.update(self.servers[i % 2], r, adds=[P.subscription(P.group_topic(self.gid))])
            self.recipients.append(r)

    @staticmethod
    def stop(server):
        server.kill()
        server.tmp.cleanup()
        server.check_sanitizers()

    def gauge(self, server):
        return P.metric(server, "xmtp_push_dispatcher")

    def single_holder(self):
        """The index of the one instance with xmtp_push_dispatcher 1 (the other 0), else None."""
        values = [self.gauge(s) for s in self.servers]
        if sorted(values) == [0, 1]:
            return values.index(1)
        return None

    def publish_load(self, servers, batches, size, out, stop=None, pace=0.0):
        """Publishes `batches` x `size` eligible messages round-robin over `servers` (the live
        ones), `pace` seconds apart; appends the sequence ids to `out`."""
        for i in range(batches):
            if stop is not None and stop.is_set():
                return
            live = [s for s in servers if s.proc.poll() is None]
            try:
                metas = P.publish(live[i % len(live)],
                                  *[P.app_message(self.gid) for _ in range(size)])
            except grpc.RpcError:  # the instance was killed under this call: try the next one
                continue
            out.extend(m.cursor.sequence_id for m in metas)
            time.sleep(pace)

    def pushes(self):
        """{(recipient path, sequence id): count}."""
        return collections.Counter((q.path, q.info.get("sequence_id"))
                                   for q in self.receiver.snapshot())

    def wait_all_pushed(self, ids, timeout=60):
        want = {(r.path, i) for r in self.recipients for i in ids}
        harness.wait_for(lambda: want <= set(self.pushes()), timeout,
                         "every eligible envelope pushed to every recipient")

    # verifies: PUSH-257 (8.1) — one dispatcher, no duplicate push under a publish load.
    def test_one_dispatcher_no_duplicates(self):
        ids = []
        self.publish_load(self.servers, 30, 5, ids)
        self.wait_all_pushed(ids)
        time.sleep(0.5)
        counts = self.pushes()
        duplicates = {k: n for k, n in counts.items() if n > 1}
        self.assertEqual(duplicates, {})
        self.assertEqual(len(counts), RECIPIENTS * len(ids))
        self.assertEqual(self.single_holder(), self.holder)  # the holder never changed
        self.assertEqual(self.receiver.problems(), [])

    # verifies: PUSH-257 (8.1, 8.4) — SIGKILL of the holder mid-load: takeover within two poll
    # intervals plus the lock retry; every eligible envelope pushed at least once.
    def test_holder_killed_mid_load(self):
        ids = []
        stop = threading.Event()
        loader = threading.Thread(target=self.publish_load,
                                  args=(self.servers, 400, 5, ids, stop, 0.05))
        loader.start()
        try:
            harness.wait_for(lambda: len(self.receiver.snapshot()) >= 30, 30,
                             "dispatch under load")
            holder = self.servers[self.holder]
            other = self.servers[1 - self.holder]
            killed = time.monotonic()
            holder.proc.kill()
            holder.proc.wait(timeout=10)
            harness.wait_for(lambda: self.gauge(other) == 1, 10, "the other instance to take over")
            takeover = time.monotonic() - killed
            time.sleep(1.0)  # more load through the survivor
        finally:
            stop.set()
            loader.join(60)
        self.wait_all_pushed(ids)
        counts = self.pushes()
        duplicates = sum(n - 1 for n in counts.values() if n > 1)
        print("push cluster: takeover %.3f s after SIGKILL; %d envelopes x %d recipients; "
              "%d duplicate pushes" % (takeover, len(ids), RECIPIENTS, duplicates))
        # Two poll intervals plus one lock retry, with slack for a scrape on a shared machine.
        self.assertLess(takeover, 3 * POLL_S + 1.0)
        self.assertEqual(self.receiver.problems(), [])


if __name__ == "__main__":
    unittest.main()
