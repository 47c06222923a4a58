"""Publish -> push, end to end through the three provider fakes (PUSH.md sections 6-9): exactly one
push per subscribed recipient per eligible envelope, none for ineligible ones or at/below the start
position, include_commits, sender suppression, and every outcome class of 8.5 driven by scripted
provider answers, read back from the metrics endpoint. On SQLite and, with XB_PG_PRIMARY set, on
PostgreSQL. push.max_attempts = 2, default poll interval (100 ms)."""
import os
import time
import unittest

import harness
import identity_updates as U
import key_package_vectors as V
import push_client as P
import push_fakes as F
import stream_client as S
from xmtp.backend.v1 import backend_pb2 as pb

WAIT = 20  # seconds for pushes that are due now (ticks of 100 ms, 1 s retry delays)
QUIET = 0.6  # after the expected pushes: long enough for a duplicate to show up (6 ticks)


def seq(meta):
    return meta.cursor.sequence_id


class DeliveryMixin(P.ProvidersServer):
    @classmethod
    def server_config(cls, providers):
        return providers.push_config(max_attempts=2)

    def setUp(self):
        self.apns = self.providers.apns
        self.fcm = self.providers.fcm
        self.hooks = self.providers.webhooks

    def tearDown(self):
        self.assertEqual(self.providers.problems(), [])

    # -- recipients on each channel; each knows how to find its own pushes --------------------

    def apns_recipient(self):
        r = P.Recipient()
        r.token = os.urandom(16).hex()
        r.channel = "apns"
        P.register(self.server, r, apns=r.token)
        return r

    def fcm_recipient(self):
        r = P.Recipient()
        r.token = "fcm-" + os.urandom(16).hex()
        r.channel = "fcm"
        P.register(self.server, r, fcm=r.token)
        return r

    def http_recipient(self):
        r = P.Recipient()
        r.path = "/hook-" + os.urandom(8).hex()
        r.key = os.urandom(24)
        r.channel = "http"
        P.register(self.server, r, url=self.hooks.url(r.path, r.key), signing_key=r.key)
        return r

    def pushes(self, r):
        if r.channel == "apns":
            return self.apns.for_token(r.token)
        if r.channel == "fcm":
            return self.fcm.sends(r.token)
        return self.hooks.for_path(r.path)

    def wait_pushes(self, r, count):
        fake = {"apns": self.apns, "fcm": self.fcm, "http": self.hooks}[r.channel]
        mine = {"apns": lambda q: q.info.get("token") == r.token,
                "fcm": lambda q: q.info.get("kind") == "send" and q.info.get("token") == r.token,
                "http": lambda q: q.path == r.path}[r.channel]
        return fake.wait_for(mine, count, WAIT)

    def pushed(self, r):
        """[(topic, sequence_id)] of the pushes this recipient received, in arrival order."""
        return [(q.info.get("topic"), q.info.get("sequence_id")) for q in self.pushes(r)]

    def counts(self):
        text = P.scrape(self.server)
        return {(c, o): S.value(text, "xmtp_push_deliveries_total", channel=c, outcome=o)
                for c in ("apns", "fcm", "http")
                for o in ("delivered", "failed", "rejected", "mismatch", "dead", "suppressed")}

    def wait_counts(self, before, deltas):
        def reached():
            now = self.counts()
            return all(now[k] >= before[k] + d for k, d in deltas.items())
        harness.wait_for(reached, WAIT, "deliveries_total to reach %r" % (deltas,))
        time.sleep(QUIET)
        now = self.counts()
        self.assertEqual({k: now[k] - before[k] for k in now if now[k] != before[k]},
                         {k: d for k, d in deltas.items() if d})

    # verifies: PUSH-219, PUSH-257, PUSH-259 — exactly one push per subscribed recipient per
    # eligible envelope on each channel; none for ineligible envelopes or at/below the start
    # position; commits only with include_commits, whatever should_push says.
    def test_what_is_pushed_and_to_whom(self):
        gid, installation = P.group_id(), os.urandom(32)
        g, w = P.group_topic(gid), P.welcome_topic(installation)
        old = P.publish(self.server, P.app_message(gid), P.welcome(installation))
        P.boundary_covers_published(self.server, self.engine)
        plain, commits, welcomes = self.apns_recipient(), self.http_recipient(), \
            self.fcm_recipient()
        P.update(self.server, plain, adds=[P.subscription(g)])
        P.update(self.server, commits, adds=[P.subscription(g, include_commits=True)])
        P.update(self.server, welcomes, adds=[P.subscription(w), P.subscription(g)])
        before = self.counts()
        metas = P.publish(
            self.server,
            P.app_message(gid, should_push=True),  # 0: everyone on g
            P.app_message(gid, should_push=False),  # 1: nobody
            P.commit(gid, should_push=False),  # 2: include_commits only
            P.commit(gid, should_push=True),  # 3: include_commits only
            P.welcome(installation),  # 4: w
            pb.ClientEnvelope.FromString(V.MINIMAL_CLIENT_ENVELOPE),  # 5: key package: nobody
            U.envelope(U.registration(int.from_bytes(os.urandom(6), "big"))[1]),  # 6: nobody
        )
        marker = P.publish(self.server, P.app_message(gid), P.welcome(installation))
        s = [seq(m) for m in metas]
        expect = {
            plain: [(g, s[0]), (g, seq(marker[0]))],
            commits: [(g, s[0]), (g, s[2]), (g, s[3]), (g, seq(marker[0]))],
            welcomes: [(g, s[0]), (w, s[4]), (g, seq(marker[0])), (w, seq(marker[1]))],
        }
        for r, pushes in expect.items():
            self.wait_pushes(r, len(pushes))
        self.wait_counts(before, {("apns", "delivered"): 2, ("http", "delivered"): 4,
                                  ("fcm", "delivered"): 4})
        for r, pushes in expect.items():
            self.assertEqual(sorted(self.pushed(r), key=lambda p: p[1]),
                             sorted(pushes, key=lambda p: p[1]), r.channel)
            self.assertTrue(all(q.info["sequence_id"] > seq(old[1]) for q in self.pushes(r)))
        self.assertTrue(all(q.info["recipient_id"] == commits.id for q in self.pushes(commits)))

    # verifies: PUSH-230 — the sender's own message is not pushed to it (key of the envelope's
    # epoch); a wrong HMAC, a subscription without keys, other keys, a short HMAC: pushed.
    def test_sender_suppression(self):
        gid = P.group_id()
        g = P.group_topic(gid)
        sender, no_keys, other_keys = self.http_recipient(), self.apns_recipient(), \
            self.fcm_recipient()
        base, keys = P.key_window()
        P.update(self.server, sender, adds=[P.subscription(g, keys=keys, epoch_base=base)])
        P.update(self.server, no_keys, adds=[P.subscription(g)])
        other_base, other = P.key_window()
        P.update(self.server, other_keys, adds=[P.subscription(g, keys=other,
                                                                epoch_base=other_base)])
        own = P.app_message(gid)
        own.group_message.sender_hmac = P.sender_hmac(keys[1], own)  # index 1: this epoch
        wrong = P.app_message(gid, sender_hmac=os.urandom(32))
        short = P.app_message(gid)
        short.group_message.sender_hmac = P.sender_hmac(keys[1], short)[:31]
        before = self.counts()
        metas = P.publish(self.server, own, wrong, short)
        s = [seq(m) for m in metas]
        self.wait_pushes(sender, 2)
        self.wait_pushes(no_keys, 3)
        self.wait_pushes(other_keys, 3)
        self.wait_counts(before, {("http", "suppressed"): 1, ("http", "delivered"): 2,
                                  ("apns", "delivered"): 3, ("fcm", "delivered"): 3})
        self.assertEqual(sorted(p[1] for p in self.pushed(sender)), s[1:])

    # verifies: PUSH-259, PUSH-234 — every outcome class of 8.5 (APNs 9.2, FCM 9.3, HTTPS 9.4)
    # from one publish; the recipient is deleted only on a terminal answer.
    def test_outcome_classes(self):
        gid = P.group_id()
        g = P.group_topic(gid)
        rs = {name: make() for name, make in (
            ("apns_5xx", self.apns_recipient), ("apns_410", self.apns_recipient),
            ("apns_bad_token", self.apns_recipient), ("apns_expired_jwt", self.apns_recipient),
            ("apns_ok", self.apns_recipient), ("http_404", self.http_recipient),
            ("http_500_then_ok", self.http_recipient), ("fcm_unregistered", self.fcm_recipient),
            ("fcm_mismatch", self.fcm_recipient), ("fcm_400", self.fcm_recipient))}
        self.apns.script(rs["apns_5xx"].token, (500, "InternalServerError"), (503, None))
        self.apns.script(rs["apns_410"].token, (410, "Unregistered"))
        self.apns.script(rs["apns_bad_token"].token, (400, "BadDeviceToken"))
        self.apns.script(rs["apns_expired_jwt"].token, (403, "ExpiredProviderToken"))
        self.hooks.script(rs["http_404"].path, F.Answer(404), F.Answer(410))
        self.hooks.script(rs["http_500_then_ok"].path, F.Answer(500))
        self.fcm.script(rs["fcm_unregistered"].token, F.FcmAnswer(404, error_code="UNREGISTERED"))
        self.fcm.script(rs["fcm_mismatch"].token, F.FcmAnswer(403,
                                                              error_code="SENDER_ID_MISMATCH"))
        self.fcm.script(rs["fcm_400"].token, F.FcmAnswer(400, error_code="INVALID_ARGUMENT"))
        for r in rs.values():
            P.update(self.server, r, adds=[P.subscription(g)])
        before = self.counts()
        dead_before = P.metric(self.server, "xmtp_push_recipients_total", action="dead")
        P.publish(self.server, P.app_message(gid))
        self.wait_counts(before, {
            ("apns", "failed"): 1, ("apns", "dead"): 1, ("apns", "mismatch"): 1,
            ("apns", "delivered"): 2, ("http", "dead"): 1, ("http", "delivered"): 1,
            ("fcm", "dead"): 1, ("fcm", "mismatch"): 1, ("fcm", "rejected"): 1})
        self.assertEqual(P.metric(self.server, "xmtp_push_recipients_total", action="dead"),
                         dead_before + 3)
        attempts = {name: len(self.pushes(r)) for name, r in rs.items()}
        self.assertEqual(attempts, {
            "apns_5xx": 2, "apns_410": 1, "apns_bad_token": 1, "apns_expired_jwt": 2,
            "apns_ok": 1, "http_404": 2, "http_500_then_ok": 2, "fcm_unregistered": 1,
            "fcm_mismatch": 1, "fcm_400": 1})
        # ExpiredProviderToken: one resend inside the attempt, with a newly signed token.
        first, resend = self.pushes(rs["apns_expired_jwt"])
        self.assertNotEqual(first.info["jwt"], resend.info["jwt"])
        self.assertLess(resend.time - first.time, 1.0)  # not a retry after the 1 s delay
        # Retries wait the channel's 1 s delay.
        for name in ("apns_5xx", "http_404", "http_500_then_ok"):
            a, b = self.pushes(rs[name])
            self.assertGreaterEqual(b.time - a.time, 0.9, name)
        gone = {"apns_410", "http_404", "fcm_unregistered"}
        for name, r in rs.items():
            self.assertEqual(P.is_registered(self.server, r), name not in gone, name)

    # verifies: PUSH-259 — an APNs token that is not hex is rejected without a request.
    def test_apns_token_not_hex_is_rejected_without_a_request(self):
        gid = P.group_id()
        r = P.Recipient()
        P.register(self.server, r, apns="not-a-hex-token")
        P.update(self.server, r, adds=[P.subscription(P.group_topic(gid))])
        ok = self.apns_recipient()
        P.update(self.server, ok, adds=[P.subscription(P.group_topic(gid))])
        before = self.counts()
        P.publish(self.server, P.app_message(gid))
        self.wait_counts(before, {("apns", "rejected"): 1, ("apns", "delivered"): 1})
        self.assertEqual(self.apns.snapshot(lambda q: q.info.get("token") == "not-a-hex-token"),
                         [])


