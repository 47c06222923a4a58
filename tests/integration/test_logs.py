"""The request completion log from outside the process (OPS-018, OPS-013, OPS-011, OPS-014)."""
import unittest

import grpc

import harness
import health_pb2
from xmtp.backend.v1 import backend_pb2

GET_CONFIGURATION = "/xmtp.backend.v1.ConfigurationService/GetConfiguration"
GET = "/xmtp.backend.v1.QueryService/Get"
INT64_MAX = (1 << 63) - 1
FIELDS = {"time", "level", "msg", "request_id", "identifier", "method", "duration_ms",
          "request_size_bytes", "response_size_bytes", "grpc_code"}


class CompletionLogTest(harness.ServerTestCase):
    def completions(self):
        return [r for r in self.server.log_records() if r.get("msg") == "request completed"]

    # verifies: OPS-018
    # verifies: OPS-013 — one line per non-health request with exactly its fields,
    # the deployment identifier, and the same request id the client got in x-request-id.
    def test_one_completion_line_per_request_with_its_fields(self):
        before = len(self.completions())
        with self.server.channel() as ch:
            resp, call = harness.unary(ch, GET_CONFIGURATION, backend_pb2.GetConfigurationRequest(),
                                       backend_pb2.GetConfigurationResponse)
            harness.unary(ch, "/grpc.health.v1.Health/Check", health_pb2.HealthCheckRequest(),
                          health_pb2.HealthCheckResponse)
        request_id = dict(call.initial_metadata())["x-request-id"]
        lines = harness.wait_for(
            lambda: [r for r in self.completions()[before:] if r["request_id"] == request_id],
            5, "the completion line")
        self.assertEqual(len(lines), 1)
        line = lines[0]
        self.assertEqual(set(line), FIELDS)
        self.assertEqual(line["identifier"], "test.local.xmtp")
        self.assertEqual(line["method"], GET_CONFIGURATION)
        self.assertEqual(line["grpc_code"], "OK")
        self.assertEqual(line["request_size_bytes"], 5)  # body bytes incl. the frame header
        self.assertEqual(line["response_size_bytes"], 5 + len(resp.SerializeToString()))
        self.assertGreaterEqual(line["duration_ms"], 0)
        # Health requests get no completion line.
        self.assertFalse([r for r in self.completions() if "Health" in r["method"]])

    # verifies: OPS-018 — method is the request path, for Get too, which is served but not in the
    # route table (its metric labels stay unknown, DECISIONS.md).
    def test_get_is_logged_under_its_path(self):
        with self.server.channel() as ch:
            with self.assertRaises(grpc.RpcError) as ctx:
                harness.unary(ch, GET, backend_pb2.GetRequest(sequence_id=INT64_MAX),
                              backend_pb2.ServerEnvelope)
        self.assertEqual(ctx.exception.code(), grpc.StatusCode.NOT_FOUND)
        request_id = dict(ctx.exception.initial_metadata())["x-request-id"]
        line = harness.wait_for(
            lambda: [r for r in self.completions() if r["request_id"] == request_id], 5, "line")[0]
        self.assertEqual(line["method"], GET)
        self.assertEqual(line["grpc_code"], "NotFound")

    # verifies: OPS-014 — a caller-chosen path never reaches the log; it is logged as unknown.
    def test_unknown_path_is_logged_as_unknown(self):
        with self.server.channel() as ch:
            with self.assertRaises(grpc.RpcError) as ctx:
                harness.raw_unary(ch, "/secret.Path.With.Inbox/abcdef0123", b"")
        request_id = dict(ctx.exception.initial_metadata())["x-request-id"]
        line = harness.wait_for(
            lambda: [r for r in self.completions() if r["request_id"] == request_id], 5, "line")[0]
        self.assertEqual(line["method"], "unknown")
        self.assertEqual(line["grpc_code"], "Unimplemented")
        self.assertFalse([l for l in self.server.lines if "secret.Path" in l or "abcdef0123" in l])


class RequestLoggerOffTest(harness.ServerTestCase):
    config = harness.minimal_config().replace("[server]\n", "[server]\nrequest_logger = false\n")

    def test_request_logger_false_suppresses_completion_lines(self):
        with self.server.channel() as ch:
            harness.unary(ch, GET_CONFIGURATION, backend_pb2.GetConfigurationRequest(),
                          backend_pb2.GetConfigurationResponse)
        # The drain log line proves the process flushed everything it wrote before it.
        self.server.terminate()
        self.server.wait(15)
        self.assertFalse([r for r in self.server.log_records() if r.get("msg") == "request completed"])
        self.assertTrue([r for r in self.server.log_records() if r.get("msg") == "stopped"])


if __name__ == "__main__":
    unittest.main()
