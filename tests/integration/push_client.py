"""Clients and fixtures shared by the push suites: NotificationService calls over real gRPC,
publishing push-eligible and ineligible envelopes, sender HMACs computed as PUSH.md section 7 says,
metrics by name, and a `Providers` fixture that runs the three fakes of push_fakes.py and builds
the backend's [push] config and environment for them."""
import hashlib
import hmac
import os
import time

import grpc

import envelopes as E
import harness
import push_fakes as F
import stream_client as S
from xmtp.backend.v1 import backend_pb2 as pb

SERVICE = "xmtp.backend.v1.NotificationService"
REGISTER = "/%s/Register" % SERVICE
UNREGISTER = "/%s/Unregister" % SERVICE
UPDATE = "/%s/UpdateSubscriptions" % SERVICE
PUBLISH = "/xmtp.backend.v1.PublishService/Publish"
EPOCH_SECONDS = 2592000


# ------------------------------------------------------------------------------------------------
# NotificationService


class Recipient:
    """A client-side recipient: random 32-byte id and secret (PUSH-201)."""

    def __init__(self):
        self.id = os.urandom(32)
        self.secret = os.urandom(32)


def call(server, path, request, response_type, metadata=None, timeout=20):
    with server.channel() as ch:
        resp, _ = harness.unary(ch, path, request, response_type, timeout=timeout,
                                metadata=metadata)
    return resp


def status_of(server, path, request, response_type=pb.RecipientState, metadata=None):
    """(code, details) of a call expected to fail; (OK, None) if it succeeds."""
    try:
        call(server, path, request, response_type, metadata)
    except grpc.RpcError as e:
        return e.code(), e.details()
    return grpc.StatusCode.OK, None


def register_request(recipient, apns=None, fcm=None, url=None, signing_key=None):
    req = pb.RegisterRequest(recipient_id=recipient.id, recipient_secret=recipient.secret)
    if apns is not None:
        req.apns.token = apns
    elif fcm is not None:
        req.fcm.token = fcm
    elif url is not None:
        req.http.url = url
        req.http.signing_key = signing_key if signing_key is not None else b"k" * 32
    return req


def register(server, recipient, **delivery):
    return call(server, REGISTER, register_request(recipient, **delivery), pb.RecipientState)


def subscription(topic, keys=(), epoch_base=0, include_commits=False):
    return pb.Subscription(topic=topic, hmac_epoch_base=epoch_base, hmac_keys=list(keys),
                           include_commits=include_commits)


def update_request(recipient, adds=(), removes=()):
    return pb.UpdateSubscriptionsRequest(recipient_id=recipient.id,
                                         recipient_secret=recipient.secret, adds=list(adds),
                                         removes=list(removes))


def update(server, recipient, adds=(), removes=()):
    return call(server, UPDATE, update_request(recipient, adds, removes), pb.RecipientState)


def unregister(server, recipient):
    return call(server, UNREGISTER, pb.UnregisterRequest(recipient_id=recipient.id,
                                                         recipient_secret=recipient.secret),
                pb.UnregisterResponse)


def is_registered(server, recipient):
    """True while the recipient exists (an empty UpdateSubscriptions; it also renews)."""
    code, _ = status_of(server, UPDATE, update_request(recipient))
    if code not in (grpc.StatusCode.OK, grpc.StatusCode.NOT_FOUND):
        raise AssertionError("unexpected status %s" % code)
    return code == grpc.StatusCode.OK


# ------------------------------------------------------------------------------------------------
# Topics, envelopes, sender HMACs


def group_id():
    return os.urandom(16)


def group_topic(gid):
    return E.group_topic(gid)


def welcome_topic(installation_key):
    return bytes([1]) + installation_key


def app_message(gid, should_push=True, sender_hmac=b"", ciphertext=None):
    data = E.private_message(gid, 1, ciphertext or os.urandom(12))
    return pb.ClientEnvelope(group_message=pb.GroupMessage(data=data, should_push=should_push,
                                                           sender_hmac=sender_hmac))


def commit(gid, should_push=False):
    data = E.private_message(gid, 3, os.urandom(12))
    return pb.ClientEnvelope(group_message=pb.GroupMessage(data=data, should_push=should_push))


def welcome(installation_key):
    """A Welcome with fresh data: never a duplicate of an earlier one (a duplicate stores nothing
    new and produces no push, PUSH.md 6)."""
    return E.welcome(installation_key, data=b"wrapped-welcome-" + os.urandom(8))


def publish(server, *envs):
    """The EnvelopeMeta of each published envelope."""
    resp = call(server, PUBLISH, pb.PublishRequest(envelopes=list(envs)), pb.PublishResponse)
    return list(resp.envelope_metas)


def current_epoch():
    return int(time.time()) // EPOCH_SECONDS


