"""The XIP-83 bidirectional MlsApi.Subscribe (issue 33, docs/v3-api.md 4.3, G10) through the real
binary with python3-grpcio: Started first; each Mutate's adds caught up as one wave whose Messages
frames carry its mutate_id, in ascending id across the wave's topics, followed by TopicsLive and
CatchupComplete; live rows (mutate_id 0) only after that; waveless Mutates acknowledged at once;
removes and re-adds; the history-only sync that ends OK once the client half-closed; Ping/Pong;
bad Mutates fail the stream INVALID_ARGUMENT. Rows equal what an xmtp.backend.v1 Query returns.
On SQLite and, with XB_PG_PRIMARY set, on PostgreSQL with its replica.
"""
import http.client
import os
import unittest

import grpc

import envelopes as E
import harness
import stream_client as S
from mls.api.v1 import mls_pb2
from test_stream_lifecycle import GrpcWebFrames
from test_v3_streams import V3Helpers, query_rows

SUBSCRIBE = "/xmtp.mls.api.v1.MlsApi/Subscribe"
PG = unittest.skipUnless(S.HAVE_PG, "needs XB_PG_PRIMARY")
Request = mls_pb2.SubscribeRequest
Mutate = mls_pb2.SubscribeRequest.V1.Mutate


class Xip83(S.BidiStream):
    """One MlsApi.Subscribe stream; frames are SubscribeResponse messages (or Ended)."""

    def __init__(self, channel):
        super().__init__(channel, SUBSCRIBE, mls_pb2.SubscribeResponse)

    def mutate(self, mutate_id, adds=(), removes=(), history_only=False):
        m = Mutate(mutate_id=mutate_id, history_only=history_only, removes=list(removes),
                   adds=[Mutate.Subscription(topic=t, id_cursor=c) for t, c in adds])
        self.send(Request(v1=Request.V1(mutate=m)))

    def v1(self, timeout=None):
        f = self.frame(timeout)
        return f.v1

    def started(self, test):
        f = self.v1()
        test.assertEqual(f.WhichOneof("response"), "started", f)
        return f.started

    def wave(self, test, mutate_id):
        """Reads a wave to its CatchupComplete: (rows as (kind, message), TopicsLive topics)."""
        rows, live = [], []
        while True:
            f = self.v1()
            kind = f.WhichOneof("response")
            if kind == "messages":
                test.assertEqual(f.messages.mutate_id, mutate_id, "a frame of another lane")
                test.assertEqual(live, [], "a row after the wave's TopicsLive")
                rows += [("g", m) for m in f.messages.group_messages]
                rows += [("w", m) for m in f.messages.welcome_messages]
            elif kind == "topics_live":
                live += list(f.topics_live.topics)
            elif kind == "catchup_complete":
                test.assertEqual(f.catchup_complete.mutate_id, mutate_id)
                return rows, live
            elif kind == "ping":
                self.send(Request(v1=Request.V1(pong=mls_pb2.Pong(nonce=f.ping.nonce))))
            else:
                test.fail("unexpected frame in a wave: %s" % f)

    def live_rows(self, test, count):
        rows = []
        while len(rows) < count:
            f = self.v1()
            test.assertEqual(f.WhichOneof("response"), "messages", f)
            test.assertEqual(f.messages.mutate_id, 0, "a live row outside the live lane")
            rows += [("g", m) for m in f.messages.group_messages]
            rows += [("w", m) for m in f.messages.welcome_messages]
        return rows


def row_id(row):
    return row[1].v1.id


