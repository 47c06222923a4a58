"""Connection limits of the gRPC port (issue 28, defects 4 and 5; DECISIONS.md "Connection limits"):
the accept loop backs off at the descriptor limit, and idle, slow, flooding or surplus connections
are closed by configuration rather than by the client's good manners. Raw sockets for HTTP/1.1,
python3-h2 for HTTP/2; every wait has a deadline and the server runs with small timeouts."""
import os
import re
import resource
import select
import socket
import ssl
import struct
import subprocess
import tempfile
import threading
import time
import unittest

import h2.config
import h2.connection
import h2.events

import envelopes as E
import h2_raw
import harness
from xmtp.backend.v1 import backend_pb2

GET_CONFIGURATION = "/xmtp.backend.v1.ConfigurationService/GetConfiguration"
PUBLISH = "/xmtp.backend.v1.PublishService/Publish"
SUBSCRIBE_STATIC = "/xmtp.backend.v1.SubscriptionService/SubscribeStatic"
SUBSCRIBE = "/xmtp.backend.v1.SubscriptionService/Subscribe"
ENHANCE_YOUR_CALM = 0xB

# Small limits so that every bound is reached within a test's few seconds.
LIMITS = """[limits]
max_header_list_bytes = 4096
max_control_frames_per_second = 20
max_control_frame_burst = 50
"""
SERVER_KEYS = """handshake_timeout_ms = 1000
header_read_timeout_ms = 1000
idle_timeout_ms = 1000
"""


def config(server_keys=SERVER_KEYS, limits=LIMITS, database_extra=""):
    text = harness.minimal_config(limits).replace(
        'log_format = "json"\n', 'log_format = "json"\n' + server_keys)
    return text.replace('url = "sqlite://{data}/xmtp.db"\n',
                        'url = "sqlite://{data}/xmtp.db"\n' + database_extra)


def closed_by(server, reason):
    return harness.metric(server, "xmtp_net_connections_closed_total", 'reason="%s"' % reason)


def wait_closed(sock, timeout):
    """Reads (and drops) whatever arrives until the peer closes; False if it is still open at the
    deadline."""
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        readable, _, _ = select.select([sock], [], [], left)
        if not readable:
            return False
        try:
            if not sock.recv(65536):
                return True
        except ConnectionResetError:
            return True


def grpc_request_headers(path, extra=()):
    return [(":method", "POST"), (":scheme", "http"), (":path", path),
            (":authority", "127.0.0.1"), ("content-type", "application/grpc"),
            ("te", "trailers"), *extra]


