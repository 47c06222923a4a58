"""Per-caller quotas (issue 32; docs/configuration.md, Per-caller quotas) against the real binary
with python3-grpcio: token buckets per principal (API key name) and per client address, for
publishing (one token per envelope, every publishing path) and for stream opens; a refusal is
RESOURCE_EXHAUSTED with a google.rpc.RetryInfo in grpc-status-details-bin, and stores or
registers nothing. Off by default. Rates are far below one token per second, so the buckets do not refill while a test
runs and every assertion is exact whatever the machine's speed."""
import os
import socket
import struct
import threading
import unittest

import grpc
from google.protobuf import empty_pb2

import envelopes as E
import harness
from google.rpc import error_details_pb2
from google.rpc import status_pb2
from mls.api.v1 import mls_pb2
from test_hardening_net import closed_by, wait_closed
from xmtp.backend.v1 import backend_pb2

PUBLISH = "/xmtp.backend.v1.PublishService/Publish"
QUERY = "/xmtp.backend.v1.QueryService/Query"
SUBSCRIBE = "/xmtp.backend.v1.SubscriptionService/Subscribe"
SUBSCRIBE_STATIC = "/xmtp.backend.v1.SubscriptionService/SubscribeStatic"
SEND_GROUP_MESSAGES = "/xmtp.mls.api.v1.MlsApi/SendGroupMessages"
SUBSCRIBE_GROUP_MESSAGES = "/xmtp.mls.api.v1.MlsApi/SubscribeGroupMessages"
MLS_SUBSCRIBE = "/xmtp.mls.api.v1.MlsApi/Subscribe"
KEY_A = "alpha-key-" + "a" * 32
KEY_B = "beta-key-" + "b" * 32
EXHAUSTED = grpc.StatusCode.RESOURCE_EXHAUSTED


def bearer(key):
    return (("authorization", "Bearer " + key),)


def retry_delay(error):
    """The RetryInfo delay (seconds) of a refused call's grpc-status-details-bin."""
    details = dict(error.trailing_metadata() or ()).get("grpc-status-details-bin")
    assert details is not None, "no grpc-status-details-bin"
    status = status_pb2.Status.FromString(details)
    assert status.code == EXHAUSTED.value[0], status
    assert len(status.details) == 1, status
    assert status.details[0].type_url == "type.googleapis.com/google.rpc.RetryInfo", status
    info = error_details_pb2.RetryInfo.FromString(status.details[0].value)
    return info.retry_delay.seconds + info.retry_delay.nanos / 1e9


def publish(channel, envs, metadata=None):
    return harness.unary(channel, PUBLISH, backend_pb2.PublishRequest(envelopes=envs),
                         backend_pb2.PublishResponse, metadata=metadata)[0]


def stored(channel, topic, metadata=None):
    req = backend_pb2.QueryRequest(limit=100)
    req.queries.add().topic.topic = topic
    resp, _ = harness.unary(channel, QUERY, req, backend_pb2.QueryResponse, metadata=metadata)
    return len(resp.envelopes)


def messages(group, count):
    """`count` distinct group messages (identical ones would be stored once)."""
    return [E.group_message(group, ciphertext=os.urandom(16)) for _ in range(count)]


def open_static(channel, topic, metadata=None):
    """A SubscribeStatic stream and its first frame (Started), or the RpcError that ended it."""
    req = backend_pb2.SubscribeStaticRequest()
    req.topics.add().topic.topic = topic
    call = channel.unary_stream(
        SUBSCRIBE_STATIC, request_serializer=lambda m: m.SerializeToString(),
        response_deserializer=backend_pb2.SubscribeStaticResponse.FromString)(
            req, metadata=metadata, timeout=30)
    return call, next(call)


