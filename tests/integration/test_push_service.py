"""NotificationService over real gRPC (PUSH.md sections 2-5): the admission table of 4.1 in order,
the shape rules of 5.1, the topic limit, RecipientState and renewal, the service without [push],
health, auth first, and no request data in logs or metrics (OPS-014). On SQLite and, with
XB_PG_PRIMARY set, on PostgreSQL."""
import base64
import os
import time
import unittest

import grpc

import harness
import health_pb2
import push_client as P
import stream_client as S
from xmtp.backend.v1 import backend_pb2 as pb

OK = grpc.StatusCode.OK
INVALID = grpc.StatusCode.INVALID_ARGUMENT
NOT_FOUND = grpc.StatusCode.NOT_FOUND
DENIED = grpc.StatusCode.PERMISSION_DENIED
PRECONDITION = grpc.StatusCode.FAILED_PRECONDITION
EXHAUSTED = grpc.StatusCode.RESOURCE_EXHAUSTED
MALFORMED = (INVALID, "request is malformed")
NOT_REGISTERED = (NOT_FOUND, "recipient is not registered")
BAD_SECRET = (DENIED, "recipient secret is not valid")
NOT_CONFIGURED = (PRECONDITION, "channel is not configured")
BAD_URL = (INVALID, "webhook url is not allowed")
BAD_KEY = (INVALID, "webhook signing key length is not allowed")
BAD_SUBSCRIPTION = (INVALID, "subscription is malformed")
LIMIT = (EXHAUSTED, "recipient topic limit reached")
TTL = 86400
MAX_TOPICS = 3
GOOD_URL = "https://8.8.8.8/hook"  # an IP literal: no lookup at Register
HEALTH_CHECK = "/grpc.health.v1.Health/Check"
API_KEY = "push-api-key-" + "z" * 32


def topic(kind=0):
    return bytes([kind]) + os.urandom(16 if kind == 0 else 32)


def health(server, service):
    with server.channel() as ch:
        resp, _ = harness.unary(ch, HEALTH_CHECK, health_pb2.HealthCheckRequest(service=service),
                                health_pb2.HealthCheckResponse)
    return resp.status