class SubscribeMixin(V3Helpers):

    def open(self, ch):
        stream = Xip83(ch)
        self.addCleanup(stream.cancel)
        return stream

    # verifies: issue 33 (docs/v3-api.md 4.3) — Started first; one wave per Mutate, every frame
    # stamped with its mutate_id, ascending id across the wave's topics (two groups and a Welcome
    # topic, rows interleaved), each row equal to the v1 Query row; TopicsLive after the last row,
    # then CatchupComplete; then live rows in lane 0.
    def test_wave_then_live(self):
        g1, g2, inst = os.urandom(16), os.urandom(16), os.urandom(32)
        with self.server.channel() as ch:
            envs = []
            for i in range(4):
                envs += [E.group_message(g1, 1, b"a%d" % i), E.welcome(inst, b"w%d" % i),
                         E.group_message(g2, 1, b"b%d" % i)]
            ids = self.publish_visible(ch, envs)
            stream = self.open(ch)
            self.assertGreater(stream.started(self).keepalive_interval_ms, 0)
            topics = [E.group_topic(g1), E.group_topic(g2), E.topic(1, inst)]
            stream.mutate(7, adds=[(t, 0) for t in topics])
            rows, live = stream.wave(self, 7)
            self.assertEqual([row_id(r) for r in rows], sorted(ids))
            self.assertEqual(sorted(live), sorted(topics))
            g1_rows = query_rows(ch, E.group_topic(g1))
            got_g1 = [m for k, m in rows if k == "g" and m.v1.group_id == g1]
            for message, row in zip(got_g1, g1_rows):
                self.assert_group_message_is_row(message, row)
            self.assertEqual(len(got_g1), 4)
            welcomes = [m for k, m in rows if k == "w"]
            self.assertEqual([m.v1.data for m in welcomes], [b"w%d" % i for i in range(4)])
            self.assertEqual({m.v1.installation_key for m in welcomes}, {inst})
            live_ids = S.publish(ch, [E.group_message(g2, 1, b"live"), E.welcome(inst, b"wl")])
            got = stream.live_rows(self, 2)
            self.assertEqual([row_id(r) for r in got], live_ids)
            self.assertIsNone(stream.poll(0.3))

    # verifies: issue 33 (docs/v3-api.md 4.3) — id_cursor is exclusive; a Mutate that starts no
    # wave (an add already registered, removes only, nothing) gets its CatchupComplete at once
    def test_cursor_and_waveless_mutates(self):
        g = os.urandom(16)
        with self.server.channel() as ch:
            ids = self.publish_visible(ch, [E.group_message(g, 1, b"%d" % i) for i in range(3)])
            stream = self.open(ch)
            stream.started(self)
            stream.mutate(1, adds=[(E.group_topic(g), ids[0])])
            rows, live = stream.wave(self, 1)
            self.assertEqual([row_id(r) for r in rows], ids[1:])
            self.assertEqual(live, [E.group_topic(g)])
            stream.mutate(2, adds=[(E.group_topic(g), 0)])  # already registered: no replay
            self.assertEqual(stream.wave(self, 2), ([], []))
            stream.mutate(0)  # empty, tag 0
            self.assertEqual(stream.wave(self, 0), ([], []))
            stream.mutate(0, removes=[E.group_topic(os.urandom(16))])  # not registered: no-op
            self.assertEqual(stream.wave(self, 0), ([], []))

    # verifies: issue 33 (docs/v3-api.md 4.3) — a removed topic gets nothing more; re-adding it
    # replays from the new cursor (the old floor is forgotten)
    def test_remove_then_readd_replays(self):
        g, other = os.urandom(16), os.urandom(16)
        with self.server.channel() as ch:
            ids = self.publish_visible(ch, [E.group_message(g, 1, b"old")])
            stream = self.open(ch)
            stream.started(self)
            stream.mutate(1, adds=[(E.group_topic(g), 0), (E.group_topic(other), 0)])
            self.assertEqual([row_id(r) for r in stream.wave(self, 1)[0]], ids)
            stream.mutate(2, removes=[E.group_topic(g)])
            self.assertEqual(stream.wave(self, 2), ([], []))
            gone = S.publish(ch, [E.group_message(g, 1, b"while removed")])
            kept = S.publish(ch, [E.group_message(other, 1, b"still live")])
            self.assertEqual([row_id(r) for r in stream.live_rows(self, 1)], kept)
            S.wait_replica_shows(ch, {E.group_topic(g): gone[0]})
            stream.mutate(3, adds=[(E.group_topic(g), 0)])
            rows, live = stream.wave(self, 3)
            self.assertEqual([row_id(r) for r in rows], ids + gone)
            self.assertEqual(live, [E.group_topic(g)])

    # verifies: issue 33 (docs/v3-api.md 4.3) — history_only: the wave and its markers, no live
    # registration; once the client half-closes and no wave is left, the stream ends OK
    def test_history_only_sync(self):
        g = os.urandom(16)
        with self.server.channel() as ch:
            ids = self.publish_visible(ch, [E.group_message(g, 1, b"%d" % i) for i in range(3)])
            stream = self.open(ch)
            stream.started(self)
            stream.mutate(9, adds=[(E.group_topic(g), 0)], history_only=True)
            rows, live = stream.wave(self, 9)
            self.assertEqual([row_id(r) for r in rows], ids)
            self.assertEqual(live, [E.group_topic(g)])
            S.publish(ch, [E.group_message(g, 1, b"after the sync")])
            self.assertIsNone(stream.poll(0.5))  # not registered for live rows
            stream.close()
            end, _ = stream.until_end()
            self.assertEqual(end.code, grpc.StatusCode.OK, end)

    # verifies: issue 33 (docs/v3-api.md 4.3) — a sync sent whole before the half-close: the
    # server finishes the wave, then ends the stream OK
    def test_history_only_then_half_close(self):
        g = os.urandom(16)
        with self.server.channel() as ch:
            ids = self.publish_visible(ch, [E.group_message(g, 1, b"%d" % i) for i in range(5)])
            stream = self.open(ch)
            stream.mutate(4, adds=[(E.group_topic(g), 0)], history_only=True)
            stream.close()
            stream.started(self)
            rows, _ = stream.wave(self, 4)
            self.assertEqual([row_id(r) for r in rows], ids)
            self.assertEqual(stream.until_end()[0].code, grpc.StatusCode.OK)

    # verifies: issue 33 (docs/v3-api.md 4.3) — the history-only sync over gRPC-Web (HTTP/1.1:
    # the request is whole, so half-closed, before the response starts): Started, the wave,
    # TopicsLive, CatchupComplete, then the stream ends OK
    def test_history_only_sync_over_grpc_web(self):
        g = os.urandom(16)
        with self.server.channel() as ch:
            ids = self.publish_visible(ch, [E.group_message(g, 1, b"%d" % i) for i in range(3)])
        body = harness.frame(Request(v1=Request.V1(mutate=Mutate(
            mutate_id=3, history_only=True,
            adds=[Mutate.Subscription(topic=E.group_topic(g))]))).SerializeToString())
        conn = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=S.READ_TIMEOUT)
        self.addCleanup(conn.close)
        conn.request("POST", SUBSCRIBE, body=body,
                     headers={"content-type": "application/grpc-web+proto", "x-grpc-web": "1"})
        resp = conn.getresponse()
        self.assertEqual(resp.status, 200)
        reader = GrpcWebFrames(resp, False)
        kinds, rows = [], []
        while True:
            flag, payload = reader.frame()
            if flag & 0x80:
                self.assertIn(b"grpc-status:0", payload.replace(b" ", b""))
                break
            f = mls_pb2.SubscribeResponse.FromString(payload).v1
            kinds.append(f.WhichOneof("response"))
            if kinds[-1] == "messages":
                self.assertEqual(f.messages.mutate_id, 3)
                rows += [m.v1.id for m in f.messages.group_messages]
        self.assertEqual(kinds, ["started"] + ["messages"] * 3 + ["topics_live", "catchup_complete"])
        self.assertEqual(rows, ids)

    # verifies: issue 33 (docs/v3-api.md 4.3) — a wave larger than one catch-up read (rows of
    # 200 KB across three topics, interleaved) still goes out whole in ascending id, every row once
    def test_large_wave_merges_across_reads(self):
        groups = [os.urandom(16) for _ in range(3)]
        per_topic = S.scaled(8, 3)
        with self.server.channel() as ch:
            ids = []
            for i in range(per_topic):
                ids += self.publish_visible(
                    ch, [E.group_message(g, 1, os.urandom(200_000)) for g in groups])
            stream = self.open(ch)
            stream.started(self)
            stream.mutate(5, adds=[(E.group_topic(g), 0) for g in groups])
            rows, live = stream.wave(self, 5)
            self.assertEqual([row_id(r) for r in rows], sorted(ids))
            self.assertEqual(len(live), 3)

    # verifies: issue 33 (docs/v3-api.md 4.3) — the server answers a client Ping with its nonce
    def test_ping_pong(self):
        with self.server.channel() as ch:
            stream = self.open(ch)
            stream.started(self)
            stream.send(Request(v1=Request.V1(ping=mls_pb2.Ping(nonce=42))))
            f = stream.v1()
            self.assertEqual(f.WhichOneof("response"), "pong", f)
            self.assertEqual(f.pong.nonce, 42)

    def assert_fails(self, request, words):
        with self.server.channel() as ch:
            stream = self.open(ch)
            stream.started(self)
            stream.send(request)
            end, _ = stream.until_end()
            self.assertEqual(end.code, grpc.StatusCode.INVALID_ARGUMENT, end)
            self.assertIn(words, end.details)

    # verifies: issue 33 (docs/v3-api.md 4.3) — bad Mutates fail the stream INVALID_ARGUMENT:
    # a kind other than group messages and Welcomes, adds with mutate_id 0, a malformed topic,
    # a topic named twice, a malformed frame
    def test_bad_mutates(self):
        def mutate(mutate_id, adds):
            return Request(v1=Request.V1(mutate=Mutate(
                mutate_id=mutate_id,
                adds=[Mutate.Subscription(topic=t, id_cursor=0) for t in adds])))
        g = E.group_topic(os.urandom(16))
        self.assert_fails(mutate(1, [E.topic(3, os.urandom(32))]), "topic kind is not served")
        self.assert_fails(mutate(0, [g]), "mutate_id must be non-zero")
        self.assert_fails(mutate(1, [b"\x00short"]), "")
        self.assert_fails(mutate(1, [g, g]), "more than once")
        self.assert_fails(b"\x0a\x05\x0a\x03\xff\xff\xff", "malformed")

    # verifies: issue 33 (docs/v3-api.md 4.3) — a mutate_id that names a wave still in flight
    # fails the stream (the wave is held in flight by a client that does not read)
    def test_mutate_id_of_a_wave_in_flight(self):
        g = os.urandom(16)
        with self.server.channel() as ch:
            for _ in range(S.scaled(16, 12)):
                self.publish_visible(ch, [E.group_message(g, 1, os.urandom(400_000))])
            stream = self.open(ch)
            stream.started(self)
            stream.pause()
            stream.mutate(6, adds=[(E.group_topic(g), 0)])
            stream.mutate(6, adds=[(E.group_topic(os.urandom(16)), 0)])
            stream.resume()
            end, _ = stream.until_end()
            self.assertEqual(end.code, grpc.StatusCode.INVALID_ARGUMENT, end)
            self.assertIn("still in flight", end.details)


