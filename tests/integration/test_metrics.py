"""The metrics listener from outside the process: Prometheus text exposition, request families
with route-table labels, promtool (OPS-016, OPS-017, OPS-005 readiness gauge)."""
import shutil
import subprocess
import unittest
import urllib.error
import urllib.request

import grpc

import harness
import health_pb2
from xmtp.backend.v1 import backend_pb2


class MetricsTest(harness.ServerTestCase):
    def scrape(self):
        return harness.scrape(self.server)

    def series(self, text, name):
        return [l for l in text.splitlines() if l.startswith(name + "{") or l.startswith(name + " ")]

    # verifies: OPS-016, OPS-017
    def test_request_families_count_by_route_labels(self):
        with self.server.channel() as ch:
            for _ in range(3):
                harness.unary(ch, "/xmtp.backend.v1.ConfigurationService/GetConfiguration",
                              backend_pb2.GetConfigurationRequest(),
                              backend_pb2.GetConfigurationResponse)
            with self.assertRaises(grpc.RpcError):
                harness.raw_unary(ch, "/attacker.chosen.Path/With-Secret", b"")
            harness.unary(ch, "/grpc.health.v1.Health/Check", health_pb2.HealthCheckRequest(),
                          health_pb2.HealthCheckResponse)
        text = self.scrape()
        labels = ('grpc_service="xmtp.backend.v1.ConfigurationService",'
                  'grpc_method="GetConfiguration",grpc_type="unary"')
        started = [l for l in self.series(text, "grpc_server_started_total") if labels in l]
        self.assertEqual(len(started), 1, text)
        self.assertGreaterEqual(float(started[0].rsplit(" ", 1)[1]), 3)
        handled = [l for l in self.series(text, "grpc_server_handled_total")
                   if labels in l and 'grpc_code="OK"' in l]
        self.assertEqual(len(handled), 1)
        unknown = [l for l in self.series(text, "grpc_server_handled_total")
                   if 'grpc_service="unknown"' in l and 'grpc_code="Unimplemented"' in l]
        self.assertEqual(len(unknown), 1)
        self.assertNotIn("attacker", text)
        self.assertNotIn("Secret", text)
        # Health requests are not counted by the request families.
        self.assertNotIn('grpc_service="grpc.health.v1.Health"',
                         "\n".join(self.series(text, "grpc_server_started_total")))
        self.assertTrue(self.series(text, "grpc_server_handling_seconds_bucket"))
        self.assertTrue(self.series(text, "grpc_server_request_bytes_total"))
        self.assertTrue(self.series(text, "grpc_server_response_bytes_total"))

    # verifies: OPS-005 — xmtp_backend_ready is 1 exactly while SERVING.
    def test_ready_gauge_and_build_info(self):
        text = self.scrape()
        self.assertIn("xmtp_backend_ready 1", text)
        self.assertEqual(len(self.series(text, "xmtp_backend_info")), 1)

    def test_promtool_accepts_the_exposition(self):
        promtool = shutil.which("promtool")
        self.assertIsNotNone(promtool, "promtool (Debian package prometheus) is required")
        result = subprocess.run([promtool, "check", "metrics"], input=self.scrape(),
                                capture_output=True, text=True, timeout=30)
        # promtool exits 1 for lint warnings as well as errors; only errors are failures here.
        problems = [l for l in (result.stdout + result.stderr).splitlines()
                    if l.strip() and "error" in l.lower()]
        self.assertEqual(problems, [], result.stdout + result.stderr)

    def test_other_paths_are_not_found(self):
        with self.assertRaises(urllib.error.HTTPError) as ctx:
            urllib.request.urlopen("http://127.0.0.1:%d/other" % self.server.metrics_port,
                                   timeout=5)
        self.assertEqual(ctx.exception.code, 404)


if __name__ == "__main__":
    unittest.main()
