"""Several backend instances on one PostgreSQL primary + streaming replica, behind HAProxy as an
h2c gRPC balancer (issue 32, deliverable 1). Used by the cluster and fault suites and by bench/.

    with Cluster(instances=3) as cluster:
        ch = cluster.channel()              # clients talk only to the balancer
        cluster.instances[0].proc.kill()    # faults act on one instance
        cluster.balancer.wait_state("b0", "DOWN", 10)

The database is a fresh one on the cluster of tests/support/pg_cluster.sh (XB_PG_PRIMARY,
XB_PG_REPLICA). Each instance is the test build (harness.TEST_BINARY) started as the integration
suites start it. HAProxy (Debian's haproxy, 2.6) runs as a child process on a config generated into
a temp dir (`Balancer.config_text`, reproduced in docs/cluster.md):

- frontend: `bind 127.0.0.1:<free port> proto h2` (cleartext HTTP/2 only, as gRPC clients speak);
- backend: `proto h2` to each instance, so every gRPC call is one HTTP/2 stream that HAProxy
  balances on its own (round robin per call, not per client connection);
- health check: HAProxy 2.6 has no gRPC check, but its HTTP check can send a body over HTTP/2
  (`check-proto` follows the server's `proto h2`; an HTTP/2 check needs a `host` header, which
  becomes its :authority — without one HAProxy fails every check as "Socket error"). It POSTs
  /grpc.health.v1.Health/Check as gRPC-Web text (`application/grpc-web-text`: base64 frames, so
  the request and the expected reply are printable; our port serves gRPC-Web on either HTTP
  version) and expects the base64 of the HealthCheckResponse{SERVING} frame, `AAAAAAIIAQ==`.
  NOT_SERVING (a drain has begun), an UNAVAILABLE answer, a refused connection or a timeout all
  fail it; `fall 2` failed checks 500 ms apart take the instance out of rotation, `rise 2` bring
  it back.
- a call that could not reach a dead instance is retried on another (`retry-on conn-failure`,
  `option redispatch`); never a call the instance may have run (`empty-response` would retry a
  Publish that was stored but not answered, storing it twice). A call or stream cut by the fault
  ends with an error and the client decides (streams reconnect from their cursors).
"""
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time

import grpc

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))

import harness  # noqa: E402
import stream_client as S  # noqa: E402

HAPROXY = os.environ.get("XB_HAPROXY", "/usr/sbin/haproxy")
HAVE_PG = S.HAVE_PG
CHECK_INTERVAL_MS = 500
# gRPC-Web text: the empty HealthCheckRequest frame and the HealthCheckResponse{SERVING} frame
# (flag 0, length 2, field 1 = 1), each base64 on its own as the server writes them.
CHECK_REQUEST_B64 = "AAAAAAA="
SERVING_FRAME_B64 = "AAAAAAIIAQ=="


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _die_with_parent():
    """In the child before exec: SIGKILL when the test process dies (a ctest timeout kills the
    test, never its children), so no balancer outlives its test holding a port. Linux sends it
    when the thread that started the child ends: start a Cluster on a thread that outlives it."""
    import ctypes
    import signal
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def instance_config(database, extra="", server_extra=""):
    """One instance's config on `database` (primary + replica) plus `extra` TOML and
    `server_extra` keys in its [server] table."""
    return S.config(extra, database=database, replica=True, server_extra=server_extra)


class Balancer:
    """HAProxy in front of `backends` [(name, port)], a child process; `stop()` ends it."""

    def __init__(self, backends, workdir, proxy_protocol=False):
        self.workdir = workdir
        # send-proxy-v2 on each server line (server.proxy_protocol on the instances); the checks
        # send it too (check-send-proxy).
        self.server_options = " send-proxy-v2 check-send-proxy" if proxy_protocol else ""
        self.port = free_port()
        self.socket_path = os.path.join(workdir, "haproxy.sock")
        self.config_path = os.path.join(workdir, "haproxy.cfg")
        self.log_path = os.path.join(workdir, "haproxy.log")
        with open(self.config_path, "w") as f:
            f.write(self.config_text(backends))
        self.proc = None

    def config_text(self, backends):
        servers = "".join("    server %s 127.0.0.1:%d%s\n" % (name, port, self.server_options)
                          for name, port in backends)
        return (
            "global\n"
            "    log stderr format raw local0 notice\n"
            "    stats socket %(sock)s mode 600 level admin\n"
            "\n"
            "defaults\n"
            "    mode http\n"
            "    log global\n"
            "    timeout connect 2s\n"
            "    timeout check 2s\n"
            "    # Above streams.keepalive_interval_ms (30 s): an idle Subscribe is pinged first.\n"
            "    timeout client 120s\n"
            "    timeout server 120s\n"
            "    retries 3\n"
            "    option redispatch 1\n"
            "    # Only a call that never reached an instance: a Publish is not idempotent.\n"
            "    retry-on conn-failure\n"
            "\n"
            "frontend grpc\n"
            "    bind 127.0.0.1:%(port)d proto h2\n"
            "    default_backend xmtp\n"
            "\n"
            "backend xmtp\n"
            "    balance roundrobin\n"
            "    option httpchk\n"
            "    http-check send meth POST uri /grpc.health.v1.Health/Check ver HTTP/2 "
            "hdr host xmtp-backend hdr content-type application/grpc-web-text body \"%(req)s\"\n"
            "    http-check expect string %(serving)s\n"
            "    default-server proto h2 check inter %(inter)dms fall 2 rise 2\n"
            "%(servers)s"
        ) % {"sock": self.socket_path, "port": self.port, "req": CHECK_REQUEST_B64,
             "serving": SERVING_FRAME_B64, "inter": CHECK_INTERVAL_MS, "servers": servers}

    def start(self, timeout=20):
        check = subprocess.run([HAPROXY, "-c", "-q", "-f", self.config_path],
                               capture_output=True, text=True)
        if check.returncode != 0:
            raise AssertionError("haproxy refused its config: " + check.stdout + check.stderr)
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen([HAPROXY, "-f", self.config_path, "-db"],
                                     stdout=self.log, stderr=subprocess.STDOUT,
                                     preexec_fn=_die_with_parent)
        harness.wait_for(lambda: self.proc.poll() is not None or self._answers(), timeout,
                         "haproxy's stats socket")
        if self.proc.poll() is not None:
            raise AssertionError("haproxy exited: " + self.log_text())

    def _answers(self):
        try:
            self.command("show info")
            return True
        except OSError:
            return False

    def command(self, line):
        """One command on the stats socket (the runtime API); returns its answer."""
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(5)
            s.connect(self.socket_path)
            s.sendall(line.encode() + b"\n")
            chunks = []
            while True:
                data = s.recv(65536)
                if not data:
                    return b"".join(chunks).decode()
                chunks.append(data)

    def states(self):
        """{server name: status} of backend `xmtp` ("UP", "DOWN", "UP 1/2", ...)."""
        lines = self.command("show stat").splitlines()
        header = lines[0].lstrip("# ").split(",")
        out = {}
        for line in lines[1:]:
            row = dict(zip(header, line.split(",")))
            if row.get("pxname") == "xmtp" and row.get("svname") not in ("BACKEND", None):
                out[row["svname"]] = row["status"]
        return out

    def wait_state(self, name, status, timeout):
        """Waits until server `name` shows `status`; returns the seconds it took."""
        started = time.monotonic()
        harness.wait_for(lambda: self.states().get(name) == status, timeout,
                         "haproxy to show %s %s" % (name, status))
        return time.monotonic() - started

    def log_text(self):
        try:
            with open(self.log_path) as f:
                return f.read()
        except OSError:
            return ""

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        if getattr(self, "log", None):
            self.log.close()


