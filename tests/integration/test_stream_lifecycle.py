"""Stream capacity, shutdown, gRPC-Web and metrics through the real binary, on SQLite and on
PostgreSQL with its streaming replica (API.md 3.8 backpressure, OPS-007, API-285, OPS-016/017).

The slow reader: a grpcio channel with BDP probing off keeps HTTP/2 windows at their 64 KiB
defaults, so a client that stops asking grpcio for messages stops the backend's writes after a
few KiB; the test's stream thread is paused (stream_client pause()) and nothing is buffered on the
client beyond one frame. Server memory is read from /proc/PID/status (VmRSS).
"""
import base64
import http.client
import os
import unittest

import grpc

import envelopes as E
import harness
import health_pb2
import stream_client as S
from xmtp.backend.v1 import backend_pb2

# A client that stops reading: no window growth (grpcio's BDP probing would grow it to MiBs).
SLOW_CLIENT_OPTIONS = [("grpc.http2.bdp_probe", 0),
                       ("grpc.max_receive_message_length", 8 << 20)]
# Server memory bound while 40 MiB go to a stream that is not read. ASan keeps freed memory in
# quarantine (256 MiB by default) and TSan shadows it, so sanitizer builds get more room.
RSS_BOUND_MIB = 400 + (1024 if os.environ.get("XB_SANITIZE") else 0)
TRANSPORT_ERRORS = r"Socket closed|Connection reset|recvmsg|Broken pipe|failed to connect|GOAWAY"


def rss_mib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


class PerTestServers:
    engine_class = S.Engine

    def setUp(self):
        self.engine = self.engine_class()
        self.addCleanup(self.engine.cleanup)