class H2Client:
    """One HTTP/2 connection, prior knowledge, driven by hand."""

    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        self.conn = h2.connection.H2Connection(
            config=h2.config.H2Configuration(client_side=True, header_encoding="utf-8"))
        self.conn.initiate_connection()
        self.flush()
        self.events = []
        self.closed = False

    def flush(self):
        data = self.conn.data_to_send()
        if data:
            try:
                self.sock.sendall(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the server ended the connection: what it sent first is still read

    def pump(self, timeout):
        """Reads what arrives within `timeout`; returns the new events."""
        readable, _, _ = select.select([self.sock], [], [], timeout)
        if not readable:
            return []
        try:
            data = self.sock.recv(65536)
        except ConnectionResetError:
            data = b""
        if not data:
            self.closed = True
            return []
        new = self.conn.receive_data(data)
        self.flush()
        self.events.extend(new)
        return new

    def wait(self, predicate, timeout, what):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for event in self.events:
                if predicate(event):
                    return event
            if self.closed:
                break
            self.pump(min(0.2, max(0.0, deadline - time.monotonic())))
        for event in self.events:
            if predicate(event):
                return event
        raise AssertionError("no %s (closed=%s, events=%r)" % (what, self.closed,
                                                                 self.events[-5:]))

    def goaway(self, timeout):
        return self.wait(lambda e: isinstance(e, h2.events.ConnectionTerminated), timeout,
                         "GOAWAY")

    def start_call(self, path=GET_CONFIGURATION, extra=(), end=True):
        stream_id = self.conn.get_next_available_stream_id()
        self.conn.send_headers(stream_id, grpc_request_headers(path, extra))
        if end:
            self.conn.send_data(stream_id, b"\x00\x00\x00\x00\x00", end_stream=True)
        self.flush()
        return stream_id

    def finish_call(self, stream_id):
        self.conn.send_data(stream_id, b"\x00\x00\x00\x00\x00", end_stream=True)
        self.flush()

    def response(self, stream_id, timeout=5):
        """(status, headers + trailers) of a stream, once it ended or was reset."""
        self.wait(lambda e: isinstance(e, (h2.events.StreamEnded, h2.events.StreamReset)) and
                  e.stream_id == stream_id, timeout, "end of stream %d" % stream_id)
        fields = {}
        for event in self.events:
            if isinstance(event, (h2.events.ResponseReceived, h2.events.TrailersReceived)) and \
                    event.stream_id == stream_id:
                fields.update(dict(event.headers))
        return fields.get(":status"), fields

    def call(self, path=GET_CONFIGURATION, extra=()):
        return self.response(self.start_call(path, extra))

    def close(self):
        self.sock.close()


def http1_request(path=GET_CONFIGURATION, extra_headers=""):
    return ("POST %s HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/grpc-web+proto\r\n"
            "x-grpc-web: 1\r\n%scontent-length: 5\r\n\r\n" % (path, extra_headers)).encode() + \
        b"\x00\x00\x00\x00\x00"


def read_http1_response(sock, timeout=5):
    """Reads one content-length response; returns (status, body)."""
    deadline = time.monotonic() + timeout
    data = b""
    while b"\r\n\r\n" not in data:
        sock.settimeout(max(0.01, deadline - time.monotonic()))
        chunk = sock.recv(65536)
        if not chunk:
            raise AssertionError("closed before a response head: %r" % data)
        data += chunk
    head, body = data.split(b"\r\n\r\n", 1)
    status = int(head.split(b" ", 2)[1])
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, value = line.split(b":", 1)
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(body) < length:
        sock.settimeout(max(0.01, deadline - time.monotonic()))
        chunk = sock.recv(65536)
        if not chunk:
            break
        body += chunk
    return status, body


class ConnectionTimeoutsTest(harness.ServerTestCase):
    config = config()

    def connect(self):
        return socket.create_connection(("127.0.0.1", self.server.port), timeout=5)

    # Issue 28 (5): an idle TCP connection (nothing sent) stayed open indefinitely.
    def test_idle_tcp_connection_is_closed_after_the_handshake_timeout(self):
        before = closed_by(self.server, "handshake_timeout")
        with self.connect() as sock:
            self.assertTrue(wait_closed(sock, 5), "still open 5 s after connecting")
        harness.wait_for(lambda: closed_by(self.server, "handshake_timeout") > before, 5,
                         "the handshake timeout to be counted")

    # A partial HTTP/2 preface is the same case.
    def test_partial_preface_is_closed_after_the_handshake_timeout(self):
        with self.connect() as sock:
            sock.sendall(b"PRI * HTTP/2.0\r\n")
            self.assertTrue(wait_closed(sock, 5), "still open 5 s after connecting")

    # Issue 28 (5): 500 slowloris connections (one header byte per second) stayed open; one is
    # enough to show the bound. The first request is answered, the second trickles.
    def test_slowloris_request_head_is_closed_after_the_header_read_timeout(self):
        before = closed_by(self.server, "header_read_timeout")
        with self.connect() as sock:
            sock.sendall(http1_request())
            status, _ = read_http1_response(sock)
            self.assertEqual(status, 200)
            head = http1_request()
            start = time.monotonic()
            closed = False
            for i in range(len(head)):
                try:
                    sock.sendall(head[i:i + 1])
                except (BrokenPipeError, ConnectionResetError):
                    closed = True
                    break
                # Paces the sender (10 bytes a second), it waits for nothing.
                if wait_closed_or_quiet(sock, 0.1):
                    closed = True
                    break
                if time.monotonic() - start > 5:
                    break
            self.assertTrue(closed, "a trickled request head was still being read after 5 s")
        harness.wait_for(lambda: closed_by(self.server, "header_read_timeout") > before, 5,
                         "the header read timeout to be counted")

    def test_idle_http1_keep_alive_connection_is_closed(self):
        before = closed_by(self.server, "idle_timeout")
        with self.connect() as sock:
            sock.sendall(http1_request())
            status, _ = read_http1_response(sock)
            self.assertEqual(status, 200)
            self.assertTrue(wait_closed(sock, 5), "an idle keep-alive connection stayed open")
        harness.wait_for(lambda: closed_by(self.server, "idle_timeout") > before, 5,
                         "the idle timeout to be counted")

    # Issue 28 (5): idle HTTP/2 connections stayed open (~47 KiB each).
    def test_idle_http2_connection_gets_goaway_no_error(self):
        client = H2Client(self.server.port)
        try:
            status, fields = client.call()
            self.assertEqual((status, fields.get("grpc-status")), ("200", "0"))
            goaway = client.goaway(5)
            self.assertEqual(goaway.error_code, 0)
            self.assertTrue(wait_closed(client.sock, 5))
        finally:
            client.close()

    # An HTTP/2 connection that never sends a request: GOAWAY after the handshake timeout.
    def test_http2_connection_without_a_request_gets_goaway(self):
        before = closed_by(self.server, "handshake_timeout")
        client = H2Client(self.server.port)
        try:
            self.assertEqual(client.goaway(5).error_code, 0)
        finally:
            client.close()
        harness.wait_for(lambda: closed_by(self.server, "handshake_timeout") > before, 5,
                         "the handshake timeout to be counted")

    # The idle timeout never closes a connection with an open stream (a stream can last hours).
    def test_open_stream_keeps_an_http2_connection(self):
        client = H2Client(self.server.port)
        try:
            stream_id = client.start_call(end=False)
            # Three idle timeouts pass with the request still open: no GOAWAY.
            deadline = time.monotonic() + 3
            while time.monotonic() < deadline and not client.closed:
                client.pump(deadline - time.monotonic())
            self.assertFalse(any(isinstance(e, h2.events.ConnectionTerminated)
                                 for e in client.events), client.events)
            self.assertFalse(client.closed)
            client.finish_call(stream_id)
            status, fields = client.response(stream_id)
            self.assertEqual((status, fields.get("grpc-status")), ("200", "0"))
            self.assertEqual(client.goaway(5).error_code, 0)
        finally:
            client.close()

    # A stream the server finished while the client's side is open (FinishedStreamTest) does not
    # keep the connection from its idle GOAWAY.
    def test_stream_finished_with_the_client_side_open_lets_the_connection_go_idle(self):
        client = H2Client(self.server.port)
        try:
            stream = start_unparsable_subscribe(client)
            self.assertEqual(client.response(stream)[1].get("grpc-status"), "3")
            self.assertEqual(client.goaway(5).error_code, 0)  # idle_timeout_ms = 1000
        finally:
            client.close()

    # A header list over limits.max_header_list_bytes: HTTP/2 answers that stream 431 and keeps
    # the connection; a list within it (a 3 KiB bearer token) is served.
    def test_http2_header_list_over_the_limit_is_refused_with_431(self):
        client = H2Client(self.server.port)
        try:
            status, _ = client.call(extra=[("authorization", "Bearer " + "a" * 3000)])
            self.assertEqual(status, "200")
            status, _ = client.call(extra=[("x-padding", "b" * 5000)])
            self.assertEqual(status, "431")
            status, fields = client.call()
            self.assertEqual((status, fields.get("grpc-status")), ("200", "0"))
        finally:
            client.close()

    # HTTP/1.1: 431 and the connection closed (the rest of the head is not read).
    def test_http1_header_over_the_limit_is_refused_with_431(self):
        with self.connect() as sock:
            sock.sendall(http1_request(extra_headers="authorization: Bearer %s\r\n" % ("a" * 3000)))
            status, _ = read_http1_response(sock)
            self.assertEqual(status, 200)
            sock.sendall(http1_request(extra_headers="x-padding: %s\r\n" % ("b" * 5000)))
            status, _ = read_http1_response(sock)
            self.assertEqual(status, 431)
            self.assertTrue(wait_closed(sock, 5))

    def flood(self, frame, count):
        """Sends `frame` up to `count` times on a fresh connection after one answered call; returns
        the GOAWAY."""
        client = H2Client(self.server.port)
        try:
            status, _ = client.call()
            self.assertEqual(status, "200")
            chunk = frame * 1000
            sent = 0
            while sent < count and not client.closed:
                try:
                    client.sock.sendall(chunk)
                except (BrokenPipeError, ConnectionResetError):
                    break
                sent += 1000
                client.pump(0)
                if any(isinstance(e, h2.events.ConnectionTerminated) for e in client.events):
                    break
            goaway = client.goaway(5)
            self.assertLess(sent, count, "the whole flood was accepted")
            return goaway
        finally:
            client.close()

    def check_flood_is_ended(self, frame):
        before = closed_by(self.server, "control_frame_flood")
        bystander = H2Client(self.server.port)
        try:
            self.assertEqual(bystander.call()[0], "200")
            goaway = self.flood(frame, 1000000)
            self.assertEqual(goaway.error_code, ENHANCE_YOUR_CALM)
            status, fields = bystander.call()
            self.assertEqual((status, fields.get("grpc-status")), ("200", "0"))
        finally:
            bystander.close()
        self.assertEqual(closed_by(self.server, "control_frame_flood"), before + 1)

    # Issue 28 (5): 99 M WINDOW_UPDATE(+1) frames in 10 s were accepted.
    def test_window_update_flood_ends_with_enhance_your_calm(self):
        window_update = struct.pack(">I", 4)[1:] + b"\x08\x00" + struct.pack(">II", 0, 1)
        self.check_flood_is_ended(window_update)

    def test_ping_flood_ends_with_enhance_your_calm(self):
        ping = struct.pack(">I", 8)[1:] + b"\x06\x00" + struct.pack(">I", 0) + b"12345678"
        self.check_flood_is_ended(ping)

    def test_empty_data_flood_ends_with_enhance_your_calm(self):
        client_stream = 1  # the flood rides on the first stream of the connection
        empty_data = struct.pack(">I", 0)[1:] + b"\x00\x00" + struct.pack(">I", client_stream)
        before = closed_by(self.server, "control_frame_flood")
        client = H2Client(self.server.port)
        try:
            client.start_call(end=False)
            sent = 0
            while sent < 1000000 and not client.closed:
                try:
                    client.sock.sendall(empty_data * 1000)
                except (BrokenPipeError, ConnectionResetError):
                    break
                sent += 1000
                client.pump(0)
                if any(isinstance(e, h2.events.ConnectionTerminated) for e in client.events):
                    break
            self.assertEqual(client.goaway(5).error_code, ENHANCE_YOUR_CALM)
        finally:
            client.close()
        self.assertEqual(closed_by(self.server, "control_frame_flood"), before + 1)

    # Keepalive pings at a sane rate (well under the cap, over longer than the burst lasts) never
    # end a connection.
    def test_keepalive_pings_at_a_sane_rate_are_answered(self):
        client = H2Client(self.server.port)
        try:
            stream_id = client.start_call(end=False)  # an open stream: no idle timeout
            for i in range(30):
                client.conn.ping(struct.pack(">Q", i))
                client.flush()
                client.wait(lambda e, i=i: isinstance(e, h2.events.PingAckReceived) and
                            e.ping_data == struct.pack(">Q", i), 5, "PING ACK %d" % i)
                # Paces the pings at ten a second; it waits for nothing.
                time.sleep(0.1)
            client.finish_call(stream_id)
            self.assertEqual(client.response(stream_id)[0], "200")
        finally:
            client.close()


    # A real gRPC client (grpcio) making unary calls back to back sends a WINDOW_UPDATE and a
    # BDP PING about every call: each request earns their tokens (with one per request the
    # streams suite's publishers were cut off after ~1,000 calls).
    def test_back_to_back_grpc_calls_stay_within_the_control_frame_cap(self):
        before = closed_by(self.server, "control_frame_flood")
        with self.server.channel() as channel:
            for _ in range(1500):
                harness.unary(channel, GET_CONFIGURATION, backend_pb2.GetConfigurationRequest(),
                              backend_pb2.GetConfigurationResponse)
        self.assertEqual(closed_by(self.server, "control_frame_flood"), before)

    # A stream client that answers every DATA frame with a stream and a connection WINDOW_UPDATE,
    # however small the frame (grpcio reading a stream's many small live messages under load did),
    # was cut off as a control-frame flood: 200-byte frames earned it 0.05 of a frame each. Each
    # DATA frame now earns the two WINDOW_UPDATEs it may draw.
    def test_stream_client_acknowledging_every_small_data_frame_is_not_a_flood(self):
        before = closed_by(self.server, "control_frame_flood")
        topic = E.group_topic(b"calm-acks".ljust(16, b"_"))
        client = h2_raw.Client(self.server.port, credit=False)
        try:
            request = backend_pb2.SubscribeStaticRequest(
                topics=[backend_pb2.TopicQuery(topic=backend_pb2.Topic(topic=topic))])
            stream = client.start(SUBSCRIBE_STATIC, request.SerializeToString())
            frames = [0]

            def acknowledge_each(event, handle=client._handle):
                handle(event)
                if isinstance(event, h2.events.DataReceived) and event.flow_controlled_length:
                    frames[0] += 1
                    client.conn.increment_flow_control_window(event.flow_controlled_length,
                                                              event.stream_id)
                    client.conn.increment_flow_control_window(event.flow_controlled_length)

            client._handle = acknowledge_each
            messages = 3000
            with self.server.channel() as channel:
                for k in range(messages):
                    harness.unary(channel, PUBLISH, backend_pb2.PublishRequest(
                        envelopes=[E.group_message(b"calm-acks".ljust(16, b"_"), 1, b"m%d" % k)]),
                        backend_pb2.PublishResponse)
                    client.pump(0.001)  # reads what arrived meanwhile; waits for nothing
            self.assertTrue(client.run_until(lambda: stream.data.count(b"m%d" % (messages - 1)) > 0
                                             or client.closed, 30), "the last message never came")
            self.assertFalse(client.closed, "the server ended the connection (GOAWAY %r)" %
                             client.goaway)
            self.assertIsNone(client.goaway)
            # The point of the test: far more acknowledgements than the burst alone allows.
            self.assertGreater(frames[0] * 2, 1000)
        finally:
            client.close()
        self.assertEqual(closed_by(self.server, "control_frame_flood"), before)


def wait_closed_or_quiet(sock, seconds):
    """True when the peer closed within `seconds`."""
    readable, _, _ = select.select([sock], [], [], seconds)
    if not readable:
        return False
    try:
        return sock.recv(65536) == b""
    except ConnectionResetError:
        return True


class FinishedStreamTest(harness.ServerTestCase):
    config = config(server_keys="")

    # A stream the server finishes while the client's side is open (here a bidirectional
    # Subscribe whose first message does not parse) gets its trailers and no RST_STREAM, so a
    # balancer in between forwards the status (HAProxy 2.6 dropped it after an immediate
    # RST_STREAM(NO_ERROR)); the rest of the request is discarded, and past a window (1 MiB) of
    # it the stream is reset NO_ERROR (RFC 9113 8.1).
    def test_stream_finished_with_the_client_side_open_waits_for_the_client(self):
        client = H2Client(self.server.port)
        try:
            stream = start_unparsable_subscribe(client)
            status, fields = client.response(stream)
            self.assertEqual((status, fields.get("grpc-status")), ("200", "3"), fields)
            client.conn.send_data(stream, b"\x00\x00\x00\x00\x00")
            client.flush()
            client.pump(0.5)
            self.assertFalse(any(isinstance(e, h2.events.StreamReset) for e in client.events),
                             client.events)
            sent = upload_until_reset(client, stream, limit=3 << 20)
            reset = client.wait(lambda e: isinstance(e, h2.events.StreamReset), 5, "RST_STREAM")
            self.assertEqual((reset.stream_id, reset.error_code), (stream, 0))
            self.assertGreater(sent, 1 << 20)
        finally:
            client.close()


def start_unparsable_subscribe(client):
    """A Subscribe whose first message does not parse, its request side left open."""
    stream = client.start_call(SUBSCRIBE, end=False)
    client.conn.send_data(stream, b"\x00\x00\x00\x00\x02\xff\xff")
    client.flush()
    return stream


def upload_until_reset(client, stream_id, limit):
    """Sends DATA on `stream_id` as flow control allows until it is reset or `limit` bytes went;
    returns the bytes sent."""
    sent, chunk = 0, b"\x00" * 16384
    while sent < limit and not any(isinstance(e, h2.events.StreamReset) for e in client.events):
        if client.conn.local_flow_control_window(stream_id) < len(chunk):
            client.pump(0.2)
            continue
        client.conn.send_data(stream_id, chunk)
        client.flush()
        sent += len(chunk)
    return sent


class ConnectionCapTest(unittest.TestCase):
    # Issue 28 (5): no maximum; the (N+1)th connection is accepted and closed at once, counted.
    def test_connection_over_the_cap_is_refused_and_counted(self):
        keys = "max_connections = 3\nhandshake_timeout_ms = 30000\n"
        with harness.Server(config=config(server_keys=keys)) as server:
            held = [socket.create_connection(("127.0.0.1", server.port), timeout=5)
                    for _ in range(3)]
            harness.wait_for(lambda: harness.metric(server, "xmtp_net_connections") == 3, 5,
                             "three open connections")
            with socket.create_connection(("127.0.0.1", server.port), timeout=5) as extra:
                self.assertTrue(wait_closed(extra, 5), "a fourth connection was kept")
            self.assertEqual(closed_by(server, "refused"), 1)
            held.pop().close()
            harness.wait_for(lambda: harness.metric(server, "xmtp_net_connections") == 2, 5,
                             "a slot to free")
            client = H2Client(server.port)
            try:
                self.assertEqual(client.call()[0], "200")
            finally:
                client.close()
            for sock in held:
                sock.close()


class TlsHandshakeTimeoutTest(unittest.TestCase):
    # The handshake timeout covers the TLS handshake too: a ClientHello that never completes, or
    # a completed handshake with no preface after it, is closed and counted.
    def test_stalled_tls_handshake_is_closed_after_the_handshake_timeout(self):
        with tempfile.TemporaryDirectory(prefix="xb-tls-") as certdir:
            cert = os.path.join(certdir, "cert.pem")
            key = os.path.join(certdir, "key.pem")
            subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                            "ec_paramgen_curve:P-256", "-nodes", "-days", "1", "-subj",
                            "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1",
                            "-keyout", key, "-out", cert], check=True, capture_output=True)
            text = config().replace("[telemetry]", '[server.tls]\ncert_file = "%s"\n'
                                    'key_file = "%s"\n[telemetry]' % (cert, key))
            with harness.Server(config=text) as server:
                with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
                    sock.sendall(b"\x16\x03\x01\x02\x00\x01")  # the start of a ClientHello
                    self.assertTrue(wait_closed(sock, 5), "a stalled TLS handshake was kept")
                context = ssl.create_default_context(cafile=cert)
                context.set_alpn_protocols(["h2"])
                with socket.create_connection(("127.0.0.1", server.port), timeout=5) as raw:
                    with context.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
                        self.assertEqual(tls.selected_alpn_protocol(), "h2")
                        tls.settimeout(5)
                        try:
                            self.assertEqual(tls.recv(65536), b"")  # closed, no preface sent
                        except (ConnectionResetError, ssl.SSLError):
                            pass
                harness.wait_for(lambda: closed_by(server, "handshake_timeout") == 2, 5,
                                 "both handshake timeouts to be counted")


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    # utime and stime are fields 14 and 15 of stat(5); fields[0] here is field 3.
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class LowFileLimitServer(harness.Server):
    """A server whose open-file limit (soft and hard, so it cannot raise it) is `limit`."""

    def __init__(self, limit, **kwargs):
        super().__init__(**kwargs)
        self.limit = limit

    def spawn(self):
        limit = self.limit

        def low_limit():
            resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))

        self.proc = subprocess.Popen(self.args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     env=self.env, text=True, preexec_fn=low_limit)
        threading.Thread(target=self._read_stdout, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()

    def open_files(self):
        return len(os.listdir("/proc/%d/fd" % self.proc.pid))

    # UBSan checks a virtual call through a vtable it has not seen before by probing the memory
    # with a pipe; with every descriptor taken the pipe cannot be made, and a valid object is
    # reported as one with an "invalid vptr" (the report then says "memory cannot be printed", or
    # prints a vtable address of the binary). Those reports, and only those, say nothing about the
    # server here; every other finding still fails the test.
    VPTR_REPORT = re.compile(r"runtime error: (member call on|member access within|downcast of) "
                             r"(misaligned )?address 0x[0-9a-f]+ which does not point to an "
                             r"object of type")
    VPTR_DETAIL = re.compile(r"note: object has invalid vptr|<memory cannot be printed>|"
                             r"^\s*invalid vptr\s*$|^[\s0-9a-f]+$|^\s*\^~*\s*$")

    def check_sanitizers(self):
        kept = [line for line in self.stderr_text.splitlines(keepends=True)
                if not self.VPTR_REPORT.search(line) and not self.VPTR_DETAIL.search(line)]
        self.stderr_text = "".join(kept)
        super().check_sanitizers()


class DescriptorLimitTest(unittest.TestCase):
    # Issue 28 (4): at the open-file limit accept failed with EMFILE and was retried at once
    # (14,032 failed accept() calls in 3 s, 63-68% CPU with no traffic).
    def test_accept_at_the_descriptor_limit_backs_off(self):
        limit = 64
        keys = "handshake_timeout_ms = 60000\n"
        held = []
        with LowFileLimitServer(limit, config=config(server_keys=keys,
                                                     database_extra="max_connections = 2\n")) \
                as server:
            try:
                free = limit - server.open_files()
                self.assertGreater(free, 0)
                # Every free descriptor taken by an idle connection, and a few more waiting in
                # the listen backlog: accept now fails with EMFILE.
                for _ in range(free + 4):
                    held.append(socket.create_connection(("127.0.0.1", server.port), timeout=5))
                harness.wait_for(lambda: server.open_files() >= limit, 5,
                                 "the descriptor table to fill")
                cpu_before = cpu_seconds(server.proc.pid)
                # A window of no traffic, measured (not waited on): 2 s.
                time.sleep(2)
                cpu_spent = cpu_seconds(server.proc.pid) - cpu_before
                self.assertLess(cpu_spent, 0.3, "the server spent %.2f s of CPU idle at the "
                                "limit" % cpu_spent)
            finally:
                for sock in held:
                    sock.close()
            # Once descriptors are free again, a new client is served.
            status = harness.wait_for(lambda: try_h2_call(server.port), 10, "a served client")
            self.assertEqual(status, "200")
            failures = harness.metric(server, "xmtp_net_accept_failures_total", 'reason="descriptors"')
            self.assertGreater(failures, 0)
            # Backing off from 100 ms, the whole episode (a few seconds) costs a few dozen failed
            # accepts, not thousands.
            self.assertLess(failures, 100)
            warnings = [r for r in server.log_records()
                        if r.get("msg") == "accept failing: open-file limit reached"]
            self.assertGreaterEqual(len(warnings), 1)
            self.assertLessEqual(len(warnings), 2)


def try_h2_call(port):
    try:
        client = H2Client(port)
    except OSError:
        return None
    try:
        status, _ = client.call()
        return status
    except (AssertionError, OSError):
        return None
    finally:
        client.close()


if __name__ == "__main__":
    unittest.main()
