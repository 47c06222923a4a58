"""The optional [server.tls] extension (DECISIONS.md, Native TLS): TLS with ALPN h2 and http/1.1 on
the one port — native gRPC over h2 (grpcio) and gRPC-Web over HTTPS/1.1 (http.client). The
certificate is made by OpenSSL's command line at test time."""
import http.client
import os
import ssl
import subprocess
import tempfile
import unittest

import grpc

import harness
import health_pb2
from xmtp.backend.v1 import backend_pb2


class TlsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.certdir = tempfile.TemporaryDirectory(prefix="xb-tls-")
        cls.cert = os.path.join(cls.certdir.name, "cert.pem")
        cls.key = os.path.join(cls.certdir.name, "key.pem")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                        "ec_paramgen_curve:P-256", "-nodes", "-days", "1", "-subj", "/CN=localhost",
                        "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
                        "-keyout", cls.key, "-out", cls.cert],
                       check=True, capture_output=True)
        config = harness.minimal_config().replace(
            "[telemetry]", '[server.tls]\ncert_file = "%s"\nkey_file = "%s"\n[telemetry]'
            % (cls.cert, cls.key))
        cls.server = harness.Server(config=config)
        cls.server.start()

    @classmethod
    def tearDownClass(cls):
        cls.server.kill()
        cls.server.tmp.cleanup()
        cls.certdir.cleanup()

    def test_native_grpc_over_tls_h2(self):
        with open(self.cert, "rb") as f:
            creds = grpc.ssl_channel_credentials(root_certificates=f.read())
        with grpc.secure_channel("localhost:%d" % self.server.port, creds) as ch:
            resp, call = harness.unary(ch, "/grpc.health.v1.Health/Check",
                                       health_pb2.HealthCheckRequest(),
                                       health_pb2.HealthCheckResponse)
        self.assertEqual(resp.status, health_pb2.HealthCheckResponse.SERVING)
        self.assertRegex(dict(call.initial_metadata())["x-request-id"], harness.UUID_RE)

    def test_grpc_web_over_https_1_1(self):
        context = ssl.create_default_context(cafile=self.cert)
        context.set_alpn_protocols(["http/1.1"])
        conn = http.client.HTTPSConnection("localhost", self.server.port, context=context,
                                           timeout=10)
        conn.request("POST", "/xmtp.backend.v1.ConfigurationService/GetConfiguration",
                     body=harness.frame(b""), headers={"content-type": "application/grpc-web+proto"})
        resp = conn.getresponse()
        frames = harness.grpc_web_frames(resp.read())
        conn.close()
        self.assertEqual([f for f, _ in frames], [0x00, 0x80])
        config = backend_pb2.GetConfigurationResponse.FromString(frames[0][1])
        self.assertEqual(config.identifier, "test.local.xmtp")

    def test_plaintext_client_gets_no_service(self):
        with grpc.insecure_channel(self.server.target) as ch:
            with self.assertRaises(grpc.RpcError) as ctx:
                harness.unary(ch, "/grpc.health.v1.Health/Check", health_pb2.HealthCheckRequest(),
                              health_pb2.HealthCheckResponse, timeout=3)
            self.assertIn(ctx.exception.code(),
                          (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED))

    def test_unloadable_certificate_refuses_start_naming_the_key(self):
        data = harness.private_data_dir(self)
        config = harness.minimal_config().replace("{data}", data).replace(
            "[telemetry]", '[server.tls]\ncert_file = "/nonexistent/SECRETVALUE123"\n'
            'key_file = "%s"\n[telemetry]' % self.key)
        result = harness.run_binary(["--config", config])
        self.assertNotEqual(result.returncode, 0)
        self.assertIn("server.tls.cert_file", result.stderr)
        self.assertNotIn("SECRETVALUE123", result.stderr)


if __name__ == "__main__":
    unittest.main()