def refused_stream(test, channel, path, request_bytes, metadata=None, bidi=False):
    """Opens `path` and asserts it ends at once RESOURCE_EXHAUSTED; returns the error."""
    if bidi:
        call = channel.stream_stream(path)(iter([request_bytes]), metadata=metadata, timeout=10)
    else:
        call = channel.unary_stream(path)(request_bytes, metadata=metadata, timeout=10)
    with test.assertRaises(grpc.RpcError) as ctx:
        next(call)
    test.assertEqual(ctx.exception.code(), EXHAUSTED, ctx.exception.details())
    return ctx.exception


def refused_publish(test, channel, envelopes, metadata=None):
    """Publishes and asserts RESOURCE_EXHAUSTED; returns the error."""
    with test.assertRaises(grpc.RpcError) as ctx:
        publish(channel, envelopes, metadata)
    test.assertEqual(ctx.exception.code(), EXHAUSTED, ctx.exception.details())
    return ctx.exception


def assert_retry_hint(test, error, details, above, at_most=None):
    """`error`'s text matches `details` and its RetryInfo delay is in (above, at_most]."""
    test.assertRegex(error.details(), details)
    delay = retry_delay(error)
    test.assertGreater(delay, above)
    if at_most is not None:
        test.assertLessEqual(delay, at_most)


class QuotasOffByDefault(harness.ServerTestCase):
    # verifies: issue 32 (quotas) — off by default: a burst of publishes and opens succeeds
    def test_a_burst_succeeds(self):
        group = os.urandom(16)
        with self.server.channel() as ch:
            for _ in range(25):
                publish(ch, messages(group, 4))
            self.assertEqual(stored(ch, E.group_topic(group)), 100)
            streams = [open_static(ch, E.group_topic(group)) for _ in range(20)]
            for call, first in streams:
                self.assertEqual(first.WhichOneof("response"), "started")
                call.cancel()


class PrincipalQuotas(harness.ServerTestCase):
    config = harness.minimal_config(
        '[auth]\nenabled = true\n[auth.api_keys]\nalpha = "%s"\nbeta = "%s"\n'
        "[quotas.principal]\npublish_per_second = 0.05\npublish_burst = 5\n"
        "stream_opens_per_second = 0.01\nstream_opens_burst = 2\n" % (KEY_A, KEY_B))

    # verifies: issue 32 (quotas) — over the publish quota: RESOURCE_EXHAUSTED with a plausible
    # RetryInfo, nothing stored; another principal is unaffected; the V3 writes share the bucket
    def test_publish_quota_per_principal(self):
        with self.server.channel() as ch:
            first, refused_group, other = os.urandom(16), os.urandom(16), os.urandom(16)
            publish(ch, messages(first, 5), bearer(KEY_A))  # the whole burst, one per envelope
            error = refused_publish(self, ch, messages(refused_group, 3), bearer(KEY_A))
            # 3 tokens at 0.05 per second: 60 s
            assert_retry_hint(self, error,
                              r"^publish quota of this credential is exhausted; retry in [0-9.]+ s$",
                              50, 60)
            self.assertEqual(stored(ch, E.group_topic(refused_group), bearer(KEY_A)), 0)
            self.assertEqual(stored(ch, E.group_topic(first), bearer(KEY_A)), 5)
            # beta has a bucket of its own.
            publish(ch, messages(other, 5), bearer(KEY_B))
            self.assertEqual(stored(ch, E.group_topic(other), bearer(KEY_B)), 5)
            # MlsApi.SendGroupMessages publishes through the same path and bucket.
            req = mls_pb2.SendGroupMessagesRequest()
            env = E.group_message(refused_group)
            req.messages.add().v1.CopyFrom(mls_pb2.GroupMessageInput.V1(
                data=env.group_message.data, sender_hmac=b"h" * 32))
            with self.assertRaises(grpc.RpcError) as ctx:
                harness.unary(ch, SEND_GROUP_MESSAGES, req, empty_pb2.Empty,
                              metadata=bearer(KEY_A))
            self.assertEqual(ctx.exception.code(), EXHAUSTED)
            self.assertGreater(retry_delay(ctx.exception), 0)
            self.assertEqual(stored(ch, E.group_topic(refused_group), bearer(KEY_A)), 0)

    # verifies: issue 32 (quotas) — stream opens over quota are refused the same way, on every
    # stream method, before anything is registered; another principal still opens
    def test_stream_open_quota_per_principal(self):
        topic = E.group_topic(os.urandom(16))
        with self.server.channel() as ch:
            opened = [open_static(ch, topic, bearer(KEY_A)) for _ in range(2)]
            for _, first in opened:
                self.assertEqual(first.WhichOneof("response"), "started")
            req = backend_pb2.SubscribeStaticRequest()
            req.topics.add().topic.topic = topic
            error = refused_stream(self, ch, SUBSCRIBE_STATIC, req.SerializeToString(),
                                   bearer(KEY_A))
            # 1 token at 0.01 per second: 100 s
            assert_retry_hint(self, error,
                              r"^stream open quota of this credential is exhausted; retry in",
                              90, 100)
            group_req = mls_pb2.SubscribeGroupMessagesRequest()
            group_req.filters.add().group_id = os.urandom(16)
            refused_stream(self, ch, SUBSCRIBE_GROUP_MESSAGES, group_req.SerializeToString(),
                           bearer(KEY_A))
            refused_stream(self, ch, SUBSCRIBE, b"", bearer(KEY_A), bidi=True)
            refused_stream(self, ch, MLS_SUBSCRIBE, b"", bearer(KEY_A), bidi=True)
            call, first = open_static(ch, topic, bearer(KEY_B))
            self.assertEqual(first.WhichOneof("response"), "started")
            call.cancel()
            for call, _ in opened:
                call.cancel()