class KeepaliveSubscribeTest(S.SharedServer, unittest.TestCase):
    """A short keepalive (streams.keepalive_interval_ms): the server's Ping and its deadline."""
    extra_config = """[streams]
keepalive_interval_ms = 300
max_pong_wait_ms = 1000
"""

    # verifies: issue 33 (docs/v3-api.md 4.3) — Started names the interval; an idle stream gets
    # a Ping; answered, the stream stays open past max_pong_wait_ms; unanswered, it ends
    # DEADLINE_EXCEEDED
    def test_ping_answered_then_missed(self):
        with self.server.channel() as ch:
            stream = Xip83(ch)
            self.addCleanup(stream.cancel)
            self.assertEqual(stream.started(self).keepalive_interval_ms, 300)
            nonces = []
            for _ in range(5):  # 5 x 300 ms > max_pong_wait_ms
                f = stream.v1()
                self.assertEqual(f.WhichOneof("response"), "ping", f)
                nonces.append(f.ping.nonce)
                stream.send(Request(v1=Request.V1(pong=mls_pb2.Pong(nonce=f.ping.nonce))))
            self.assertEqual(len(set(nonces)), 5)
            self.assertEqual(stream.v1().WhichOneof("response"), "ping")  # not answered
            end, _ = stream.until_end()
            self.assertEqual(end.code, grpc.StatusCode.DEADLINE_EXCEEDED, end)


class SqliteSubscribeTest(SubscribeMixin, unittest.TestCase):
    pass


@PG
class PostgresSubscribeTest(SubscribeMixin, unittest.TestCase):
    engine_class = S.PostgresEngine


if __name__ == "__main__":
    unittest.main()