class CapacityMixin(PerTestServers):

    # verifies: API.md 3.8 backpressure, API-281 (RESOURCE_EXHAUSTED: stream output cannot be
    # queued), STORE.md 5.5 (ARC-080) — a client that stops reading while >= 40 MiB of live
    # envelopes (~900 KiB each) are published to its topic ends RESOURCE_EXHAUSTED (never a
    # dropped envelope: what it did get is a gap-free prefix), and the server's RSS stays bounded.
    def test_slow_reader_is_resource_exhausted_with_bounded_memory(self):
        count = max(28, S.scaled(46))  # >= 16 MiB outbound bound + slack even when scaled
        payload = 900 * 1024
        with self.engine.server() as server:
            t = S.gtopic("slow", 0)
            reader_ch = S.own_channel(server, SLOW_CLIENT_OPTIONS)
            stream = S.Static(reader_ch, [(t, 0)])
            try:
                stream.started(self)
                stream.pause()
                peak = rss_mib(server.proc.pid)
                published = []
                with server.channel() as ch:
                    for k in range(count):
                        env = E.group_message(t[1:], 1, b"%04d" % k + b"x" * payload)
                        published += S.publish(ch, [env])
                        peak = max(peak, rss_mib(server.proc.pid))
                    # The backend gave up on the stream (an event we can observe directly).
                    harness.wait_for(lambda: S.value(S.scrape(server), "xmtp_stream_ended_total",
                                                     reason="backpressure") >= 1,
                                     S.READ_TIMEOUT, "the stream to end for backpressure")
                    peak = max(peak, rss_mib(server.proc.pid))
                stream.resume()
                ended, frames = stream.until_end()
                self.assertEqual(ended.code, grpc.StatusCode.RESOURCE_EXHAUSTED, ended)
                got = [S.sid(e) for f in frames for e in S.envelopes_of(f)]
                self.assertEqual(got, published[:len(got)])  # a prefix: nothing dropped
                self.assertLess(len(got), count)
                self.assertLess(peak, RSS_BOUND_MIB, "server VmRSS peaked at %.0f MiB" % peak)
                if os.environ.get("XB_STREAM_VERBOSE"):
                    print("slow reader: %d of %d envelopes before the end; peak VmRSS %.0f MiB" %
                          (len(got), count, peak))
                with server.channel() as ch:
                    self.assertEqual(S.health_status(ch), health_pb2.HealthCheckResponse.SERVING)
            finally:
                stream.cancel()
                reader_ch.close()

    # verifies: API.md 3.8 backpressure ("catch-up reads only as space allows"), API-254 — a
    # client that stops reading in the middle of a catch-up larger than the outbound bound, while
    # live envelopes arrive on its topic, is not failed: once it reads again it gets the whole
    # history and the live envelopes, in order.
    def test_paused_reader_during_catch_up_is_not_failed(self):
        rows = max(40, S.scaled(48))  # 24 MiB: more than the 16 MiB outbound bound
        blob = b"c" * (500 * 1024)
        with self.engine.server() as server:
            t = S.gtopic("pause", 0)
            with server.channel() as ch:
                ids = []
                for start in range(0, rows, 12):
                    ids += S.publish(ch, [E.group_message(t[1:], 1, b"%d-" % k + blob)
                                          for k in range(start, min(rows, start + 12))])
                S.wait_replica_shows(ch, {t: ids[-1]})
                reader_ch = S.own_channel(server, SLOW_CLIENT_OPTIONS)
                stream = S.Static(reader_ch, [(t, 0)])
                try:
                    stream.started(self)
                    stream.pause()
                    harness.wait_for(
                        lambda: S.value(S.scrape(server), "xmtp_stream_envelopes_sent_total",
                                        phase="catch_up") > 0, S.READ_TIMEOUT, "catch-up")
                    live = []
                    for k in range(5):
                        live += S.publish(ch, [E.group_message(t[1:], 1, b"pause-live-%d" % k)])
                    stream.resume()
                    self.assertEqual(stream.ids(rows + len(live)), ids + live)
                    text = S.scrape(server)
                    self.assertEqual(S.value(text, "xmtp_stream_ended_total"), 0)
                    self.assertGreaterEqual(
                        S.value(text, "xmtp_stream_outbound_wait_seconds_count"), 1)
                finally:
                    stream.cancel()
                    reader_ch.close()

    # verifies: OPS-007 — on SIGTERM every open stream ends UNAVAILABLE at once, one of them in
    # the middle of the catch-up of a large history (it never gets the whole history), without
    # waiting for the drain deadline (set far away here).
    def test_sigterm_ends_every_stream_unavailable(self):
        rows = max(36, S.scaled(48))  # > 16 MiB outbound bound: catch-up cannot finish unread
        blob = b"h" * (500 * 1024)
        with self.engine.server(server_extra="max_drain_duration_ms = 120000\n") as server:
            big, idle = S.gtopic("term", 0), S.gtopic("term", 1)
            with server.channel() as ch:
                ids = []
                for start in range(0, rows, 12):
                    ids += S.publish(ch, [E.group_message(big[1:], 1, b"%d-" % k + blob)
                                          for k in range(start, min(rows, start + 12))])
                S.wait_replica_shows(ch, {big: ids[-1]})
            slow_ch = S.own_channel(server, SLOW_CLIENT_OPTIONS)
            ch = server.channel()
            catching_up = S.Static(slow_ch, [(big, 0)])
            static_idle = S.Static(ch, [(idle, 0)])
            bidi = S.Bidi(ch)
            streams = [catching_up, static_idle, bidi]
            try:
                catching_up.started(self)
                catching_up.pause()
                static_idle.started(self)
                bidi.started(self)
                bidi.update(1, adds=[(idle, 0), (big, ids[-1])])
                bidi.applied(self, 1)
                harness.wait_for(
                    lambda: S.value(S.scrape(server), "xmtp_stream_envelopes_sent_total",
                                    phase="catch_up") > 0, S.READ_TIMEOUT, "catch-up to start")
                server.terminate()
                outcomes = {}
                for name, stream in (("static", static_idle), ("bidi", bidi)):
                    ended, frames = stream.until_end()
                    outcomes[name] = ended
                    self.assertEqual([f for f in frames if S.envelopes_of(f)], [], name)
                catching_up.resume()
                ended, frames = catching_up.until_end()
                outcomes["catching_up"] = ended
                got = [S.sid(e) for f in frames for e in S.envelopes_of(f)]
                self.assertEqual(got, ids[:len(got)])
                self.assertLess(len(got), rows)  # the catch-up did not complete first
                # Each ends with the backend's UNAVAILABLE status, not with a dropped connection
                # (grpcio also reports a lost connection as UNAVAILABLE, "Socket closed").
                for name, ended in outcomes.items():
                    self.assertEqual(ended.code, grpc.StatusCode.UNAVAILABLE, outcomes)
                    self.assertNotRegex(ended.details or "", TRANSPORT_ERRORS, outcomes)
            finally:
                for s in streams:
                    s.cancel()
                slow_ch.close()
                ch.close()


    # verifies: OPS-007, API-285 — a SubscribeStatic over HTTP/1.1 gRPC-Web ends on SIGTERM with
    # grpc-status 14 in its trailer frame (a dropped connection would leave no status at all).
    def test_sigterm_ends_grpc_web_stream_with_unavailable_trailer(self):
        with self.engine.server(server_extra="max_drain_duration_ms = 120000\n") as server:
            t = S.gtopic("termweb", 0)
            with server.channel() as ch:
                ids = S.publish(ch, [E.group_message(t[1:], 1, b"termweb")])
                S.wait_replica_shows(ch, {t: ids[0]})
            conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=S.READ_TIMEOUT)
            resp = None
            try:
                conn.request("POST", S.SUBSCRIBE_STATIC, body=harness.frame(
                    backend_pb2.SubscribeStaticRequest(topics=[S.topic_query(t, 0)])
                    .SerializeToString()), headers={"content-type": "application/grpc-web+proto"})
                resp = conn.getresponse()
                reader = GrpcWebFrames(resp, text=False)
                self.assertEqual(reader.message(self).WhichOneof("response"), "started")
                self.assertEqual([S.sid(e) for e in reader.message(self).messages.envelopes], ids)
                server.terminate()
                flag, payload = reader.frame()
                self.assertEqual(flag, 0x80, payload)
                self.assertEqual(harness.parse_trailer_block(payload)["grpc-status"], "14")
            finally:
                if resp is not None:
                    resp.close()
                conn.close()