def key_window():
    """(epoch_base, [3 keys]) for epochs current-1, current, current+1 (PUSH-229)."""
    return current_epoch() - 1, [os.urandom(42) for _ in range(3)]


def sender_hmac(key, envelope):
    """HMAC-SHA256 of GroupMessage.data under a window key (PUSH.md 7)."""
    return hmac.new(key, envelope.group_message.data, hashlib.sha256).digest()


# ------------------------------------------------------------------------------------------------
# Metrics


def scrape(server):
    return S.scrape(server)


def metric(server, name, **labels):
    return S.value(S.scrape(server), name, **labels)


def boundary_covers_published(server, engine, timeout=10):
    """Returns once the closed allocation boundary covers everything published before the call.
    A subscription starts at the boundary read in its transaction (PUSH.md 5, start position); on
    PostgreSQL the stored boundary moves when the boundary task runs (a commit asks for it, and the
    dispatcher asks each tick while an eligible envelope lies above it, PUSH.md 8.2), so right after
    a publish it may still be below it, and a subscription made then is owed those envelopes. So:
    no successful attempt of the task for three ticks (each tick would ask again while anything
    eligible lay above it). SQLite's boundary is exact at commit."""
    if engine.name != "postgres":
        return
    name = "xmtp_boundary_advances_total"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        seen = metric(server, name, result="ok")
        time.sleep(0.3)
        if metric(server, name, result="ok") == seen:
            return
    raise AssertionError("the allocation boundary kept moving")


def deliveries(server, channel, outcome):
    return metric(server, "xmtp_push_deliveries_total", channel=channel, outcome=outcome)


def wait_metric(server, name, at_least, timeout, **labels):
    return harness.wait_for(lambda: metric(server, name, **labels) >= at_least, timeout,
                            "%s%r >= %s" % (name, labels, at_least))


# ------------------------------------------------------------------------------------------------
# Fixture: the three fakes and the backend's config and environment for them


class Providers:
    """A test CA, the APNs and FCM fakes, and a webhook receiver."""

    def __init__(self, fcm_expires_in=3600):
        self.ca = F.TestCa()
        self.apns_key = F.ApnsKey()
        self.apns = F.ApnsFake(self.ca, self.apns_key)
        self.fcm = F.FcmFake(self.ca, expires_in=fcm_expires_in)
        self.webhooks = F.WebhookReceiver(self.ca)

    def push_config(self, channels=("apns", "fcm", "http"), max_attempts=2, ttl=None,
                    http_extra="allow_private_addresses = true\n"):
        text = "[push]\nmax_attempts = %d\n" % max_attempts
        if ttl is not None:
            text += "recipient_ttl_seconds = %d\n" % ttl
        if "apns" in channels:
            text += self.apns.config()
        if "fcm" in channels:
            text += self.fcm.config()
        if "http" in channels:
            text += "[push.http]\n" + http_extra
        return text

    def env(self):
        extra = dict(self.apns.env())
        extra.update(self.fcm.env())
        return self.ca.env(pins=(self.apns.pins(), self.fcm.pins()), extra=extra)

    def problems(self):
        return self.apns.problems() + self.fcm.problems() + self.webhooks.problems()

    def close(self):
        for fake in (self.apns, self.fcm, self.webhooks):
            fake.close()
        self.ca.cleanup()


def server_config(extra="", database=None, server_extra="", log_level="debug"):
    """harness.minimal_config + `extra`, at DEBUG (OPS-014 holds there too), on SQLite or on the
    PostgreSQL `database` with its replica."""
    server_extra = 'log_level = "%s"\n' % log_level + server_extra
    return S.config(extra, database, replica=True, server_extra=server_extra)


def new_server(engine, extra="", env=None, binary=None, server_extra=""):
    """A Server (not started) on `engine` (stream_client.Engine / PostgresEngine)."""
    database = None
    if engine.name == "postgres":
        database = harness.create_pg_database()
        engine.databases.append(database)
    return harness.Server(config=server_config(extra, database, server_extra),
                          binary=binary or harness.TEST_BINARY, env=env)


class ProvidersServer:
    """Mixin base of a suite with one server per class beside the fakes of `Providers`, on the
    class's engine: `server_config(providers)` gives its config (the [push] tables and whatever
    else); `providers`, `server` and `engine` are the class's."""
    engine_class = S.Engine

    @classmethod
    def server_config(cls, providers):
        return providers.push_config()

    @classmethod
    def setUpClass(cls):
        cls.engine = cls.engine_class()
        cls.providers = Providers()
        cls.server = new_server(cls.engine, cls.server_config(cls.providers),
                                env=cls.providers.env())
        cls.server.start()

    @classmethod
    def tearDownClass(cls):
        cls.server.kill()
        cls.server.tmp.cleanup()
        cls.providers.close()
        cls.engine.cleanup()
        cls.server.check_sanitizers()
