"""gRPC-Web over HTTP/1.1 with plain http.client: binary and text modes, the trailer frame, CORS
(API.md 1.1-1.2, API-285, OPS-011, OPS-012)."""
import base64
import http.client
import unittest

import harness
import health_pb2
from xmtp.backend.v1 import backend_pb2

GET_CONFIGURATION = "/xmtp.backend.v1.ConfigurationService/GetConfiguration"
EXPOSED = {"grpc-status", "grpc-message", "grpc-status-details-bin", "x-request-id"}


class GrpcWebTest(harness.ServerTestCase):
    def post(self, path, body, content_type="application/grpc-web+proto", headers=None):
        conn = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=10)
        all_headers = {"content-type": content_type, "x-grpc-web": "1",
                       "origin": "https://app.example"}
        all_headers.update(headers or {})
        conn.request("POST", path, body=body, headers=all_headers)
        resp = conn.getresponse()
        data = resp.read()
        conn.close()
        return resp, data

    def check_cors(self, resp):
        self.assertEqual(resp.getheader("access-control-allow-origin"), "*")
        exposed = {h.strip() for h in resp.getheader("access-control-expose-headers").split(",")}
        self.assertTrue(EXPOSED <= exposed, exposed)

    # verifies: API-285
    def test_binary_mode_unary_has_message_then_trailer_frame(self):
        resp, data = self.post(GET_CONFIGURATION,
                               harness.frame(backend_pb2.GetConfigurationRequest().SerializeToString()))
        self.assertEqual(resp.status, 200)
        self.assertTrue(resp.getheader("content-type").startswith("application/grpc-web"))
        self.assertRegex(resp.getheader("x-request-id"), harness.UUID_RE)
        self.check_cors(resp)
        frames = harness.grpc_web_frames(data)
        self.assertEqual([f for f, _ in frames], [0x00, 0x80])
        config = backend_pb2.GetConfigurationResponse.FromString(frames[0][1])
        self.assertEqual(config.identifier, "test.local.xmtp")
        self.assertEqual(harness.parse_trailer_block(frames[1][1])["grpc-status"], "0")

    def test_text_mode_is_base64_both_ways(self):
        body = base64.b64encode(harness.frame(health_pb2.HealthCheckRequest().SerializeToString()))
        resp, data = self.post("/grpc.health.v1.Health/Check", body,
                               content_type="application/grpc-web-text")
        self.assertEqual(resp.status, 200)
        self.assertTrue(resp.getheader("content-type").startswith("application/grpc-web-text"))
        # The body may be several padded base64 segments back to back: decode group by group.
        text = data.decode()
        self.assertEqual(len(text) % 4, 0)
        decoded = b"".join(base64.b64decode(text[i:i + 4]) for i in range(0, len(text), 4))
        frames = harness.grpc_web_frames(decoded)
        self.assertEqual([f for f, _ in frames], [0x00, 0x80])
        status = health_pb2.HealthCheckResponse.FromString(frames[0][1])
        self.assertEqual(status.status, health_pb2.HealthCheckResponse.SERVING)
        self.assertEqual(harness.parse_trailer_block(frames[1][1])["grpc-status"], "0")

    def test_error_status_travels_in_the_trailer_frame(self):
        resp, data = self.post("/xmtp.backend.v1.QueryService/Nope", harness.frame(b""))
        self.assertEqual(resp.status, 200)
        self.check_cors(resp)
        frames = harness.grpc_web_frames(data)
        self.assertEqual(frames[-1][0], 0x80)
        trailers = harness.parse_trailer_block(frames[-1][1])
        self.assertEqual(trailers["grpc-status"], "12")  # UNIMPLEMENTED
        self.assertTrue(trailers.get("grpc-message"))

    def test_keep_alive_serves_several_requests_on_one_connection(self):
        conn = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=10)
        for _ in range(3):
            conn.request("POST", GET_CONFIGURATION,
                         body=harness.frame(b""),
                         headers={"content-type": "application/grpc-web+proto"})
            resp = conn.getresponse()
            frames = harness.grpc_web_frames(resp.read())
            self.assertEqual(harness.parse_trailer_block(frames[-1][1])["grpc-status"], "0")
        conn.close()

    # verifies: OPS-012 — a preflight naming traceparent/tracestate is accepted; also
    # authorization and x-grpc-web (API.md 1.2).
    def test_preflight_is_answered_with_requested_headers(self):
        conn = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=10)
        requested = "traceparent,tracestate,authorization,x-grpc-web,content-type"
        conn.request("OPTIONS", GET_CONFIGURATION, headers={
            "origin": "https://app.example",
            "access-control-request-method": "POST",
            "access-control-request-headers": requested,
        })
        resp = conn.getresponse()
        resp.read()
        conn.close()
        self.assertIn(resp.status, (200, 204))
        self.assertEqual(resp.getheader("access-control-allow-origin"), "*")
        allowed = {h.strip().lower()
                   for h in resp.getheader("access-control-allow-headers").split(",")}
        for h in requested.split(","):
            self.assertIn(h, allowed)
        self.assertIn("POST", resp.getheader("access-control-allow-methods"))
        exposed = {h.strip() for h in resp.getheader("access-control-expose-headers").split(",")}
        self.assertTrue(EXPOSED <= exposed)

    def test_request_over_budget_is_out_of_range(self):
        # A frame header declaring 26 MiB: refused before the body is read.
        body = b"\x00" + (26 * 1024 * 1024).to_bytes(4, "big") + b"\x0a" * 1024
        resp, data = self.post(GET_CONFIGURATION, body)
        frames = harness.grpc_web_frames(data)
        self.assertEqual(harness.parse_trailer_block(frames[-1][1])["grpc-status"], "11")


class GrpcWebOverHttp2Test(harness.ServerTestCase):
    """gRPC-Web over HTTP/2 (prior knowledge) with Debian's nghttp client."""

    def test_grpc_web_binary_over_h2_and_advertised_stream_limit(self):
        import shutil
        import subprocess
        import tempfile
        nghttp = shutil.which("nghttp")
        self.assertIsNotNone(nghttp, "nghttp (Debian package nghttp2-client) is required")
        with tempfile.NamedTemporaryFile(suffix=".bin") as body:
            body.write(harness.frame(health_pb2.HealthCheckRequest().SerializeToString()))
            body.flush()
            result = subprocess.run(
                [nghttp, "-nv", "-H", "content-type: application/grpc-web+proto",
                 "-d", body.name, "http://127.0.0.1:%d/grpc.health.v1.Health/Check" %
                 self.server.port], capture_output=True, text=True, timeout=20)
        out = result.stdout
        self.assertEqual(result.returncode, 0, out + result.stderr)
        self.assertIn("SETTINGS_MAX_CONCURRENT_STREAMS(0x03):100", out)
        self.assertIn("content-type: application/grpc-web+proto", out)
        self.assertIn("access-control-expose-headers", out)
        # The status travels in the body's trailer frame: one response HEADERS, no HTTP/2 trailers.
        self.assertEqual(out.count("recv HEADERS frame"), 1, out)
        self.assertNotIn("grpc-status:", out)


if __name__ == "__main__":
    unittest.main()