class ServiceMixin(P.ProvidersServer):
    """One server per class: APNs and HTTP configured (FCM not), no private webhook addresses,
    max_push_topics = 3, ttl = 1 day."""

    @classmethod
    def server_config(cls, providers):
        return providers.push_config(channels=("apns", "http"), ttl=TTL, http_extra="") + \
            "[limits]\nmax_push_topics = %d\n" % MAX_TOPICS

    def status(self, path, request, response_type=pb.RecipientState):
        return P.status_of(self.server, path, request, response_type)

    def assertStatus(self, expected, path, request, response_type=pb.RecipientState):
        self.assertEqual(self.status(path, request, response_type), expected, request)

    def registered(self, **delivery):
        r = P.Recipient()
        P.register(self.server, r, **(delivery or {"apns": "00ab"}))
        return r

    def raw(self, path, body):
        with self.server.channel() as ch:
            try:
                harness.raw_unary(ch, path, body)
            except grpc.RpcError as e:
                return e.code(), e.details()
        return OK, None

    # verifies: PUSH-253 row 0 — an undecodable body.
    def test_row0_malformed_body(self):
        for path in (P.REGISTER, P.UNREGISTER, P.UPDATE):
            self.assertEqual(self.raw(path, b"\xff\xff\xff"), MALFORMED, path)

    # verifies: PUSH-253 row 1 — a bad id or secret length beats every later row.
    def test_row1_lengths_beat_everything_later(self):
        stored = self.registered()
        for rid, secret in ((os.urandom(31), os.urandom(32)), (os.urandom(33), os.urandom(32)),
                            (b"", os.urandom(32)), (os.urandom(32), os.urandom(31)),
                            (os.urandom(32), b""), (stored.id, os.urandom(33))):
            # no delivery (4a), unknown id (2), wrong secret (3): all later rows.
            self.assertStatus(MALFORMED, P.REGISTER,
                              pb.RegisterRequest(recipient_id=rid, recipient_secret=secret))
            self.assertStatus(MALFORMED, P.UNREGISTER,
                              pb.UnregisterRequest(recipient_id=rid, recipient_secret=secret),
                              pb.UnregisterResponse)
            self.assertStatus(MALFORMED, P.UPDATE, pb.UpdateSubscriptionsRequest(
                recipient_id=rid, recipient_secret=secret, adds=[P.subscription(b"\x09")]))

    # verifies: PUSH-253 row 2 — unknown recipients on Unregister/UpdateSubscriptions, before the
    # shape of the subscriptions (4f).
    def test_row2_unknown_recipient(self):
        r = P.Recipient()
        self.assertStatus(NOT_REGISTERED, P.UNREGISTER,
                          pb.UnregisterRequest(recipient_id=r.id, recipient_secret=r.secret),
                          pb.UnregisterResponse)
        self.assertStatus(NOT_REGISTERED, P.UPDATE, P.update_request(r))
        self.assertStatus(NOT_REGISTERED, P.UPDATE,
                          P.update_request(r, adds=[P.subscription(b"\x09" * 17)]))

    # verifies: PUSH-253 row 3 — a stored id with the wrong secret, before 4a-4g; nothing changes.
    def test_row3_wrong_secret_beats_later_rows(self):
        stored = self.registered()
        t = topic()
        P.update(self.server, stored, adds=[P.subscription(t)])
        thief = P.Recipient()
        thief.id = stored.id
        for req in (P.register_request(thief),  # 4a
                    P.register_request(thief, fcm="tok"),  # 4b
                    P.register_request(thief, url="http://127.0.0.1/x"),  # 4c
                    P.register_request(thief, url=GOOD_URL, signing_key=b"k"),  # 4d
                    P.register_request(thief, apns=""),  # 4e
                    P.register_request(thief, url=GOOD_URL)):  # otherwise valid
            self.assertStatus(BAD_SECRET, P.REGISTER, req)
        self.assertStatus(BAD_SECRET, P.UPDATE,
                          P.update_request(thief, adds=[P.subscription(b"\x09")]))  # 4f
        self.assertStatus(BAD_SECRET, P.UPDATE, P.update_request(thief, removes=[t]))
        self.assertStatus(BAD_SECRET, P.UNREGISTER,
                          pb.UnregisterRequest(recipient_id=thief.id,
                                               recipient_secret=thief.secret),
                          pb.UnregisterResponse)
        state = P.update(self.server, stored)
        self.assertEqual((state.topic_count, state.channel), (1, pb.CHANNEL_APNS))

    # verifies: PUSH-253 rows 4a-4e, PUSH-210
    def test_rows_4a_to_4e_in_order(self):
        r = P.Recipient()
        self.assertStatus(MALFORMED, P.REGISTER, P.register_request(r))  # 4a
        self.assertStatus(NOT_CONFIGURED, P.REGISTER, P.register_request(r, fcm=""))  # 4b < 4e
        self.assertStatus(NOT_CONFIGURED, P.REGISTER, P.register_request(r, fcm="tok"))
        self.assertStatus(BAD_URL, P.REGISTER,  # 4c < 4d
                          P.register_request(r, url="http://8.8.8.8/x", signing_key=b"k"))
        self.assertStatus(BAD_URL, P.REGISTER, P.register_request(r, url="", signing_key=b"k"))
        for key in (b"k" * 15, b"k" * 65, b""):  # 4d
            self.assertStatus(BAD_KEY, P.REGISTER, P.register_request(r, url=GOOD_URL,
                                                                      signing_key=key))
        for token in ("", "a" * 2049, "ab\x00cd", "\u00e9" * 2049):  # 4e
            self.assertStatus(MALFORMED, P.REGISTER, P.register_request(r, apns=token))
        long_url = GOOD_URL + "/" + "a" * (2049 - len(GOOD_URL) - 1)
        self.assertEqual(len(long_url), 2049)
        self.assertStatus(MALFORMED, P.REGISTER, P.register_request(r, url=long_url))
        # Nothing was stored by any of them: the id is still unknown.
        self.assertStatus(NOT_REGISTERED, P.UPDATE, P.update_request(r))
        # The boundaries that pass: 16- and 64-byte keys, 2048 scalar values, non-ASCII.
        for key in (b"k" * 16, b"k" * 64):
            self.assertEqual(P.register(self.server, r, url=GOOD_URL, signing_key=key).channel,
                             pb.CHANNEL_HTTP)
        self.assertEqual(P.register(self.server, r, url=long_url[:-1]).channel, pb.CHANNEL_HTTP)
        for token in ("a" * 2048, "\u00e9" * 2048):
            self.assertEqual(P.register(self.server, r, apns=token).channel, pb.CHANNEL_APNS)

    # verifies: PUSH-215 (every 5.1 rule), PUSH-253 row 4f — nothing of a failed request applied.
    def test_row4f_shape_rules(self):
        r = self.registered()
        kept = topic()
        P.update(self.server, r, adds=[P.subscription(kept)])
        good = P.subscription(topic())
        dup = topic(1)
        bad_adds = [
            [P.subscription(b"")], [P.subscription(b"\x00" + os.urandom(15))],
            [P.subscription(b"\x00" + os.urandom(17))], [P.subscription(b"\x01" + os.urandom(31))],
            [P.subscription(b"\x01" + os.urandom(33))], [P.subscription(b"\x01" + os.urandom(16))],
            [P.subscription(b"\x02" + os.urandom(16))], [P.subscription(b"\x03" + os.urandom(32))],
            [P.subscription(b"\x04" + os.urandom(16))],
            [P.subscription(dup), P.subscription(dup)],
            [P.subscription(topic(), epoch_base=-1)],  # negative base, even without keys
            [P.subscription(topic(), keys=[os.urandom(42)] * 4)],
            [P.subscription(topic(), keys=[os.urandom(41)])],
            [P.subscription(topic(), keys=[os.urandom(42), os.urandom(43)])],
        ]
        for adds in bad_adds:
            self.assertStatus(BAD_SUBSCRIPTION, P.UPDATE,
                              P.update_request(r, adds=[good] + adds, removes=[kept]))
        for removes in ([b"\x02" + os.urandom(16)], [b""], [dup, dup], [good.topic]):
            self.assertStatus(BAD_SUBSCRIPTION, P.UPDATE,
                              P.update_request(r, adds=[good], removes=[kept] + removes))
        state = P.update(self.server, r)
        self.assertEqual(state.topic_count, 1)
        # The accepted edges: 0..3 keys of 42 bytes, base 0, welcome topics, keys ignored base.
        state = P.update(self.server, r, removes=[kept], adds=[
            P.subscription(topic(1), epoch_base=0, include_commits=True),
            P.subscription(topic(), keys=[os.urandom(42)] * 3, epoch_base=655),
            P.subscription(topic(), keys=[], epoch_base=12)])
        self.assertEqual(state.topic_count, 3)

    # verifies: PUSH-217, PUSH-216, PUSH-253 row 4g — nothing applied when the limit is exceeded;
    # replacements do not count; removes count first.
    def test_row4g_topic_limit(self):
        r = self.registered()
        topics = [topic() for _ in range(MAX_TOPICS)]
        self.assertEqual(P.update(self.server, r, adds=[P.subscription(t) for t in topics])
                         .topic_count, MAX_TOPICS)
        extra = topic()
        self.assertStatus(LIMIT, P.UPDATE, P.update_request(r, adds=[P.subscription(extra)]))
        self.assertStatus(LIMIT, P.UPDATE, P.update_request(
            r, adds=[P.subscription(extra), P.subscription(topic())], removes=[topics[0]]))
        self.assertEqual(P.update(self.server, r).topic_count, MAX_TOPICS)
        # The failed request removed nothing: removing topics[0] now changes the count.
        state = P.update(self.server, r, adds=[P.subscription(extra)], removes=[topics[0]])
        self.assertEqual(state.topic_count, MAX_TOPICS)
        state = P.update(self.server, r, adds=[P.subscription(topics[1], include_commits=True)])
        self.assertEqual(state.topic_count, MAX_TOPICS)  # a replacement
        self.assertEqual(P.update(self.server, r, removes=[topic()]).topic_count, MAX_TOPICS)

    # verifies: PUSH-255 — RecipientState: stored count, stored channel, renewal + ttl; renewal by
    # an empty update; Register keeps subscriptions (a token refresh).
    def test_recipient_state_and_renewal(self):
        r = P.Recipient()
        before = time.time_ns()
        state = P.register(self.server, r, apns="00ff")
        after = time.time_ns()
        self.assertEqual((state.topic_count, state.channel), (0, pb.CHANNEL_APNS))
        renewed = state.expires_at_ns - TTL * 10**9
        self.assertLessEqual(before - 5 * 10**9, renewed)
        self.assertLessEqual(renewed, after + 5 * 10**9)
        time.sleep(0.01)
        state2 = P.update(self.server, r, adds=[P.subscription(topic()), P.subscription(topic())])
        self.assertEqual(state2.topic_count, 2)
        self.assertGreater(state2.expires_at_ns, state.expires_at_ns)
        time.sleep(0.01)
        state3 = P.update(self.server, r)
        self.assertGreater(state3.expires_at_ns, state2.expires_at_ns)
        state4 = P.register(self.server, r, url=GOOD_URL)
        self.assertEqual((state4.topic_count, state4.channel), (2, pb.CHANNEL_HTTP))
        self.assertGreater(state4.expires_at_ns, state3.expires_at_ns)

    # verifies: PUSH-207 — Unregister deletes the recipient and its subscriptions.
    def test_unregister(self):
        r = self.registered()
        P.update(self.server, r, adds=[P.subscription(topic())])
        P.unregister(self.server, r)
        self.assertStatus(NOT_REGISTERED, P.UPDATE, P.update_request(r))
        self.assertStatus(NOT_REGISTERED, P.UNREGISTER,
                          pb.UnregisterRequest(recipient_id=r.id, recipient_secret=r.secret),
                          pb.UnregisterResponse)
        self.assertEqual(P.register(self.server, r, apns="01").topic_count, 0)

    # verifies: PUSH-255 step 4, PUSH-207, PUSH-216 step 7 (section 13 counters)
    def test_counters(self):
        before = {k: P.metric(self.server, "xmtp_push_recipients_total", action=k)
                  for k in ("registered", "unregistered")}
        added = P.metric(self.server, "xmtp_push_subscriptions_total", action="added")
        removed = P.metric(self.server, "xmtp_push_subscriptions_total", action="removed")
        r = self.registered()
        P.register(self.server, r, apns="02")
        t1, t2 = topic(), topic()
        P.update(self.server, r, adds=[P.subscription(t1), P.subscription(t2)])
        P.update(self.server, r, adds=[P.subscription(t1)], removes=[t2, topic()])
        P.unregister(self.server, r)  # cascades are not "removed"
        harness.wait_for(lambda: P.metric(self.server, "xmtp_push_recipients_total",
                                          action="unregistered") == before["unregistered"] + 1,
                         10, "the unregistered counter")
        self.assertEqual(P.metric(self.server, "xmtp_push_recipients_total",
                                  action="registered"), before["registered"] + 2)
        self.assertEqual(P.metric(self.server, "xmtp_push_subscriptions_total", action="added"),
                         added + 2)
        self.assertEqual(P.metric(self.server, "xmtp_push_subscriptions_total",
                                  action="removed"), removed + 1)

    # verifies: OPS-004 — health knows the service when [push] is configured.
    def test_health(self):
        self.assertEqual(health(self.server, P.SERVICE), health_pb2.HealthCheckResponse.SERVING)

    # verifies: OPS-014, PUSH-254 — no token, URL, recipient id, topic, key or secret in the log
    # (at DEBUG), stderr or the metrics output, after successes and failures.
    def test_no_request_data_in_logs_or_metrics(self):
        r = P.Recipient()
        token = "feedc0de" * 8
        url = "https://8.8.4.4/hook-" + os.urandom(6).hex()
        key = os.urandom(32)
        t = topic()
        P.register(self.server, r, apns=token)
        P.register(self.server, r, url=url, signing_key=key)
        P.update(self.server, r, adds=[P.subscription(t, keys=[key + key[:10]], epoch_base=1)])
        thief = P.Recipient()
        thief.id = r.id
        self.status(P.REGISTER, P.register_request(thief, apns=token))
        self.status(P.UPDATE, P.update_request(r, adds=[P.subscription(t + b"x")]))
        self.status(P.REGISTER, P.register_request(P.Recipient(), url=url + "\x00"))
        P.unregister(self.server, r)
        time.sleep(0.3)
        text = "".join(self.server.lines) + self.server.stderr_text + P.scrape(self.server)
        for secret in (token, url, url.split("//")[1], r.id.hex(), r.secret.hex(), t.hex(),
                       key.hex(), r.id.hex().upper(), base64.b64encode(t).decode(),
                       base64.b64encode(r.id).decode()):
            self.assertNotIn(secret, text)


