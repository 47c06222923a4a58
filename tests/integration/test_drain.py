"""Shutdown as a client sees it (OPS-007, OPS-008), with the test build's slow handler
(xmtp-backend-testing; never in the shipped binary)."""
import socket
import threading
import time
import unittest

import grpc
import hpack

import h2_raw
import harness
import health_pb2
from xmtp.backend.v1 import backend_pb2

SLEEP = "/xb.test.v1.TestService/Sleep"
DRAIN_MS = 1500


def sleep_call(channel, ms, results, key):
    try:
        resp, _ = harness.unary(channel, SLEEP, health_pb2.HealthCheckRequest(service=str(ms)),
                                health_pb2.HealthCheckResponse, timeout=30)
        results[key] = ("ok", resp.status)
    except grpc.RpcError as e:
        results[key] = ("error", e.code())


class DrainTest(unittest.TestCase):
    # verifies: OPS-008 — an admitted unary call finishes within the drain deadline; one that
    # would run past it ends UNAVAILABLE; the process exits within deadline + 5 s.
    # verifies: OPS-007 — a request arriving during the drain is answered UNAVAILABLE.
    def test_drain_deadline(self):
        config = harness.minimal_config().replace(
            "[server]\n", "[server]\nmax_drain_duration_ms = %d\n" % DRAIN_MS)
        with harness.Server(config=config, binary=harness.TEST_BINARY) as server:
            ch = server.channel()
            results = {}
            fast = threading.Thread(target=sleep_call, args=(ch, 500, results, "fast"))
            slow = threading.Thread(target=sleep_call, args=(ch, 20000, results, "slow"))
            fast.start()
            slow.start()
            # Both calls admitted: the handler has them when the request log is not needed —
            # wait until the server reports them in flight through its own metric.
            harness.wait_for(lambda: self._in_flight(server) >= 2, 10, "two calls in flight")
            started = time.monotonic()
            server.terminate()
            # A new request during the drain: UNAVAILABLE.
            harness.wait_for(lambda: self._draining(ch), 5, "drain admission")
            fast.join(10)
            slow.join(15)
            self.assertEqual(results["fast"], ("ok", health_pb2.HealthCheckResponse.SERVING))
            self.assertEqual(results["slow"], ("error", grpc.StatusCode.UNAVAILABLE))
            code = server.wait(timeout=DRAIN_MS / 1000 + 5 + 2)
            elapsed = time.monotonic() - started
            self.assertEqual(code, 0)
            self.assertLess(elapsed, DRAIN_MS / 1000 + 5)
            ch.close()

    def test_idle_server_exits_promptly_on_sigterm(self):
        with harness.Server() as server:
            started = time.monotonic()
            server.terminate()
            self.assertEqual(server.wait(timeout=10), 0)
            self.assertLess(time.monotonic() - started, 5)

    @staticmethod
    def _in_flight(server):
        import urllib.request
        text = urllib.request.urlopen(
            "http://127.0.0.1:%d/metrics" % server.metrics_port, timeout=5).read().decode()
        total = 0
        for line in text.splitlines():
            if line.startswith("grpc_server_in_flight{") and 'grpc_service="unknown"' in line:
                total += float(line.rsplit(" ", 1)[1])
        return total

    @staticmethod
    def _draining(ch):
        try:
            harness.unary(ch, "/xmtp.backend.v1.ConfigurationService/GetConfiguration",
                          backend_pb2.GetConfigurationRequest(),
                          backend_pb2.GetConfigurationResponse, timeout=5)
            return False
        except grpc.RpcError as e:
            return e.code() == grpc.StatusCode.UNAVAILABLE


def read_frames(sock, timeout):
    """The HTTP/2 frames the server sends until it closes the connection: (type, flags, stream
    id, payload) in order. Parsed here rather than by python3-h2, whose state machine stops at
    the first GOAWAY: the point is what comes after it."""
    frames, buffer = [], b""
    deadline = time.monotonic() + timeout
    sock.settimeout(0.2)
    while time.monotonic() < deadline:
        try:
            data = sock.recv(1 << 16)
        except socket.timeout:
            continue
        except OSError:
            break
        if not data:
            break
        buffer += data
        while len(buffer) >= 9:
            length = int.from_bytes(buffer[0:3], "big")
            if len(buffer) < 9 + length:
                break
            kind, flags = buffer[3], buffer[4]
            stream_id = int.from_bytes(buffer[5:9], "big") & 0x7FFFFFFF
            frames.append((kind, flags, stream_id, buffer[9:9 + length]))
            buffer = buffer[9 + length:]
    return frames