class GrpcWebFrames:
    """Reads gRPC-Web frames from a streaming http.client response (binary or text mode)."""

    def __init__(self, resp, text):
        self.resp = resp
        self.text = text
        self.buf = b""
        self.pending_text = ""

    def _more(self):
        chunk = self.resp.read1(65536)
        if not chunk:
            raise AssertionError("the gRPC-Web response ended early")
        if self.text:
            self.pending_text += chunk.decode()
            usable = len(self.pending_text) - len(self.pending_text) % 4
            # Segments may each carry padding: decode group by group.
            self.buf += b"".join(base64.b64decode(self.pending_text[i:i + 4])
                                 for i in range(0, usable, 4))
            self.pending_text = self.pending_text[usable:]
        else:
            self.buf += chunk

    def frame(self):
        while len(self.buf) < 5:
            self._more()
        flag, length = self.buf[0], int.from_bytes(self.buf[1:5], "big")
        while len(self.buf) < 5 + length:
            self._more()
        payload = self.buf[5:5 + length]
        self.buf = self.buf[5 + length:]
        return flag, payload

    def message(self, test):
        flag, payload = self.frame()
        test.assertEqual(flag, 0, payload)
        return backend_pb2.SubscribeStaticResponse.FromString(payload)


class GrpcWebMixin(S.SharedServer):

    def _web_stream(self, content_type, label):
        t = S.gtopic(label, 0)
        with self.server.channel() as ch:
            history = S.publish(ch, [E.group_message(t[1:], 1, b"%s-%d" % (label.encode(), k))
                                     for k in range(3)])
            S.wait_replica_shows(ch, {t: history[-1]})
            before = S.value(S.scrape(self.server), "xmtp_stream_ended_total", reason="client")
            body = harness.frame(backend_pb2.SubscribeStaticRequest(
                topics=[S.topic_query(t, history[0])]).SerializeToString())
            text = content_type == "application/grpc-web-text"
            if text:
                body = base64.b64encode(body)
            conn = http.client.HTTPConnection("127.0.0.1", self.server.port,
                                              timeout=S.READ_TIMEOUT)
            resp = None
            try:
                conn.request("POST", S.SUBSCRIBE_STATIC, body=body, headers={
                    "content-type": content_type, "x-grpc-web": "1",
                    "origin": "https://app.example"})
                resp = conn.getresponse()
                self.assertEqual(resp.status, 200)
                self.assertTrue(resp.getheader("content-type").startswith(content_type))
                reader = GrpcWebFrames(resp, text)
                started = reader.message(self).started
                self.assertEqual([(x.topic.topic, x.through_sequence_id) for x in started.targets],
                                 [(t, history[-1])])
                got = []
                while len(got) < 2:
                    got += [S.sid(e) for e in reader.message(self).messages.envelopes]
                self.assertEqual(got, history[1:])
                live = S.publish(ch, [E.group_message(t[1:], 1, b"%s-live" % label.encode())])
                got = []
                while not got:
                    got += [S.sid(e) for e in reader.message(self).messages.envelopes]
                self.assertEqual(got, live)
            finally:
                # The response owns the socket ("connection: close"): closing both closes it.
                if resp is not None:
                    resp.close()
                conn.close()
            # Closing the connection ends the stream; the server keeps serving.
            harness.wait_for(
                lambda: S.value(S.scrape(self.server), "xmtp_stream_ended_total",
                                reason="client") >= before + 1, S.READ_TIMEOUT,
                "the closed gRPC-Web stream to end")
            self.assertIsNone(self.server.proc.poll())
            self.assertEqual(S.health_status(ch), health_pb2.HealthCheckResponse.SERVING)

    # verifies: API-285, API-260 — SubscribeStatic over HTTP/1.1 gRPC-Web (binary): Started,
    # history, then a live envelope; closing the connection ends the stream, not the server.
    def test_subscribe_static_over_grpc_web_binary(self):
        self._web_stream("application/grpc-web+proto", "webb")

    # verifies: API-285 — the same in grpc-web-text (base64 both ways).
    def test_subscribe_static_over_grpc_web_text(self):
        self._web_stream("application/grpc-web-text", "webt")

    # verifies: API-285, API-260 — an invalid static request over gRPC-Web ends with
    # grpc-status 3 in the trailer frame.
    def test_invalid_static_over_grpc_web(self):
        conn = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=S.READ_TIMEOUT)
        try:
            empty = backend_pb2.SubscribeStaticRequest().SerializeToString()
            conn.request("POST", S.SUBSCRIBE_STATIC, body=harness.frame(empty),
                         headers={"content-type": "application/grpc-web+proto"})
            frames = harness.grpc_web_frames(conn.getresponse().read())
        finally:
            conn.close()
        self.assertEqual(frames[-1][0], 0x80)
        self.assertEqual(harness.parse_trailer_block(frames[-1][1])["grpc-status"], "3")


