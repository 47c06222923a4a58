"""Test harness: starts the real xmtp-backend binary on 127.0.0.1 with ephemeral ports and talks to
it with real clients (python3-grpcio from Debian, http.client for gRPC-Web).

Environment (set by ctest): XB_BINARY, XB_TEST_BINARY (test-hook build), PYTHONPATH including the
generated *_pb2 modules.
"""
import json
import os
import re
import signal
import struct
import subprocess
import tempfile
import threading
import time
import unittest
import urllib.request

import grpc

BINARY = os.environ.get("XB_BINARY", "build/src/xmtp-backend")
TEST_BINARY = os.environ.get("XB_TEST_BINARY", "build/src/xmtp-backend-testing")

UUID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")


def minimal_config(extra=""):
    return (
        '[server]\nidentifier = "test.local.xmtp"\nlisten = "127.0.0.1:0"\nlog_format = "json"\n'
        '[telemetry]\nmetrics_listen = "127.0.0.1:0"\n'
        '[database]\nurl = "sqlite://{data}/xmtp.db"\n' + extra
    )


class Server:
    """One running backend process. Use as a context manager; it is killed on exit."""

    def __init__(self, config=None, binary=None, extra_args=(), env=None, startup_timeout=20):
        self.tmp = tempfile.TemporaryDirectory(prefix="xb-it-")
        text = (config if config is not None else minimal_config()).replace("{data}", self.tmp.name)
        self.binary = binary or BINARY
        self.args = [self.binary, "--config", text, *extra_args]
        self.env = dict(os.environ if env is None else env)
        self.startup_timeout = startup_timeout
        self.proc = None
        self.port = None
        self.metrics_port = None
        self.lines = []  # stdout lines (JSON log)
        self.stderr_text = ""
        self._ready = threading.Event()
        self._lock = threading.Lock()

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.kill()
        self.tmp.cleanup()
        self.check_sanitizers()

    def check_sanitizers(self):
        """A sanitizer build of the server reports to stderr; any report fails the test."""
        for word in ("AddressSanitizer", "ThreadSanitizer", "UndefinedBehaviorSanitizer",
                     "LeakSanitizer", "runtime error:"):
            if word in self.stderr_text:
                raise AssertionError("the server reported a sanitizer finding:\n" +
                                     self.stderr_text[-4000:])

    def spawn(self):
        """Starts the process without waiting for it to serve."""
        self.proc = subprocess.Popen(self.args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     env=self.env, text=True)
        threading.Thread(target=self._read_stdout, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()

    def wait_serving(self, timeout):
        """True once the server reported serving (or exited) within `timeout` seconds."""
        return self._ready.wait(timeout)

    def start(self):
        self.spawn()
        if not self._ready.wait(self.startup_timeout):
            self.kill()
            raise AssertionError("server did not report serving; stderr: " + self.stderr_text)
        if self.port is None:
            raise AssertionError("server exited during startup; stderr: " + self.stderr_text)

    def _read_stdout(self):
        for line in self.proc.stdout:
            with self._lock:
                self.lines.append(line)
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if record.get("msg") == "metrics listening":
                self.metrics_port = int(record["address"].rsplit(":", 1)[1])
            if record.get("msg") == "serving":
                self.port = int(record["address"].rsplit(":", 1)[1])
                self._ready.set()
        self._ready.set()

    def _read_stderr(self):
        for line in self.proc.stderr:
            self.stderr_text += line

    def log_records(self):
        with self._lock:
            out = []
            for line in self.lines:
                try:
                    out.append(json.loads(line))
                except ValueError:
                    pass
            return out

    @property
    def target(self):
        return "127.0.0.1:%d" % self.port

    def channel(self):
        return grpc.insecure_channel(self.target)

    def terminate(self):
        self.proc.send_signal(signal.SIGTERM)

    def wait(self, timeout):
        return self.proc.wait(timeout=timeout)

    def kill(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)


def private_data_dir(test):
    """A fresh data directory for one test's config (`{data}`), removed when the test ends: a
    shared path would carry one run's database into the next (and its migrations)."""
    d = tempfile.TemporaryDirectory(prefix="xb-data-")
    test.addCleanup(d.cleanup)
    return d.name


def run_binary(args, env=None, timeout=20):
    """Runs the binary to completion (for startup refusals and --check-config)."""
    return subprocess.run([BINARY, *args], capture_output=True, text=True, timeout=timeout,
                          env=dict(os.environ if env is None else env))


def unary(channel, path, request, response_type, timeout=10, metadata=None, compression=None):
    """Calls a unary method by path; returns (response, call) or raises grpc.RpcError."""
    method = channel.unary_unary(path, request_serializer=lambda m: m.SerializeToString(),
                                 response_deserializer=response_type.FromString)
    return method.with_call(request, timeout=timeout, metadata=metadata, compression=compression)


def raw_unary(channel, path, body, timeout=10):
    """Sends raw request bytes (no protobuf encoding on our side)."""
    method = channel.unary_unary(path, request_serializer=lambda b: b,
                                 response_deserializer=lambda b: b)
    return method.with_call(body, timeout=timeout)


def grpc_web_frames(body):
    """Splits a gRPC-Web response body into [(flag, payload)]."""
    frames = []
    i = 0
    while i < len(body):
        flag, length = struct.unpack(">BI", body[i:i + 5])
        frames.append((flag, body[i + 5:i + 5 + length]))
        i += 5 + length
    if i != len(body):
        raise AssertionError("truncated gRPC-Web body")
    return frames


def frame(payload, flag=0):
    return struct.pack(">BI", flag, len(payload)) + payload


def parse_trailer_block(payload):
    out = {}
    for line in payload.decode().split("\r\n"):
        if line:
            name, value = line.split(":", 1)
            out[name.strip().lower()] = value.strip()
    return out


def scrape(server, timeout=10):
    """The server's /metrics exposition, as text."""
    return urllib.request.urlopen("http://127.0.0.1:%d/metrics" % server.metrics_port,
                                  timeout=timeout).read().decode()


def metric(server, name, labels=""):
    """The value of the series `name{labels}` (labels as written, e.g. 'reason="x"'); 0 when
    absent."""
    prefix = name + ("{%s}" % labels if labels else "") + " "
    for line in scrape(server).splitlines():
        if line.startswith(prefix):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def wait_for(predicate, timeout, what):
    """Waits for an event the test cannot be told about directly (a process exit, a scrape)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError("timed out waiting for " + what)


class ServerTestCase(unittest.TestCase):
    """A test case with one shared server for its tests."""
    config = None
    binary = None

    @classmethod
    def setUpClass(cls):
        cls.server = Server(config=cls.config, binary=cls.binary)
        cls.server.start()

    @classmethod
    def tearDownClass(cls):
        cls.server.kill()
        cls.server.tmp.cleanup()
        cls.server.check_sanitizers()


class PgDatabase:
    """A fresh database on the test cluster (XB_PG_PRIMARY / XB_PG_REPLICA, started by
    scripts/test with tests/support/pg_cluster.sh)."""

    def __init__(self):
        base_primary = os.environ["XB_PG_PRIMARY"]
        base_replica = os.environ.get("XB_PG_REPLICA", base_primary)
        self.name = "t_" + os.urandom(6).hex()
        self.admin = base_primary
        subprocess.run(["psql", "-q", "-v", "ON_ERROR_STOP=1", base_primary, "-c",
                        "CREATE DATABASE %s" % self.name], check=True, capture_output=True)
        self.primary = base_primary.rsplit("/", 1)[0] + "/" + self.name
        self.replica = base_replica.rsplit("/", 1)[0] + "/" + self.name

    def drop(self):
        subprocess.run(["psql", "-q", self.admin, "-c",
                        "DROP DATABASE IF EXISTS %s WITH (FORCE)" % self.name],
                       capture_output=True)


def create_pg_database():
    return PgDatabase()


class PgServerTestCase(ServerTestCase):
    """A shared server on a fresh PostgreSQL database with the streaming replica configured."""

    @classmethod
    def setUpClass(cls):
        cls.database = create_pg_database()
        cls.config = minimal_config().replace(
            'url = "sqlite://{data}/xmtp.db"',
            'url = "%s"\nreplica_url = "%s"' % (cls.database.primary, cls.database.replica))
        super().setUpClass()

    @classmethod
    def tearDownClass(cls):
        super().tearDownClass()
        cls.database.drop()