class AddressQuotas(harness.ServerTestCase):
    config = harness.minimal_config(
        "[quotas.address]\npublish_per_second = 0.02\npublish_burst = 3\n"
        "stream_opens_per_second = 0.01\n")

    # verifies: issue 32 (quotas) — the per-address bucket applies without auth, to publishes
    # and to stream opens (burst absent: one second's worth, at least 1)
    def test_address_quota_without_auth(self):
        group = os.urandom(16)
        with self.server.channel() as ch:
            publish(ch, messages(group, 3))
            error = refused_publish(self, ch, messages(group, 1))
            # 1 token at 0.02 per second: 50 s
            assert_retry_hint(self, error,
                              r"^publish quota of this client address is exhausted; retry in",
                              40, 50)
            self.assertEqual(stored(ch, E.group_topic(group)), 3)
            call, first = open_static(ch, E.group_topic(group))
            self.assertEqual(first.WhichOneof("response"), "started")
            req = backend_pb2.SubscribeStaticRequest()
            req.topics.add().topic.topic = E.group_topic(group)
            error = refused_stream(self, ch, SUBSCRIBE_STATIC, req.SerializeToString())
            assert_retry_hint(self, error, r"^stream open quota of this client address", 90)
            call.cancel()


PP2_SIGNATURE = b"\r\n\r\n\x00\r\nQUIT\n"


def proxy_v2(source=None):
    """A PROXY protocol v2 header (HAProxy's specification, 2.2): command PROXY over TCP/IPv4
    from `source` to 127.0.0.1:5050, or LOCAL (a balancer's own connection) without one."""
    if source is None:
        return PP2_SIGNATURE + bytes([0x20, 0x00, 0, 0])
    block = (socket.inet_aton(source) + socket.inet_aton("127.0.0.1") +
             struct.pack(">HH", 40000, 5050))
    return PP2_SIGNATURE + bytes([0x21, 0x11]) + struct.pack(">H", len(block)) + block


class ProxyRelay:
    """What HAProxy's send-proxy-v2 does, on 127.0.0.1: each connection to `port` is relayed to
    the server after `header`. Use as a context manager."""

    def __init__(self, server_port, header):
        self.server_port, self.header = server_port, header
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.sockets = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.server_port))
            upstream.sendall(self.header)
            self.sockets += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(source, sink):
        try:
            while True:
                data = source.recv(65536)
                if not data:
                    break
                sink.sendall(data)
        except OSError:
            pass
        for s in (source, sink):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def channel(self):
        return grpc.insecure_channel("127.0.0.1:%d" % self.port)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.listener.close()
        for s in self.sockets:
            s.close()