class SqliteDeliveryTest(DeliveryMixin, unittest.TestCase):
    pass


@unittest.skipUnless(S.HAVE_PG, "needs XB_PG_PRIMARY")
class PostgresDeliveryTest(DeliveryMixin, unittest.TestCase):
    engine_class = S.PostgresEngine


class FcmRetryAfterTest(unittest.TestCase):
    """FCM only, access tokens that live 25 s (refreshed after 5 s)."""

    # verifies: PUSH-259 (9.3) — Retry-After above the floor is honoured (503: max(10 s, RA));
    # a 429's floor is 60 s whatever a smaller Retry-After says; the access token is refreshed
    # at expires_in - 20 s and a stale one is never sent.
    def test_retry_after_and_token_refresh(self):
        providers = P.Providers(fcm_expires_in=25)
        self.addCleanup(providers.close)
        fcm = providers.fcm
        with P.new_server(S.Engine(), providers.push_config(channels=("fcm",), max_attempts=2),
                          env=providers.env()) as server:
            gid = P.group_id()
            slow, quota = P.Recipient(), P.Recipient()
            for r, token in ((slow, "fcm-slow"), (quota, "fcm-quota")):
                P.register(server, r, fcm=token)
                P.update(server, r, adds=[P.subscription(P.group_topic(gid))])
            fcm.script("fcm-slow", F.FcmAnswer(503, retry_after=12))
            fcm.script("fcm-quota", F.FcmAnswer(429, retry_after=2))
            P.publish(server, P.app_message(gid))
            first, retry = fcm.wait_for(lambda q: q.info.get("token") == "fcm-slow", 2, 30)
            gap = retry.time - first.time
            self.assertGreaterEqual(gap, 11.5)
            self.assertLess(gap, 16)
            P.wait_metric(server, "xmtp_push_deliveries_total", 1, 10, channel="fcm",
                          outcome="delivered")
            self.assertEqual(len(fcm.sends("fcm-quota")), 1)  # still waiting out its 60 s
            self.assertGreaterEqual(len(fcm.token_requests()), 2)
            self.assertNotEqual(first.info["access_token"], retry.info["access_token"])
            self.assertEqual(providers.problems(), [])


if __name__ == "__main__":
    unittest.main()
