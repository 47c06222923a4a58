"""The V3 server streams (issue 33, docs/v3-api.md 4.1, 4.2): MlsApi.SubscribeGroupMessages and
SubscribeWelcomeMessages through the real binary with python3-grpcio and plain http.client
(gRPC-Web). Each row is one response message (GroupMessage / WelcomeMessage) equal to the row an
xmtp.backend.v1 Query returns; history from the filter's exclusive cursor, then live rows; the
response headers come before any row; bad filters are INVALID_ARGUMENT before any message. On
SQLite and, with XB_PG_PRIMARY set, on PostgreSQL with its replica.
"""
import base64
import http.client
import os
import threading
import unittest

import grpc
from google.protobuf import empty_pb2

import envelopes as E
import harness
import stream_client as S
from mls.api.v1 import mls_pb2
from test_stream_lifecycle import GrpcWebFrames
from xmtp.backend.v1 import backend_pb2

SUBSCRIBE_GROUPS = "/xmtp.mls.api.v1.MlsApi/SubscribeGroupMessages"
SUBSCRIBE_WELCOMES = "/xmtp.mls.api.v1.MlsApi/SubscribeWelcomeMessages"
SEND_GROUP_MESSAGES = "/xmtp.mls.api.v1.MlsApi/SendGroupMessages"

PG = unittest.skipUnless(S.HAVE_PG, "needs XB_PG_PRIMARY")


class V3Stream(S._Stream):
    """One V3 server stream; each item read is one GroupMessage or WelcomeMessage."""

    def __init__(self, channel, path, request, response_type):
        method = channel.unary_stream(path, request_serializer=S._serialize,
                                      response_deserializer=response_type.FromString)
        super().__init__(method(request))

    def messages(self, count):
        return [self.frame() for _ in range(count)]


def group_stream(ch, filters):
    request = filters if isinstance(filters, bytes) else mls_pb2.SubscribeGroupMessagesRequest(
        filters=[mls_pb2.SubscribeGroupMessagesRequest.Filter(group_id=g, id_cursor=c)
                 for g, c in filters])
    return V3Stream(ch, SUBSCRIBE_GROUPS, request, mls_pb2.GroupMessage)


def welcome_stream(ch, filters):
    request = mls_pb2.SubscribeWelcomeMessagesRequest(
        filters=[mls_pb2.SubscribeWelcomeMessagesRequest.Filter(installation_key=k, id_cursor=c)
                 for k, c in filters])
    return V3Stream(ch, SUBSCRIBE_WELCOMES, request, mls_pb2.WelcomeMessage)


def welcome_pointer(installation_key, pointer=b"wrapped-pointer"):
    return backend_pb2.ClientEnvelope(welcome_message=backend_pb2.WelcomeMessage(
        welcome_pointer=backend_pb2.WelcomeMessage.WelcomePointer(
            installation_key=installation_key, welcome_pointer=pointer,
            hpke_public_key=b"k" * 32)))


def query_rows(ch, topic):
    resp, _ = harness.unary(ch, S.QUERY, backend_pb2.QueryRequest(
        queries=[S.topic_query(topic)]), backend_pb2.QueryResponse, timeout=30)
    return list(resp.envelopes)


class V3Helpers(S.SharedServer):
    """What the V3 stream suites share (this one and test_v3_subscribe)."""

    def publish_visible(self, ch, envs):
        """Publishes through xmtp.backend.v1 and waits until the stream read copy (the replica,
        on PostgreSQL) shows the rows, so that they are history when a stream opens."""
        resp, _ = harness.unary(ch, S.PUBLISH, backend_pb2.PublishRequest(envelopes=envs),
                                backend_pb2.PublishResponse, timeout=60)
        heads = {}
        for meta in resp.envelope_metas:
            topic = meta.topic.topic
            heads[topic] = max(heads.get(topic, 0), meta.cursor.sequence_id)
        S.wait_replica_shows(ch, heads)
        return [m.cursor.sequence_id for m in resp.envelope_metas]

    def assert_group_message_is_row(self, message, row):
        """A GroupMessage equals the xmtp.backend.v1 Query row it was made from."""
        self.assertTrue(message.HasField("v1"), message)
        m = message.v1
        self.assertEqual(m.id, row.meta.cursor.sequence_id)
        self.assertEqual(m.created_ns, row.meta.server_ns)
        self.assertEqual(m.group_id, row.meta.topic.topic[1:])
        self.assertEqual(m.data, row.envelope.group_message.data)
        self.assertEqual(m.sender_hmac, row.envelope.group_message.sender_hmac)
        self.assertEqual(m.should_push, row.envelope.group_message.should_push)
        self.assertEqual(m.is_commit, row.meta.is_commit_or_proposal)


