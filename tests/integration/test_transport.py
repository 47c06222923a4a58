"""Native gRPC over HTTP/2 against the real binary: GetConfiguration, unknown methods, deadlines,
request budgets, compression, request ids (API.md section 1, CONF section 4, OPS-011)."""
import unittest

import grpc

import harness
import health_pb2
from xmtp.backend.v1 import backend_pb2

GET_CONFIGURATION = "/xmtp.backend.v1.ConfigurationService/GetConfiguration"
CHECK = "/grpc.health.v1.Health/Check"


class TransportTest(harness.ServerTestCase):
    config = harness.minimal_config(
        '[limits]\nmax_query_limit = 700\n[mls]\ncommit_log_enabled = false\n'
        '[chains]\n"eip155:1" = "https://rpc.example.invalid/secret-path"\n')

    # verifies: CONF-010, CONF-069, CONF-070, CONF-011
    def test_get_configuration_publishes_enforced_values(self):
        with self.server.channel() as ch:
            resp, call = harness.unary(ch, GET_CONFIGURATION,
                                       backend_pb2.GetConfigurationRequest(),
                                       backend_pb2.GetConfigurationResponse)
        self.assertEqual(resp.identifier, "test.local.xmtp")
        self.assertTrue(resp.server_version)
        self.assertEqual(resp.limits.max_query_limit, 700)
        self.assertEqual(resp.limits.default_query_limit, 100)
        self.assertEqual(resp.limits.max_request_bytes, 26214400)
        self.assertTrue(resp.mls.HasField("commit_log_enabled"))
        self.assertFalse(resp.mls.commit_log_enabled)
        self.assertEqual(list(resp.smart_contract_wallet_chains), ["eip155:1"])
        self.assertFalse(resp.auth.enabled)
        self.assertFalse(resp.HasField("attachments"))
        self.assertNotIn(b"secret-path", resp.SerializeToString())
        # CONF-012: the same bytes every time.
        with self.server.channel() as ch:
            again, _ = harness.unary(ch, GET_CONFIGURATION, backend_pb2.GetConfigurationRequest(),
                                     backend_pb2.GetConfigurationResponse)
        self.assertEqual(again.SerializeToString(), resp.SerializeToString())

    def test_unknown_method_is_unimplemented(self):
        with self.server.channel() as ch:
            for path in ["/xmtp.backend.v1.QueryService/Nope", "/no.such.Service/Method"]:
                with self.assertRaises(grpc.RpcError) as ctx:
                    harness.raw_unary(ch, path, b"")
                self.assertEqual(ctx.exception.code(), grpc.StatusCode.UNIMPLEMENTED, path)

    # verifies: OPS-011 — a fresh server-generated UUID on every response, caller's id ignored.
    def test_request_id_is_fresh_and_ignores_caller_value(self):
        ids = set()
        with self.server.channel() as ch:
            for _ in range(3):
                _, call = harness.unary(ch, GET_CONFIGURATION,
                                        backend_pb2.GetConfigurationRequest(),
                                        backend_pb2.GetConfigurationResponse,
                                        metadata=[("x-request-id", "caller-chosen-id")])
                rid = dict(call.initial_metadata())["x-request-id"]
                self.assertRegex(rid, harness.UUID_RE)
                ids.add(rid)
            with self.assertRaises(grpc.RpcError) as ctx:
                harness.raw_unary(ch, "/no.such.Service/Method", b"")
            err_ids = [v for k, v in ctx.exception.initial_metadata() if k == "x-request-id"]
            self.assertEqual(len(err_ids), 1)
            self.assertRegex(err_ids[0], harness.UUID_RE)
        self.assertEqual(len(ids), 3)
        self.assertNotIn("caller-chosen-id", ids)

    # verifies: API-282 — a request over max_request_bytes fails OUT_OF_RANGE, and the server
    # keeps serving on the same channel.
    def test_26_mib_request_is_out_of_range(self):
        options = [("grpc.max_send_message_length", 64 << 20)]
        with grpc.insecure_channel(self.server.target, options=options) as ch:
            body = b"\x0a" + b"\x00" * (26 * 1024 * 1024)
            with self.assertRaises(grpc.RpcError) as ctx:
                harness.raw_unary(ch, GET_CONFIGURATION, body, timeout=30)
            self.assertEqual(ctx.exception.code(), grpc.StatusCode.OUT_OF_RANGE)
            resp, _ = harness.unary(ch, CHECK, health_pb2.HealthCheckRequest(),
                                    health_pb2.HealthCheckResponse)
            self.assertEqual(resp.status, health_pb2.HealthCheckResponse.SERVING)

    # API.md 1.4: a declared compression encoding fails UNIMPLEMENTED.
    def test_compressed_request_is_unimplemented(self):
        with self.server.channel() as ch:
            with self.assertRaises(grpc.RpcError) as ctx:
                harness.unary(ch, GET_CONFIGURATION, backend_pb2.GetConfigurationRequest(),
                              backend_pb2.GetConfigurationResponse,
                              compression=grpc.Compression.Gzip)
            self.assertEqual(ctx.exception.code(), grpc.StatusCode.UNIMPLEMENTED)

    # DECISIONS.md: an undecodable body is INVALID_ARGUMENT "request is malformed".
    def test_undecodable_body_is_invalid_argument(self):
        with self.server.channel() as ch:
            with self.assertRaises(grpc.RpcError) as ctx:
                harness.raw_unary(ch, CHECK, b"\xff\xff\xff")
            self.assertEqual(ctx.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
            self.assertEqual(ctx.exception.details(), "request is malformed")

    def test_many_concurrent_calls_on_one_connection(self):
        with self.server.channel() as ch:
            method = ch.unary_unary(GET_CONFIGURATION,
                                    request_serializer=lambda m: m.SerializeToString(),
                                    response_deserializer=backend_pb2.GetConfigurationResponse.FromString)
            futures = [method.future(backend_pb2.GetConfigurationRequest(), timeout=20)
                       for _ in range(300)]
            for f in futures:
                self.assertEqual(f.result().identifier, "test.local.xmtp")


class DeadlineTest(harness.ServerTestCase):
    binary = harness.TEST_BINARY

    def test_grpc_timeout_is_honoured(self):
        with self.server.channel() as ch:
            with self.assertRaises(grpc.RpcError) as ctx:
                harness.unary(ch, "/xb.test.v1.TestService/Sleep",
                              health_pb2.HealthCheckRequest(service="5000"),
                              health_pb2.HealthCheckResponse, timeout=0.3)
            self.assertEqual(ctx.exception.code(), grpc.StatusCode.DEADLINE_EXCEEDED)
            resp, _ = harness.unary(ch, "/xb.test.v1.TestService/Sleep",
                                    health_pb2.HealthCheckRequest(service="10"),
                                    health_pb2.HealthCheckResponse, timeout=5)
            self.assertEqual(resp.status, health_pb2.HealthCheckResponse.SERVING)


if __name__ == "__main__":
    unittest.main()