# Label vocabularies of the stream and tailer families (OPS-017).
VOCABULARY = {
    "xmtp_stream_sessions": {"kind": {"bidi", "static"}},
    "xmtp_stream_frames_sent_total": {"frame": {"started", "applied", "messages", "keepalive",
                                                "ping", "pong", "update"}},
    "xmtp_stream_frames_received_total": {"frame": {"update", "ping", "pong"}},
    "xmtp_stream_envelopes_sent_total": {"phase": {"catch_up", "live"}},
    "xmtp_stream_updates_total": {"outcome": {"applied", "invalid", "rate_limited"}},
    "xmtp_stream_ended_total": {"reason": {"client", "backpressure", "capacity", "keepalive",
                                           "tailer", "database", "shutdown", "invalid",
                                           "rate_limited"}},
    "xmtp_tailer_polls_total": {"result": {"ok", "error"}},
    "xmtp_tailer_rows_total": {"source": {"forward", "gap"}},
    "xmtp_boundary_advances_total": {"result": {"ok", "lock_timeout", "error"}},
}
GAUGES = ["xmtp_stream_topics_registered", "xmtp_tailer_gap_ranges", "xmtp_tailer_restarts_total",
          "xmtp_tailer_ready"]
HISTOGRAMS = ["xmtp_stream_outbound_wait_seconds", "xmtp_stream_fetch_wait_seconds"]