class V3StreamsMixin(V3Helpers):

    # verifies: issue 33 (docs/v3-api.md 4.1) — history from cursor 0, then live rows, each one
    # GroupMessage equal to the v1 Query's row (a commit's is_commit too); a row published via
    # xmtp.backend.v1 Publish arrives on the V3 stream.
    def test_group_history_then_live(self):
        g = os.urandom(16)
        with self.server.channel() as ch:
            self.publish_visible(ch, [E.group_message(g, 1, b"h1"), E.group_message(g, 3, b"h2"),
                                      E.group_message(g, 1, b"h3")])
            stream = group_stream(ch, [(g, 0)])
            try:
                got = stream.messages(3)
                live_ids = S.publish(ch, [E.group_message(g, 1, b"live")])
                got += stream.messages(1)
                rows = query_rows(ch, E.group_topic(g))
                self.assertEqual(len(rows), 4)
                self.assertEqual(rows[-1].meta.cursor.sequence_id, live_ids[0])
                for message, row in zip(got, rows):
                    self.assert_group_message_is_row(message, row)
                self.assertTrue(got[1].v1.is_commit)
                self.assertIsNone(stream.poll(0.3))  # nothing more
            finally:
                stream.cancel()

    # verifies: issue 33 (docs/v3-api.md 4.1) — id_cursor is exclusive: older rows are skipped
    def test_cursor_skips_older_rows(self):
        g = os.urandom(16)
        with self.server.channel() as ch:
            ids = self.publish_visible(ch, [E.group_message(g, 1, b"c%d" % k) for k in range(4)])
            stream = group_stream(ch, [(g, ids[1])])
            try:
                self.assertEqual([m.v1.id for m in stream.messages(2)], ids[2:])
                self.assertIsNone(stream.poll(0.3))
            finally:
                stream.cancel()

    # verifies: issue 33 (docs/v3-api.md 4.1), API-254 — several groups on one stream, each in
    # ascending id order without gaps or duplicates; a group named twice registers once, from its
    # lowest cursor.
    def test_several_groups_per_group_order(self):
        groups = [os.urandom(16) for _ in range(3)]
        with self.server.channel() as ch:
            history = self.publish_visible(
                ch, [E.group_message(g, 1, b"m%d" % k) for k in range(5) for g in groups])
            per_group = {g: history[i::3] for i, g in enumerate(groups)}
            cursor = per_group[groups[2]][1]
            stream = group_stream(ch, [(groups[0], 0), (groups[1], 0), (groups[2], cursor),
                                       (groups[0], per_group[groups[0]][3])])
            try:
                expected = {g: list(ids) for g, ids in per_group.items()}
                expected[groups[2]] = [i for i in expected[groups[2]] if i > cursor]
                live = S.publish(ch, [E.group_message(g, 1, b"live") for g in groups])
                for g, i in zip(groups, live):
                    expected[g].append(i)
                got = {g: [] for g in groups}
                for m in stream.messages(sum(len(v) for v in expected.values())):
                    got[m.v1.group_id].append(m.v1.id)
                self.assertEqual(got, expected)
                self.assertIsNone(stream.poll(0.3))
            finally:
                stream.cancel()

    # verifies: issue 33 (docs/v3-api.md 4.2) — Welcomes, V1 and pointer, as WelcomeMessages
    # equal to the v1 rows, history then live
    def test_welcomes_v1_and_pointer(self):
        key = os.urandom(32)
        with self.server.channel() as ch:
            ids = self.publish_visible(ch, [E.welcome(key, b"w1"), welcome_pointer(key)])
            stream = welcome_stream(ch, [(key, 0)])
            try:
                got = stream.messages(2)
                ids += S.publish(ch, [E.welcome(key, b"w-live")])
                got += stream.messages(1)
                rows = query_rows(ch, bytes([1]) + key)
                self.assertEqual([r.meta.cursor.sequence_id for r in rows], ids)
                for message, row in zip(got, rows):
                    stored = row.envelope.welcome_message
                    version = message.WhichOneof("version")
                    self.assertEqual(version, stored.WhichOneof("version"))
                    out, want = getattr(message, version), getattr(stored, version)
                    self.assertEqual(out.id, row.meta.cursor.sequence_id)
                    self.assertEqual(out.created_ns, row.meta.server_ns)
                    self.assertEqual(out.installation_key, key)
                    self.assertEqual(out.hpke_public_key, want.hpke_public_key)
                    if version == "v1":
                        self.assertEqual(out.data, want.data)
                    else:
                        self.assertEqual(out.welcome_pointer, want.welcome_pointer)
                self.assertEqual(got[0].v1.data, b"w1")
                self.assertEqual(got[2].v1.data, b"w-live")
            finally:
                stream.cancel()

    # verifies: issue 33 (docs/v3-api.md G4) — the response headers arrive before any row, on a
    # stream with nothing to replay (grpcio's initial_metadata() returns before any message)
    def test_headers_arrive_before_any_row(self):
        with self.server.channel() as ch:
            for stream in (group_stream(ch, [(os.urandom(16), 0)]),
                           welcome_stream(ch, [(os.urandom(32), 0)])):
                try:
                    got = []
                    reader = threading.Thread(
                        target=lambda: got.append(dict(stream.call.initial_metadata())),
                        daemon=True)
                    reader.start()
                    reader.join(S.READ_TIMEOUT)
                    self.assertEqual(len(got), 1, "no response headers")
                    self.assertRegex(got[0]["x-request-id"], harness.UUID_RE)
                    self.assertIsNone(stream.poll(0.2))
                finally:
                    stream.cancel()

    # verifies: issue 33 (docs/v3-api.md Q2) — SubscribeGroupMessages with no filters stays open
    # and silent; rows of other groups do not reach it
    def test_zero_group_filters_stay_open_and_silent(self):
        with self.server.channel() as ch:
            stream = group_stream(ch, [])
            try:
                stream.call.initial_metadata()
                S.publish(ch, [E.group_message(os.urandom(16), 1, b"elsewhere")])
                self.assertIsNone(stream.poll(1.0))
            finally:
                stream.cancel()

    # verifies: issue 33 (docs/v3-api.md 4.1, 4.2) — bad filters end the stream INVALID_ARGUMENT
    # before any message; zero Welcome filters too (as node-go)
    def test_bad_filters_are_invalid_argument(self):
        too_many = mls_pb2.SubscribeGroupMessagesRequest(filters=[
            mls_pb2.SubscribeGroupMessagesRequest.Filter(group_id=os.urandom(16))
            for _ in range(10001)])
        cases = [
            (lambda ch: group_stream(ch, [(os.urandom(15), 0)]), None),
            (lambda ch: group_stream(ch, [(os.urandom(16), 0), (b"", 0)]), None),
            (lambda ch: group_stream(ch, [(os.urandom(16), S.INT64_MAX + 1)]), None),
            (lambda ch: group_stream(ch, too_many.SerializeToString()), None),
            (lambda ch: group_stream(ch, b"\x0a\x05\x0a"), "request is malformed"),
            (lambda ch: welcome_stream(ch, [(os.urandom(31), 0)]), None),
            (lambda ch: welcome_stream(ch, [(os.urandom(32), 1 << 63)]), None),
            (lambda ch: welcome_stream(ch, []), "no valid filters provided"),
        ]
        with self.server.channel() as ch:
            for i, (open_stream, details) in enumerate(cases):
                with self.subTest(case=i):
                    stream = open_stream(ch)
                    end = stream.next()
                    self.assertIsInstance(end, S.Ended, end)
                    self.assertEqual(end.code, grpc.StatusCode.INVALID_ARGUMENT, end)
                    if details is not None:
                        self.assertEqual(end.details, details)

    # verifies: issue 33 (cross-view) — a row sent via MlsApi.SendGroupMessages arrives on an
    # xmtp.backend.v1 SubscribeStatic, and on a V3 stream as the same row
    def test_send_group_messages_reaches_both_stream_kinds(self):
        g = os.urandom(16)
        with self.server.channel() as ch:
            v1_stream = S.Static(ch, [(E.group_topic(g), 0)])
            v3_stream = group_stream(ch, [(g, 0)])
            try:
                v1_stream.started(self)
                v3_stream.call.initial_metadata()
                data = E.private_message(g, 1, b"sent-v3")
                request = mls_pb2.SendGroupMessagesRequest()
                request.messages.add().v1.CopyFrom(mls_pb2.GroupMessageInput.V1(
                    data=data, sender_hmac=b"h" * 32, should_push=True))
                harness.unary(ch, SEND_GROUP_MESSAGES, request, empty_pb2.Empty, timeout=30)
                envelopes = []
                while not envelopes:
                    envelopes = S.envelopes_of(v1_stream.frame())
                self.assertEqual(len(envelopes), 1)
                self.assertEqual(envelopes[0].envelope.group_message.data, data)
                self.assert_group_message_is_row(v3_stream.frame(), envelopes[0])
            finally:
                v1_stream.cancel()
                v3_stream.cancel()

    # verifies: issue 33 (docs/v3-api.md 4.1, API.md 1.1) — over gRPC-Web on HTTP/1.1 (binary
    # and text) the headers come at once, then the same messages as native gRPC, one frame each
    def test_grpc_web_delivers_the_same_messages(self):
        for content_type in ("application/grpc-web+proto", "application/grpc-web-text"):
            with self.subTest(content_type=content_type):
                self.web_stream(content_type)

    def web_stream(self, content_type):
        g = os.urandom(16)
        text = content_type == "application/grpc-web-text"
        body = harness.frame(mls_pb2.SubscribeGroupMessagesRequest(filters=[
            mls_pb2.SubscribeGroupMessagesRequest.Filter(group_id=g)]).SerializeToString())
        conn = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=S.READ_TIMEOUT)
        resp = None
        try:
            conn.request("POST", SUBSCRIBE_GROUPS, body=base64.b64encode(body) if text else body,
                         headers={"content-type": content_type, "x-grpc-web": "1",
                                  "origin": "https://app.example"})
            resp = conn.getresponse()  # returns once the headers are in: nothing is stored yet
            self.assertEqual(resp.status, 200)
            self.assertTrue(resp.getheader("content-type").startswith(content_type))
            self.assertEqual(resp.getheader("access-control-allow-origin"), "*")
            with self.server.channel() as ch:
                ids = S.publish(ch, [E.group_message(g, 1, b"web%d" % k) for k in range(3)])
                rows = query_rows(ch, E.group_topic(g))
            reader = GrpcWebFrames(resp, text)
            for row in rows:
                flag, payload = reader.frame()
                self.assertEqual(flag, 0, payload)
                self.assert_group_message_is_row(mls_pb2.GroupMessage.FromString(payload), row)
            self.assertEqual([r.meta.cursor.sequence_id for r in rows], ids)
        finally:
            if resp is not None:
                resp.close()
            conn.close()


class SqliteV3StreamsTest(V3StreamsMixin, unittest.TestCase):
    pass


@PG
class PostgresV3StreamsTest(V3StreamsMixin, unittest.TestCase):
    engine_class = S.PostgresEngine


if __name__ == "__main__":
    unittest.main()
