"""A test OTLP/HTTP receiver on 127.0.0.1: accepts POST /v1/traces (ExportTraceServiceRequest)
and POST /v1/logs (ExportLogsServiceRequest) application/x-protobuf bodies, decodes them with the
classes generated from proto/opentelemetry (the real OTLP field numbers) and keeps every span, log
record and raw body.

keep_alive=True answers HTTP/1.1 and keeps connections open (as collectors do); `connections`
counts the connections accepted, and drop_connections() closes the open ones, as a collector's
idle timeout would."""
import http.server
import socket
import threading

from opentelemetry.proto.collector.logs.v1 import logs_service_pb2
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2


class Receiver:
    def __init__(self, keep_alive=False):
        self.bodies = []      # raw request bodies, traces and logs
        self.requests = []    # decoded ExportTraceServiceRequest
        self.log_requests = []  # decoded ExportLogsServiceRequest
        self.paths = []
        self.connections = 0  # accepted so far
        self._open = set()    # sockets of open connections
        self._cond = threading.Condition()
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1" if keep_alive else "HTTP/1.0"

            def setup(self):
                super().setup()
                with receiver._cond:
                    receiver.connections += 1
                    receiver._open.add(self.connection)

            def finish(self):
                with receiver._cond:
                    receiver._open.discard(self.connection)
                super().finish()

            def do_POST(self):
                length = int(self.headers.get("content-length", "0"))
                body = self.rfile.read(length)
                logs = self.path.endswith("/v1/logs")
                if logs:
                    decoded = logs_service_pb2.ExportLogsServiceRequest.FromString(body)
                    reply = logs_service_pb2.ExportLogsServiceResponse().SerializeToString()
                else:
                    decoded = trace_service_pb2.ExportTraceServiceRequest.FromString(body)
                    reply = trace_service_pb2.ExportTraceServiceResponse().SerializeToString()
                with receiver._cond:
                    receiver.bodies.append(body)
                    (receiver.log_requests if logs else receiver.requests).append(decoded)
                    receiver.paths.append((self.path, self.headers.get("content-type")))
                    receiver._cond.notify_all()
                self.send_response(200)
                self.send_header("content-type", "application/x-protobuf")
                self.send_header("content-length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def endpoint(self):
        return "http://127.0.0.1:%d" % self.port

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()

    def drop_connections(self):
        """Closes every open connection from this side (a collector's idle timeout)."""
        with self._cond:
            for sock in list(self._open):
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def spans(self):
        """[(resource attributes dict, span)] of everything received so far."""
        with self._cond:
            return self._spans_locked()

    def log_records(self):
        """[(resource attributes dict, log record)] of everything received so far."""
        with self._cond:
            return self._log_records_locked()

    def _log_records_locked(self):
        return _items(self.log_requests, "resource_logs", "scope_logs", "log_records")

    def wait_logs(self, predicate, timeout, what):
        """Waits until predicate(log records) is truthy; returns it."""
        return self._wait(self._log_records_locked, predicate, timeout, what)

    def wait_spans(self, predicate, timeout, what):
        """Waits (on arrivals, with a deadline) until predicate(spans) is truthy; returns it."""
        return self._wait(self._spans_locked, predicate, timeout, what)

    def _wait(self, items_locked, predicate, timeout, what):
        import time
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                value = predicate([item for _, item in items_locked()])
                if value:
                    return value
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError("timed out waiting for " + what)
                self._cond.wait(left)

    def _spans_locked(self):
        return _items(self.requests, "resource_spans", "scope_spans", "spans")


def _items(requests, resource_field, scope_field, item_field):
    """[(resource attributes dict, item)] of decoded export requests: spans and log records are
    nested the same way (resource, then scope, then items) under different field names."""
    out = []
    for req in requests:
        for resource in getattr(req, resource_field):
            attrs = {kv.key: kv.value.string_value for kv in resource.resource.attributes}
            for scope in getattr(resource, scope_field):
                for item in getattr(scope, item_field):
                    out.append((attrs, item))
    return out