GOAWAY, HEADERS = 0x7, 0x1


class ShutdownNoticeTest(unittest.TestCase):
    # verifies: OPS-007 — the drain's first word to an HTTP/2 client is a GOAWAY with the
    # greatest stream id (RFC 9113 6.8's notice: open no more streams here, none refused), while
    # the calls it has go on; the final GOAWAY, naming the last stream served, comes at the exit.
    # A balancer moves new calls elsewhere in between instead of having one in flight at the exit.
    def test_notice_at_drain_start_final_goaway_at_exit(self):
        config = harness.minimal_config().replace(
            "[server]\n", "[server]\nmax_drain_duration_ms = 5000\n")
        with harness.Server(config=config, binary=harness.TEST_BINARY) as server:
            client = h2_raw.Client(server.port)
            client.start(SLEEP, health_pb2.HealthCheckRequest(service="1500").SerializeToString())
            harness.wait_for(lambda: DrainTest._in_flight(server) >= 1, 10, "the call in flight")
            server.terminate()
            harness.wait_for(lambda: self._ready(server) == 0, 10, "the drain begun")
            # A connection opened during the drain gets no notice, only the final GOAWAY: it may
            # be a balancer's health check, which must read the NOT_SERVING answer.
            late = h2_raw.Client(server.port)
            late_frames = read_frames(late.sock, 15)
            frames = read_frames(client.sock, 15)  # kept by the socket meanwhile
            self.assertEqual(server.wait(timeout=10), 0)
            client.close()
            late.close()
        self.assertEqual(self._goaways(late_frames), [(0, 0)])
        kinds = [(kind, stream_id) for kind, _, stream_id, _ in frames]
        goaways = [(i, last, code) for i, (last, code) in self._goaways(frames, indexed=True)]
        self.assertEqual([(last, code) for _, last, code in goaways],
                         [(2**31 - 1, 0), (1, 0)], kinds)
        response = [i for i, (kind, stream_id) in enumerate(kinds)
                    if kind == HEADERS and stream_id == 1]
        self.assertTrue(response, kinds)
        # The notice before the call's response, the final GOAWAY after it.
        self.assertLess(goaways[0][0], response[0], kinds)
        self.assertGreater(goaways[1][0], response[-1], kinds)
        decoder = hpack.Decoder()
        headers = [dict(decoder.decode(frames[i][3])) for i in response]
        self.assertEqual(headers[-1].get("grpc-status"), "0", headers)

    @staticmethod
    def _goaways(frames, indexed=False):
        """(last stream id, error code) of each GOAWAY; with `indexed`, (frame index, that)."""
        found = [(i, (int.from_bytes(payload[0:4], "big") & 0x7FFFFFFF,
                      int.from_bytes(payload[4:8], "big")))
                 for i, (kind, _, _, payload) in enumerate(frames) if kind == GOAWAY]
        return found if indexed else [goaway for _, goaway in found]

    @staticmethod
    def _ready(server):
        text = harness.scrape(server)
        for line in text.splitlines():
            if line.startswith("xmtp_backend_ready "):
                return float(line.rsplit(" ", 1)[1])
        return None


if __name__ == "__main__":
    unittest.main()


class GrpcWebStreamDrainTest(unittest.TestCase):
    # verifies: OPS-007 — a gRPC-Web server stream over HTTP/1.1 (chunked) gets NOT_SERVING and
    # then ends with grpc-status UNAVAILABLE in its trailer frame when the drain begins.
    def test_watch_over_http1_ends_unavailable(self):
        import http.client
        with harness.Server() as server:
            conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=15)
            conn.request("POST", "/grpc.health.v1.Health/Watch",
                         body=harness.frame(health_pb2.HealthCheckRequest().SerializeToString()),
                         headers={"content-type": "application/grpc-web+proto"})
            resp = conn.getresponse()
            self.assertEqual(resp.getheader("transfer-encoding"), "chunked")
            first = resp.read1(64)  # the SERVING frame arrives before the call ends
            server.terminate()
            body = first + resp.read()
            conn.close()
            frames = harness.grpc_web_frames(body)
            statuses = [health_pb2.HealthCheckResponse.FromString(p).status
                        for f, p in frames if f == 0]
            self.assertEqual(statuses, [health_pb2.HealthCheckResponse.SERVING,
                                        health_pb2.HealthCheckResponse.NOT_SERVING])
            self.assertEqual(frames[-1][0], 0x80)
            self.assertEqual(harness.parse_trailer_block(frames[-1][1])["grpc-status"], "14")
            self.assertEqual(server.wait(timeout=15), 0)
