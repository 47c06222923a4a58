"""grpc.health.v1 on the gRPC port, with a real grpcio client (OPS-004, OPS-005, OPS-007)."""
import queue
import threading
import unittest

import grpc

import harness
import health_pb2
from xmtp.backend.v1 import backend_pb2

CHECK = "/grpc.health.v1.Health/Check"
LIST = "/grpc.health.v1.Health/List"
WATCH = "/grpc.health.v1.Health/Watch"


class HealthTest(harness.ServerTestCase):
    # verifies: OPS-004 — one status for "" and every served xmtp.backend.v1 service.
    def test_check_reports_serving_for_empty_and_service_names(self):
        with self.server.channel() as ch:
            for name in ["", "xmtp.backend.v1.ConfigurationService"]:
                resp, _ = harness.unary(ch, CHECK, health_pb2.HealthCheckRequest(service=name),
                                        health_pb2.HealthCheckResponse)
                self.assertEqual(resp.status, health_pb2.HealthCheckResponse.SERVING, name)

    def test_check_of_unknown_service_is_not_found(self):
        with self.server.channel() as ch:
            with self.assertRaises(grpc.RpcError) as ctx:
                harness.unary(ch, CHECK, health_pb2.HealthCheckRequest(service="no.such.Service"),
                              health_pb2.HealthCheckResponse)
            self.assertEqual(ctx.exception.code(), grpc.StatusCode.NOT_FOUND)

    # verifies: OPS-004
    def test_list_has_one_status_for_every_name(self):
        with self.server.channel() as ch:
            resp, _ = harness.unary(ch, LIST, health_pb2.HealthListRequest(),
                                    health_pb2.HealthListResponse)
        self.assertIn("", resp.statuses)
        self.assertIn("xmtp.backend.v1.ConfigurationService", resp.statuses)
        for name, status in resp.statuses.items():
            self.assertTrue(name == "" or name.startswith("xmtp.backend.v1."), name)
            self.assertEqual(status.status, health_pb2.HealthCheckResponse.SERVING, name)

    def test_health_needs_no_credential_and_carries_request_id(self):
        with self.server.channel() as ch:
            _, call = harness.unary(ch, CHECK, health_pb2.HealthCheckRequest(),
                                    health_pb2.HealthCheckResponse)
        headers = dict(call.initial_metadata())
        self.assertRegex(headers["x-request-id"], harness.UUID_RE)

    def test_watch_of_unknown_service_says_service_unknown(self):
        with self.server.channel() as ch:
            stream = ch.unary_stream(WATCH, request_serializer=lambda m: m.SerializeToString(),
                                     response_deserializer=health_pb2.HealthCheckResponse.FromString)
            it = stream(health_pb2.HealthCheckRequest(service="nope"), timeout=5)
            first = next(it)
            self.assertEqual(first.status, health_pb2.HealthCheckResponse.SERVICE_UNKNOWN)
            it.cancel()


class WatchDrainTest(unittest.TestCase):
    # verifies: OPS-007 — Watch sees SERVING, then NOT_SERVING when SIGTERM begins the drain, and
    # the stream ends UNAVAILABLE; the process exits.
    def test_watch_sees_serving_then_not_serving_on_sigterm(self):
        with harness.Server() as server:
            ch = server.channel()
            stream = ch.unary_stream(WATCH, request_serializer=lambda m: m.SerializeToString(),
                                     response_deserializer=health_pb2.HealthCheckResponse.FromString)
            it = stream(health_pb2.HealthCheckRequest(service=""), timeout=30)
            seen = queue.Queue()

            def consume():
                try:
                    for resp in it:
                        seen.put(resp.status)
                    seen.put("end-ok")
                except grpc.RpcError as e:
                    seen.put(e.code())

            threading.Thread(target=consume, daemon=True).start()
            self.assertEqual(seen.get(timeout=10), health_pb2.HealthCheckResponse.SERVING)
            server.terminate()
            self.assertEqual(seen.get(timeout=10), health_pb2.HealthCheckResponse.NOT_SERVING)
            self.assertEqual(seen.get(timeout=10), grpc.StatusCode.UNAVAILABLE)
            self.assertEqual(server.wait(timeout=15), 0)
            ch.close()


if __name__ == "__main__":
    unittest.main()
