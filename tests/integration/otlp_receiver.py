"""Test OTLP receivers on 127.0.0.1, decoding what they get with the classes generated from
proto/opentelemetry (the real OTLP field numbers) and keeping every span, log record and raw body.

Receiver(protocol="grpc") (the backend's default, telemetry.otlp_protocol): a grpc.server with a
generic handler for opentelemetry.proto.collector.trace.v1.TraceService/Export and
logs.v1.LogsService/Export; it answers OK, or aborts every call with `status` (e.g.
grpc.StatusCode.UNAVAILABLE) after keeping what it got. `peers` holds each call's client address:
one connection kept from call to call shows as one peer.

Receiver(protocol="http/protobuf"): accepts POST /v1/traces (ExportTraceServiceRequest) and
POST /v1/logs (ExportLogsServiceRequest) application/x-protobuf bodies. keep_alive=True answers
HTTP/1.1 and keeps connections open (as collectors do); `connections` counts the connections
accepted, and drop_connections() closes the open ones, as a collector's idle timeout would."""
import concurrent.futures
import http.server
import socket
import threading

import grpc

from opentelemetry.proto.collector.logs.v1 import logs_service_pb2
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

TRACE_SERVICE = "opentelemetry.proto.collector.trace.v1.TraceService"
LOGS_SERVICE = "opentelemetry.proto.collector.logs.v1.LogsService"
TRACE_PATH = "/%s/Export" % TRACE_SERVICE  # the gRPC method paths
LOGS_PATH = "/%s/Export" % LOGS_SERVICE


def Receiver(protocol="grpc", **kwargs):
    """A receiver of the backend's default protocol (gRPC), or of OTLP/HTTP."""
    if protocol == "grpc":
        return GrpcReceiver(**kwargs)
    assert protocol == "http/protobuf", protocol
    return HttpReceiver(**kwargs)


class _Store:
    """What a receiver got, and the waits on it (shared by both protocols)."""

    def __init__(self):
        self.bodies = []      # raw request bodies (messages), traces and logs
        self.requests = []    # decoded ExportTraceServiceRequest
        self.log_requests = []  # decoded ExportLogsServiceRequest
        self.paths = []       # HTTP: (path, content-type); gRPC: the method path
        self._cond = threading.Condition()

    def _keep(self, body, logs, path):
        if logs:
            decoded = logs_service_pb2.ExportLogsServiceRequest.FromString(body)
        else:
            decoded = trace_service_pb2.ExportTraceServiceRequest.FromString(body)
        with self._cond:
            self.bodies.append(body)
            (self.log_requests if logs else self.requests).append(decoded)
            self.paths.append(path)
            self._cond.notify_all()

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


class HttpReceiver(_Store):
    def __init__(self, keep_alive=False):
        super().__init__()
        self.connections = 0  # accepted so far
        self._open = set()    # sockets of open connections
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
                receiver._keep(body, logs, (self.path, self.headers.get("content-type")))
                if logs:
                    reply = logs_service_pb2.ExportLogsServiceResponse().SerializeToString()
                else:
                    reply = trace_service_pb2.ExportTraceServiceResponse().SerializeToString()
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


class GrpcReceiver(_Store):
    def __init__(self, status=None):
        super().__init__()
        self.peers = []  # each call's client address ("ipv4:127.0.0.1:PORT")
        receiver = self

        def handler(logs, path):
            def export(body, context):
                receiver._keep(body, logs, path)
                with receiver._cond:
                    receiver.peers.append(context.peer())
                if status is not None:
                    context.abort(status, "the test receiver refuses")
                if logs:
                    return logs_service_pb2.ExportLogsServiceResponse().SerializeToString()
                return trace_service_pb2.ExportTraceServiceResponse().SerializeToString()
            # Raw bytes in and out: the body is kept as sent, then decoded by _keep.
            return grpc.unary_unary_rpc_method_handler(export)

        self.server = grpc.server(concurrent.futures.ThreadPoolExecutor(max_workers=4))
        self.server.add_generic_rpc_handlers((
            grpc.method_handlers_generic_handler(
                TRACE_SERVICE, {"Export": handler(False, TRACE_PATH)}),
            grpc.method_handlers_generic_handler(
                LOGS_SERVICE, {"Export": handler(True, LOGS_PATH)}),
        ))
        self.port = self.server.add_insecure_port("127.0.0.1:0")

    @property
    def endpoint(self):
        return "http://127.0.0.1:%d" % self.port

    def __enter__(self):
        self.server.start()
        return self

    def __exit__(self, *exc):
        self.server.stop(None)


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