class SqliteServiceTest(ServiceMixin, unittest.TestCase):
    pass


@unittest.skipUnless(S.HAVE_PG, "needs XB_PG_PRIMARY")
class PostgresServiceTest(ServiceMixin, unittest.TestCase):
    engine_class = S.PostgresEngine


class WithoutChannelsTest(unittest.TestCase):
    """No [push] table, or an empty one: Register is FAILED_PRECONDITION (never UNIMPLEMENTED),
    health still serves the service, no dispatcher."""

    def check(self, extra):
        with harness.Server(config=P.server_config(extra)) as server:
            r = P.Recipient()
            for delivery in ({"apns": "00"}, {"fcm": "tok"}, {"url": GOOD_URL}):
                self.assertEqual(P.status_of(server, P.REGISTER,
                                             P.register_request(r, **delivery)),
                                 NOT_CONFIGURED, delivery)
            # Earlier rows still come first.
            bad = pb.RegisterRequest(recipient_id=b"x", recipient_secret=r.secret)
            bad.apns.token = "00"
            self.assertEqual(P.status_of(server, P.REGISTER, bad), MALFORMED)
            self.assertEqual(P.status_of(server, P.REGISTER, P.register_request(r)), MALFORMED)
            self.assertEqual(health(server, P.SERVICE), health_pb2.HealthCheckResponse.SERVING)
            self.assertEqual(P.metric(server, "xmtp_push_dispatcher"), 0)

    # verifies: PUSH-210, OPS-004 — without [push].
    def test_without_push_table(self):
        self.check("")

    # verifies: PUSH-210 — an empty [push] (and one with only general keys) has no channel.
    def test_with_empty_push_table(self):
        self.check("[push]\n")
        self.check("[push]\nmax_attempts = 2\n")


