"""Shutdown as a client sees it (OPS-007, OPS-008), with the test build's slow handler
(xmtp-backend-testing; never in the shipped binary)."""
import threading
import time
import unittest

import grpc

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