class Cluster:
    """`instances` backends on one fresh database behind one Balancer. A context manager: on exit
    every process it started is stopped and the database dropped."""

    def __init__(self, instances=3, extra_config="", server_extra="", proxy_protocol=False):
        self.count = instances
        self.proxy_protocol = proxy_protocol  # HAProxy send-proxy-v2, server.proxy_protocol
        self.extra_config = extra_config
        self.server_extra = server_extra
        self.tmp = tempfile.TemporaryDirectory(prefix="xb-cluster-")
        self.database = None
        self.config = None
        self.instances = []
        self.retired = []  # instances replaced by restart(), checked and cleaned up by stop()
        self.balancer = None

    def __enter__(self):
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc):
        self.stop()

    def start(self):
        self.database = harness.create_pg_database()
        server_extra = self.server_extra + ("proxy_protocol = true\n" if self.proxy_protocol else "")
        self.config = instance_config(self.database, self.extra_config, server_extra)
        # One at a time: the first runs the migrations, the others find them done.
        for _ in range(self.count):
            server = harness.Server(config=self.config, binary=harness.TEST_BINARY)
            server.start()
            self.instances.append(server)
        self.balancer = Balancer([(self.name(i), s.port) for i, s in enumerate(self.instances)],
                                 self.tmp.name, self.proxy_protocol)
        self.balancer.start()
        for i in range(self.count):
            self.balancer.wait_state(self.name(i), "UP", 20)

    def restart(self, index):
        """Starts instance `index` again, as a supervisor would: same config, same ports (the
        balancer's server line names the port), once its process has ended. Returns the new
        Server; the old one is kept for stop()'s sanitizer check."""
        old = self.instances[index]
        if old.proc.poll() is None:
            raise AssertionError("instance %s still runs" % self.name(index))
        config = self.config.replace(
            '\nlisten = "127.0.0.1:0"', '\nlisten = "127.0.0.1:%d"' % old.port).replace(
            'metrics_listen = "127.0.0.1:0"', 'metrics_listen = "127.0.0.1:%d"' % old.metrics_port)
        self.retired.append(old)
        self.instances[index] = harness.Server(config=config, binary=harness.TEST_BINARY)
        self.instances[index].start()
        return self.instances[index]

    @staticmethod
    def name(index):
        return "b%d" % index

    @property
    def target(self):
        return "127.0.0.1:%d" % self.balancer.port

    def channel(self):
        """A channel to the balancer on its own connection."""
        return grpc.insecure_channel(self.target, options=[("grpc.use_local_subchannel_pool", 1)])

    def live(self):
        return [s for s in self.instances if s.proc.poll() is None]

    def stop(self):
        if self.balancer is not None:
            self.balancer.stop()
        problems = []
        for server in self.instances + self.retired:
            server.kill()
            server.tmp.cleanup()
            try:
                server.check_sanitizers()
            except AssertionError as e:
                problems.append(str(e))
        self.instances = []
        self.retired = []
        if self.database is not None:
            self.database.drop()
            self.database = None
        self.tmp.cleanup()
        if problems:
            raise AssertionError("\n".join(problems))


def main():
    """Starts a cluster and prints the balancer's address until interrupted (bench/)."""
    import argparse
    import signal
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instances", type=int, default=3)
    parser.add_argument("--extra-config", default="", help="TOML added to every instance")
    args = parser.parse_args()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    with Cluster(args.instances, args.extra_config) as cluster:
        print("balancer %s" % cluster.target, flush=True)
        for i, s in enumerate(cluster.instances):
            print("instance %s 127.0.0.1:%d metrics 127.0.0.1:%d pid %d" %
                  (cluster.name(i), s.port, s.metrics_port, s.proc.pid), flush=True)
        stop.wait()


if __name__ == "__main__":
    main()
