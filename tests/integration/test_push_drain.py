"""The dispatcher's drain (PUSH.md 8.4, 8.6; OPS-007/008): SIGTERM during dispatch to a slow
webhook receiver. In-flight attempts that can finish within server.max_drain_duration_ms do, the
cursor is persisted and the next run on the same database does not repeat them; attempts cut by
the deadline, and envelopes never attempted, are delivered by the next run (at least once)."""
import os
import tempfile
import time
import unittest

import harness
import push_client as P
import push_fakes as F


class DrainTest(unittest.TestCase):
    def setUp(self):
        self.ca = F.TestCa()
        self.receiver = F.WebhookReceiver(self.ca)
        self.data = tempfile.TemporaryDirectory(prefix="xb-push-drain-")
        self.addCleanup(self.ca.cleanup)
        self.addCleanup(self.receiver.close)
        self.addCleanup(self.data.cleanup)
        self.recipient = P.Recipient()
        self.key = os.urandom(32)
        self.url = self.receiver.url("/hook", self.key)

    def server(self, drain_ms):
        """A server on this test's database file (it survives the process)."""
        config = P.server_config(
            "[push]\nmax_attempts = 1\n[push.http]\nallow_private_addresses = true\n",
            server_extra="max_drain_duration_ms = %d\n" % drain_ms).replace("{data}",
                                                                            self.data.name)
        return harness.Server(config=config, binary=harness.TEST_BINARY, env=self.ca.env())

    def subscribe(self, server):
        gid = P.group_id()
        P.register(server, self.recipient, url=self.url, signing_key=self.key)
        P.update(server, self.recipient, adds=[P.subscription(P.group_topic(gid))])
        return gid

    def publish_batch(self, server, gid, n):
        return [m.cursor.sequence_id for m in
                P.publish(server, *[P.app_message(gid) for _ in range(n)])]

    def pushed_ids(self, since=0.0):
        return [q.info["sequence_id"] for q in self.receiver.snapshot(lambda q: q.time >= since)]

    def sigterm_and_wait(self, server, drain_ms):
        started = time.monotonic()
        server.terminate()
        code = server.wait(timeout=drain_ms / 1000 + 10)
        elapsed = time.monotonic() - started
        self.assertEqual(code, 0)
        self.assertLess(elapsed, drain_ms / 1000 + 5)
        return elapsed

    # verifies: PUSH-257 (8.6) — in-flight attempts finish within the drain deadline and the
    # cursor is persisted: the next run repeats none of them.
    def test_in_flight_attempts_finish_and_cursor_is_persisted(self):
        drain_ms = 4000
        self.receiver.answers.default_delay = 1.0
        with self.server(drain_ms) as first:
            gid = self.subscribe(first)
            ids = self.publish_batch(first, gid, 40)
            self.receiver.wait_for(lambda q: True, 1, 20)
            self.sigterm_and_wait(first, drain_ms)
            self.assertEqual(sorted(self.pushed_ids()), ids)  # each once, all before the exit
        self.receiver.answers.default_delay = 0.0
        second_started = time.monotonic()
        with self.server(drain_ms) as second:
            marker = self.publish_batch(second, gid, 1)
            self.receiver.wait_for(lambda q: q.info.get("sequence_id") == marker[0], 1, 20)
            time.sleep(0.5)
            self.assertEqual(self.pushed_ids(second_started), marker)
        self.assertEqual(self.receiver.problems(), [])

    # verifies: PUSH-257 (8.4, 8.6) — attempts cut by the deadline and envelopes never attempted
    # are delivered by the next run on the same database.
    def test_what_had_no_first_attempt_is_delivered_by_the_next_run(self):
        drain_ms = 1000
        self.receiver.answers.default_delay = 3.0  # longer than the drain: cut
        with self.server(drain_ms) as first:
            gid = self.subscribe(first)
            cut = self.publish_batch(first, gid, 20)
            self.receiver.wait_for(lambda q: True, 1, 20)
            unattempted = self.publish_batch(first, gid, 20)
            self.sigterm_and_wait(first, drain_ms)
        first_run = set(self.pushed_ids())
        self.receiver.answers.default_delay = 0.0
        second_started = time.monotonic()
        with self.server(drain_ms) as second:
            want = set(cut) | (set(unattempted) - first_run)
            harness.wait_for(lambda: want <= set(self.pushed_ids(second_started)), 20,
                             "the next run to deliver every envelope without a finished attempt")
            everything = set(self.pushed_ids())
            self.assertTrue(set(cut) | set(unattempted) <= everything)
            self.assertTrue(second.proc.poll() is None)
        print("drain replay: %d pushes in run 1, %d in run 2 (40 envelopes)"
              % (len(first_run), len(self.pushed_ids(second_started))))
        self.assertEqual(self.receiver.problems(), [])


if __name__ == "__main__":
    unittest.main()
