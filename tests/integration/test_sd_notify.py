"""systemd's notify protocol (deploy/systemd/xmtp-backend.service, Type=notify) against a test
listener: a unix datagram socket standing where systemd's would be. READY=1 comes only once health
answers SERVING; STOPPING=1 (with EXTEND_TIMEOUT_USEC) comes when SIGTERM begins the drain, while
the process still runs; without NOTIFY_SOCKET nothing is sent and nothing breaks."""
import os
import queue
import re
import socket
import tempfile
import threading
import time
import unittest

import grpc

import harness
import health_pb2

CHECK = "/grpc.health.v1.Health/Check"
SLEEP = "/xb.test.v1.TestService/Sleep"


class NotifyListener:
    """Receives every datagram sent to `address` (a path, or '@name' for the abstract namespace)
    and, for each, calls `on_message(text)` at once on its own thread."""

    def __init__(self, address, on_message=None):
        self.address = address
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind("\0" + address[1:] if address.startswith("@") else address)
        self.messages = queue.Queue()
        self.on_message = on_message
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        while True:
            try:
                data = self.sock.recv(4096)
            except OSError:
                return
            text = data.decode()
            seen = self.on_message(text) if self.on_message else None
            self.messages.put((text, seen))

    def next(self, timeout):
        return self.messages.get(timeout=timeout)

    def close(self):
        self.sock.shutdown(socket.SHUT_RDWR)
        self.sock.close()


def fields(text):
    return dict(line.split("=", 1) for line in text.split("\n") if line)


def health_status(port):
    with grpc.insecure_channel("127.0.0.1:%d" % port) as ch:
        resp, _ = harness.unary(ch, CHECK, health_pb2.HealthCheckRequest(),
                                health_pb2.HealthCheckResponse, timeout=5)
    return resp.status


class SdNotifyTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="xb-notify-")

    def tearDown(self):
        self.tmp.cleanup()

    def server(self, notify_socket, config=None, binary=None):
        env = dict(os.environ)
        env.pop("NOTIFY_SOCKET", None)
        if notify_socket is not None:
            env["NOTIFY_SOCKET"] = notify_socket
        return harness.Server(config=config, binary=binary, env=env)

    def on_message(self, text):
        """At the moment a datagram arrives: READY=1 -> the health status through the port its
        STATUS names; STOPPING=1 -> whether the process is still running."""
        values = fields(text)
        if values.get("READY") == "1":
            self.port = int(re.fullmatch(r"serving on [0-9.]+:(\d+)", values["STATUS"]).group(1))
            return health_status(self.port)
        if values.get("STOPPING") == "1":
            return self.proc.poll() is None
        return None

    # verifies: OPS-005 — systemd hears READY=1 only once the port answers health SERVING.
    # verifies: OPS-008 — STOPPING=1 extends systemd's stop timeout to the drain deadline + 5 s.
    def test_ready_after_serving_and_stopping_at_sigterm(self):
        path = os.path.join(self.tmp.name, "notify")
        listener = NotifyListener(path, self.on_message)
        config = harness.minimal_config().replace(
            "[server]\n", "[server]\nmax_drain_duration_ms = 3000\n")
        server = self.server(path, config=config, binary=harness.TEST_BINARY)
        try:
            server.spawn()
            self.proc = server.proc
            ready, status_then = listener.next(timeout=20)
            self.assertEqual(fields(ready)["READY"], "1", ready)
            self.assertEqual(status_then, health_pb2.HealthCheckResponse.SERVING)
            # A unary call in flight holds the drain open, so the process is surely running when
            # STOPPING=1 arrives.
            results = {}
            call = threading.Thread(target=self.sleep_call, args=(self.port, results))
            call.start()
            harness.wait_for(lambda: server.metrics_port, 10, "the metrics port")
            harness.wait_for(lambda: self.in_flight(server) >= 1, 10, "the call in flight")
            server.terminate()
            stopping, running_then = listener.next(timeout=10)
            values = fields(stopping)
            self.assertEqual(values["STOPPING"], "1", stopping)
            self.assertEqual(values["EXTEND_TIMEOUT_USEC"], str((3000 + 5000) * 1000))
            self.assertTrue(running_then, "STOPPING=1 arrived after the process exited")
            self.assertEqual(server.wait(timeout=15), 0)
            call.join(10)
            self.assertEqual(results.get("status"), health_pb2.HealthCheckResponse.SERVING)
            self.assertTrue(listener.messages.empty(), "unexpected: %r" % listener.messages.queue)
        finally:
            server.kill()
            server.tmp.cleanup()
            listener.close()
        server.check_sanitizers()

    def test_abstract_namespace_socket(self):
        name = "@xb-notify-test-%d-%d" % (os.getpid(), time.monotonic_ns())
        listener = NotifyListener(name)
        with self.server(name) as server:
            ready, _ = listener.next(timeout=20)
            self.assertEqual(fields(ready)["READY"], "1")
            self.assertEqual(fields(ready)["STATUS"], "serving on 127.0.0.1:%d" % server.port)
            server.terminate()
            self.assertEqual(server.wait(timeout=10), 0)
            stopping, _ = listener.next(timeout=5)
            self.assertEqual(fields(stopping)["STOPPING"], "1")
        listener.close()

    def test_without_notify_socket_nothing_is_sent(self):
        path = os.path.join(self.tmp.name, "notify")
        listener = NotifyListener(path)
        with self.server(None) as server:
            self.assertEqual(health_status(server.port), health_pb2.HealthCheckResponse.SERVING)
            server.terminate()
            self.assertEqual(server.wait(timeout=10), 0)
        # Whatever the process sent is in the socket's queue by the time it has exited.
        time.sleep(0.2)
        self.assertTrue(listener.messages.empty(), "unexpected: %r" % listener.messages.queue)
        listener.close()

    def test_a_notify_socket_nobody_listens_on_is_logged_not_fatal(self):
        path = os.path.join(self.tmp.name, "nobody")
        with self.server(path) as server:
            self.assertEqual(health_status(server.port), health_pb2.HealthCheckResponse.SERVING)
            server.terminate()
            self.assertEqual(server.wait(timeout=10), 0)
            records = server.log_records()
        failed = [r for r in records if r.get("msg") == "systemd notification failed"]
        self.assertEqual(len(failed), 2, records)  # READY=1, then STOPPING=1
        self.assertNotIn(path, "".join(server.lines))

    @staticmethod
    def sleep_call(port, results):
        with grpc.insecure_channel("127.0.0.1:%d" % port) as ch:
            resp, _ = harness.unary(ch, SLEEP, health_pb2.HealthCheckRequest(service="1500"),
                                    health_pb2.HealthCheckResponse, timeout=30)
        results["status"] = resp.status

    @staticmethod
    def in_flight(server):
        import urllib.request
        text = urllib.request.urlopen(
            "http://127.0.0.1:%d/metrics" % server.metrics_port, timeout=5).read().decode()
        return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
                   if line.startswith("grpc_server_in_flight{") and
                   'grpc_service="unknown"' in line)


if __name__ == "__main__":
    unittest.main()