class AddressQuotasBehindAProxy(harness.ServerTestCase):
    config = harness.minimal_config(
        "[quotas.address]\npublish_per_second = 0.02\npublish_burst = 2\n").replace(
            "[server]\n", "[server]\nproxy_protocol = true\nhandshake_timeout_ms = 1000\n")

    # verifies: issue 32 (quotas behind a balancer), server.proxy_protocol — the address quota
    # charges the client address of the PROXY v2 header, not the balancer's: two clients behind
    # one balancer have a bucket each, one client's connections share theirs, and a LOCAL header
    # (the balancer's own) charges the socket's peer.
    def test_the_header_names_the_address_charged(self):
        group = os.urandom(16)
        with ProxyRelay(self.server.port, proxy_v2("203.0.113.7")) as a, \
                ProxyRelay(self.server.port, proxy_v2("203.0.113.7")) as a_again, \
                ProxyRelay(self.server.port, proxy_v2("203.0.113.8")) as b, \
                ProxyRelay(self.server.port, proxy_v2()) as local:
            with a.channel() as ch:
                publish(ch, messages(group, 2))
                error = refused_publish(self, ch, messages(group, 1))
                assert_retry_hint(self, error, r"^publish quota of this client address", 40, 50)
            with a_again.channel() as ch:  # another connection, the same client
                refused_publish(self, ch, messages(group, 1))
            with b.channel() as ch:
                publish(ch, messages(group, 2))
                refused_publish(self, ch, messages(group, 1))
            with local.channel() as ch:
                publish(ch, messages(group, 2))
                refused_publish(self, ch, messages(group, 1))
                self.assertEqual(stored(ch, E.group_topic(group)), 6)

    # verifies: server.proxy_protocol — a connection that does not begin with a valid v2 header
    # (a client past the balancer, version 1's text form) is closed unanswered and counted.
    def test_a_connection_without_the_header_is_closed(self):
        before = closed_by(self.server, "bad_proxy_header")
        for first in (b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
                      b"PROXY TCP4 203.0.113.7 127.0.0.1 40000 5050\r\n"):
            with socket.create_connection(("127.0.0.1", self.server.port), timeout=10) as sock:
                sock.sendall(first)
                try:
                    answer = sock.recv(1024)
                except ConnectionResetError:  # closed with the rest of `first` unread
                    answer = b""
                self.assertEqual(answer, b"")  # closed, nothing sent
        with self.server.channel() as ch:
            with self.assertRaises(grpc.RpcError) as ctx:
                publish(ch, messages(os.urandom(16), 1))
            self.assertEqual(ctx.exception.code(), grpc.StatusCode.UNAVAILABLE)
        harness.wait_for(lambda: closed_by(self.server, "bad_proxy_header") >= before + 3, 10,
                         "three connections counted")

    # verifies: server.proxy_protocol, server.handshake_timeout_ms — the header is read under the
    # handshake deadline: a connection that sends part of one and stalls is closed at the
    # deadline and counted as a handshake timeout, not as a bad header.
    def test_a_stalled_header_ends_at_the_handshake_deadline(self):
        timeouts = closed_by(self.server, "handshake_timeout")
        bad = closed_by(self.server, "bad_proxy_header")
        with socket.create_connection(("127.0.0.1", self.server.port), timeout=10) as sock:
            sock.sendall(proxy_v2("203.0.113.9")[:10])
            self.assertTrue(wait_closed(sock, 10))
        harness.wait_for(lambda: closed_by(self.server, "handshake_timeout") == timeouts + 1, 10,
                         "the handshake timeout counted")
        self.assertEqual(closed_by(self.server, "bad_proxy_header"), bad)


if __name__ == "__main__":
    unittest.main()
