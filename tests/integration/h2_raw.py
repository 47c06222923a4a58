"""A raw HTTP/2 gRPC client on python3-h2, for tests that need what grpcio will not do: many
concurrent streams with a receive window the test controls (a client that never credits data, one
that reads everything), resets, and a view of the frames the server sent."""
import socket
import struct
import time

import h2.config
import h2.connection
import h2.events
import h2.settings


def grpc_frame(message):
    return b"\x00" + struct.pack(">I", len(message)) + message


class Stream:
    def __init__(self, stream_id):
        self.id = stream_id
        self.headers = None
        self.trailers = None
        self.data = bytearray()
        self.reset_code = None
        self.ended = False

    @property
    def grpc_status(self):
        for source in (self.trailers, self.headers):
            if source and "grpc-status" in source:
                return int(source["grpc-status"])
        return None

    @property
    def grpc_message(self):
        for source in (self.trailers, self.headers):
            if source and "grpc-message" in source:
                return source["grpc-message"]
        return None


class Client:
    """One HTTP/2 connection. `window` is the initial stream window this client advertises;
    `credit` says whether received DATA is acknowledged (a client that does not credit stalls
    every response once the window is spent); `source`, a local address to connect from (any
    127.x.y.z: a client of its own)."""

    def __init__(self, port, window=65535, credit=True, connection_window=None, timeout=10,
                 source=None):
        self.sock = socket.create_connection(
            ("127.0.0.1", port), timeout=timeout,
            source_address=(source, 0) if source else None)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.conn = h2.connection.H2Connection(
            h2.config.H2Configuration(client_side=True, header_encoding="utf-8"))
        self.conn.local_settings = h2.settings.Settings(
            client=True, initial_values={h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: window})
        self.conn.initiate_connection()
        if connection_window is not None and connection_window > 65535:
            self.conn.increment_flow_control_window(connection_window - 65535)
        self.credit = credit
        self.streams = {}
        self.goaway = None
        self.closed = False
        self.flush()

    def flush(self):
        data = self.conn.data_to_send()
        if data:
            self.sock.sendall(data)

    def start(self, path, message, headers=()):
        """Sends one unary gRPC request (HEADERS + DATA with END_STREAM); returns its stream."""
        stream_id = self.conn.get_next_available_stream_id()
        self.conn.send_headers(stream_id, [
            (":method", "POST"), (":scheme", "http"), (":authority", "127.0.0.1"),
            (":path", path), ("content-type", "application/grpc"), ("te", "trailers"),
            *headers])
        self.conn.send_data(stream_id, grpc_frame(message), end_stream=True)
        self.streams[stream_id] = Stream(stream_id)
        self.flush()
        return self.streams[stream_id]

    def reset(self, stream, code=8):
        self.conn.reset_stream(stream.id, error_code=code)
        self.flush()

    def pump(self, timeout=1.0):
        """Reads and handles what arrives within `timeout`; False once the connection closed."""
        if self.closed:
            return False
        self.sock.settimeout(timeout)
        try:
            data = self.sock.recv(1 << 20)
        except socket.timeout:
            return True
        except OSError:
            self.closed = True
            return False
        if not data:
            self.closed = True
            return False
        for event in self.conn.receive_data(data):
            self._handle(event)
        self.flush()
        return True

    def _handle(self, event):
        stream = self.streams.get(getattr(event, "stream_id", None))
        if isinstance(event, h2.events.ResponseReceived) and stream:
            stream.headers = dict(event.headers)
            if "grpc-status" in stream.headers:
                stream.trailers = stream.headers
        elif isinstance(event, h2.events.DataReceived):
            if stream:
                stream.data += event.data
            if self.credit and event.flow_controlled_length:
                self.conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
        elif isinstance(event, h2.events.TrailersReceived) and stream:
            stream.trailers = dict(event.headers)
        elif isinstance(event, h2.events.StreamEnded) and stream:
            stream.ended = True
        elif isinstance(event, h2.events.StreamReset) and stream:
            stream.reset_code = event.error_code
            stream.ended = True
        elif isinstance(event, h2.events.ConnectionTerminated):
            self.goaway = event.error_code

    def run_until(self, predicate, timeout):
        """Pumps until predicate() holds or the connection closes; returns predicate()."""
        deadline = time.monotonic() + timeout
        while not predicate() and time.monotonic() < deadline:
            if not self.pump(min(0.2, max(0.01, deadline - time.monotonic()))):
                break
        return predicate()

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass
        self.closed = True
