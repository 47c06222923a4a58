"""Per-caller quotas (issue 32; docs/configuration.md, Per-caller quotas) against the real binary
with python3-grpcio: token buckets per principal (API key name) and per client address, for
publishing (one token per envelope, every publishing path) and for stream opens; a refusal is
RESOURCE_EXHAUSTED with a google.rpc.RetryInfo in grpc-status-details-bin, and stores or
registers nothing. Off by default. Rates are far below one token per second, so the buckets do not refill while a test
runs and every assertion is exact whatever the machine's speed."""
import os
import unittest

import grpc
from google.protobuf import empty_pb2

import envelopes as E
import harness
from google.rpc import error_details_pb2
from google.rpc import status_pb2
from mls.api.v1 import mls_pb2
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


if __name__ == "__main__":
    unittest.main()