class AuthFirstTest(unittest.TestCase):
    """With [auth] on, request authentication runs before the admission table (PUSH.md 2)."""

    # verifies: AUTH-001, AUTH-003, PUSH-253 — auth first, then the table as usual.
    def test_auth_runs_first(self):
        providers = P.Providers()
        self.addCleanup(providers.close)
        config = providers.push_config(channels=("apns",)) + \
            '[auth]\nenabled = true\n[auth.api_keys]\nci = "%s"\n' % API_KEY
        with P.new_server(S.Engine(), config, env=providers.env()) as server:
            r = P.Recipient()
            bad = pb.RegisterRequest(recipient_id=b"x")
            for path, req, resp in ((P.REGISTER, bad, pb.RecipientState),
                                    (P.REGISTER, P.register_request(r, apns="00"),
                                     pb.RecipientState),
                                    (P.UNREGISTER, pb.UnregisterRequest(), pb.UnregisterResponse),
                                    (P.UPDATE, P.update_request(r), pb.RecipientState)):
                code, _ = P.status_of(server, path, req, resp)
                self.assertEqual(code, grpc.StatusCode.UNAUTHENTICATED, path)
            with server.channel() as ch:
                try:
                    harness.raw_unary(ch, P.REGISTER, b"\xff\xff")
                    self.fail("a garbage body without a credential was admitted")
                except grpc.RpcError as e:
                    self.assertEqual(e.code(), grpc.StatusCode.UNAUTHENTICATED)
            md = (("authorization", "Bearer " + API_KEY),)
            self.assertEqual(P.status_of(server, P.REGISTER, bad, metadata=md), MALFORMED)
            self.assertEqual(P.status_of(server, P.UPDATE, P.update_request(r), metadata=md),
                             NOT_REGISTERED)
            state = P.call(server, P.REGISTER, P.register_request(r, apns="00"),
                           pb.RecipientState, metadata=md)
            self.assertEqual(state.channel, pb.CHANNEL_APNS)


if __name__ == "__main__":
    unittest.main()