class MetricsMixin(S.SharedServer):
    extra_config = """[limits]
max_update_frames_per_second = 1
max_update_burst = 2
max_ping_frames_per_second = 1
max_ping_burst = 2
"""

    # verifies: OPS-016, OPS-017 (xmtp_stream_* and xmtp_tailer_* families, types, label
    # vocabularies, values consistent with what the streams did), OPS-005/006 (xmtp_tailer_ready).
    def test_stream_and_tailer_metrics_match_what_happened(self):
        t = S.gtopic("met", 0)
        observed = {"messages": 0, "envelopes": 0, "applied": 0, "pong": 0}

        def count(frames):
            for f in frames:
                kind = f.WhichOneof("response")
                if kind in observed:
                    observed[kind] += 1
                observed["envelopes"] += len(S.envelopes_of(f))

        with self.server.channel() as ch:
            history = S.publish(ch, [E.group_message(t[1:], 1, b"met-%d" % k) for k in range(2)])
            S.wait_replica_shows(ch, {t: history[-1]})
            # 1. A static stream: history, one live envelope, then the client cancels.
            static = S.Static(ch, [(t, 0)])
            static.started(self)
            frames, got = [], 0
            while got < 2:
                frames.append(static.frame())
                got += len(S.envelopes_of(frames[-1]))
            live = S.publish(ch, [E.group_message(t[1:], 1, b"met-live")])
            while got < 3:
                frames.append(static.frame())
                got += len(S.envelopes_of(frames[-1]))
            count(frames)
            static.cancel()
            static.until_end()
            S.wait_replica_shows(ch, {t: live[0]})
            # 2. A bidi stream: an Update with catch-up, a Ping answered, an unmatched Pong, then
            # half-close (OK).
            bidi = S.Bidi(ch)
            bidi.started(self)
            bidi.update(1, adds=[(t, 0)])
            bidi.ping(9)
            bidi.pong(12345)
            frames = []
            while got < 6 or not any(f.WhichOneof("response") == "pong" for f in frames):
                frames.append(bidi.frame())
                got += len(S.envelopes_of(frames[-1]))
            self.assertEqual([f.pong.nonce for f in frames if f.WhichOneof("response") == "pong"],
                             [9])
            bidi.close()
            ended, rest = bidi.until_end()
            self.assertEqual(ended.code, grpc.StatusCode.OK)
            count(frames + rest)
            # 3. An invalid Update.
            invalid = S.Bidi(ch)
            invalid.started(self)
            invalid.update(0)
            ended, rest = invalid.until_end()
            self.assertEqual(ended.code, grpc.StatusCode.INVALID_ARGUMENT)
            count(rest)
            # 4. Update and Ping buckets (burst 2) overrun on their own streams.
            received = {"update": 2, "ping": 1, "pong": 1}  # so far: two Updates, Ping, Pong
            for kind in ("update", "ping"):
                s = S.Bidi(ch)
                s.started(self)
                for i in range(2 + 6):
                    s.update(i + 1) if kind == "update" else s.ping(i)
                ended, rest = s.until_end()
                self.assertEqual(ended.code, grpc.StatusCode.RESOURCE_EXHAUSTED)
                answered = len(rest)
                count(rest)
                received[kind] += answered + 1  # every answered frame and the refused one

        def settled():
            text = S.scrape(self.server)
            return (S.value(text, "xmtp_stream_sessions", kind="bidi") == 0 and
                    S.value(text, "xmtp_stream_sessions", kind="static") == 0 and
                    S.value(text, "xmtp_stream_topics_registered") == 0) and text
        text = harness.wait_for(settled, S.READ_TIMEOUT, "every session to end")

        def v(name, **labels):
            return S.value(text, name, **labels)

        # Families are described with their types.
        for name in VOCABULARY:
            kind = "gauge" if name == "xmtp_stream_sessions" else "counter"
            self.assertIn("# TYPE %s %s" % (name, kind), text)
        for name in GAUGES:
            self.assertRegex(text, r"# TYPE %s (gauge|counter)" % name)
        for name in HISTOGRAMS:
            self.assertIn("# TYPE %s histogram" % name, text)
        # Label values only from the vocabularies.
        for n, labels, _ in S.samples(text):
            if n in VOCABULARY:
                self.assertEqual(set(labels), set(VOCABULARY[n]), n)
                for key, allowed in VOCABULARY[n].items():
                    self.assertIn(labels[key], allowed, n)

        # Five admitted streams, all ended: two by their client (cancel, half-close), one
        # invalid, two rate limited.
        self.assertEqual(v("xmtp_stream_frames_sent_total", frame="started"), 5)
        self.assertEqual(v("xmtp_stream_frames_sent_total", frame="applied"), observed["applied"])
        self.assertEqual(v("xmtp_stream_frames_sent_total", frame="messages"),
                         observed["messages"])
        self.assertEqual(v("xmtp_stream_frames_sent_total", frame="pong"), observed["pong"])
        self.assertEqual(v("xmtp_stream_frames_sent_total", frame="ping"), 0)
        self.assertEqual(v("xmtp_stream_frames_sent_total", frame="keepalive"), 0)
        self.assertEqual(v("xmtp_stream_frames_received_total", frame="update"),
                         received["update"])
        self.assertEqual(v("xmtp_stream_frames_received_total", frame="ping"), received["ping"])
        self.assertEqual(v("xmtp_stream_frames_received_total", frame="pong"), received["pong"])
        # 2 history + 1 live on the static stream; 3 history on the bidi one.
        self.assertEqual(observed["envelopes"], 6)
        self.assertEqual(v("xmtp_stream_envelopes_sent_total", phase="catch_up"), 5)
        self.assertEqual(v("xmtp_stream_envelopes_sent_total", phase="live"), 1)
        self.assertEqual(v("xmtp_stream_updates_total", outcome="applied"), observed["applied"])
        self.assertEqual(v("xmtp_stream_updates_total", outcome="invalid"), 1)
        self.assertEqual(v("xmtp_stream_updates_total", outcome="rate_limited"), 1)
        self.assertEqual(v("xmtp_stream_ended_total", reason="client"), 2)
        self.assertEqual(v("xmtp_stream_ended_total", reason="invalid"), 1)
        self.assertEqual(v("xmtp_stream_ended_total", reason="rate_limited"), 2)
        self.assertEqual(v("xmtp_stream_ended_total"), 5)
        self.assertGreaterEqual(v("xmtp_stream_fetch_wait_seconds_count"), 2)
        self.assertEqual(v("xmtp_stream_outbound_wait_seconds_count"),
                         v("xmtp_stream_outbound_wait_seconds_bucket", le="+Inf"))
        # Tailer: one generation, ready, no gaps left, every row read once.
        self.assertEqual(v("xmtp_tailer_restarts_total"), 1)
        self.assertEqual(v("xmtp_tailer_ready"), 1)
        self.assertEqual(v("xmtp_tailer_gap_ranges"), 0)
        self.assertGreaterEqual(v("xmtp_tailer_polls_total", result="ok"), 1)
        self.assertEqual(v("xmtp_tailer_polls_total", result="error"), 0)
        self.assertGreaterEqual(v("xmtp_tailer_rows_total"), 3)
        self.assertGreaterEqual(v("xmtp_boundary_advances_total", result="ok"), 1)
        # The request families see the streams under their route-table labels.
        sub = {"grpc_service": "xmtp.backend.v1.SubscriptionService"}
        self.assertEqual(v("grpc_server_started_total", grpc_method="Subscribe",
                           grpc_type="bidi_stream", **sub), 4)
        self.assertEqual(v("grpc_server_started_total", grpc_method="SubscribeStatic",
                           grpc_type="server_stream", **sub), 1)
        self.assertEqual(v("grpc_server_in_flight", **sub), 0)
        handled = {code: v("grpc_server_handled_total", grpc_code=code, **sub)
                   for code in ("OK", "Cancelled", "InvalidArgument", "ResourceExhausted")}
        self.assertEqual(handled, {"OK": 1, "Cancelled": 1, "InvalidArgument": 1,
                                   "ResourceExhausted": 2})


PG = unittest.skipUnless(S.HAVE_PG, "needs XB_PG_PRIMARY")


class SqliteCapacityTest(CapacityMixin, unittest.TestCase):
    pass


@PG
class PostgresCapacityTest(CapacityMixin, unittest.TestCase):
    engine_class = S.PostgresEngine


class SqliteGrpcWebStreamTest(GrpcWebMixin, unittest.TestCase):
    pass


@PG
class PostgresGrpcWebStreamTest(GrpcWebMixin, unittest.TestCase):
    engine_class = S.PostgresEngine


class SqliteStreamMetricsTest(MetricsMixin, unittest.TestCase):
    pass


@PG
class PostgresStreamMetricsTest(MetricsMixin, unittest.TestCase):
    engine_class = S.PostgresEngine


if __name__ == "__main__":
    unittest.main()
