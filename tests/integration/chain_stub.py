"""A local Ethereum JSON-RPC chain stub on 127.0.0.1 for smart-contract-wallet tests
(VALIDATION.md 5.9): eth_blockNumber, eth_getBlockByNumber and eth_call of the deployless ERC-6492
validator. Verdicts come from a table of (signer, hash, signature) the test declares valid; the
stub checks that every eth_call carries the universal validator bytecode and the ABI layout of
5.9.3. Modes: "ok", "revert" (a JSON-RPC error, as wallets that revert), "hang" (never answers
until released or stopped). `stop()` stops listening (an outage: connections are refused);
`listen()` serves again on the same port, with the same verdicts."""
import hashlib
import http.server
import json
import threading

VALIDATOR_SHA256 = "ee4f10dc27735f5f8fd686ddf765fe4f124a45dd339581347f53a1b0c8dfe24c"
VALIDATOR_BYTES = 1792
BLOCK_SECONDS = 12


class ChainStub:
    def __init__(self, head=1000, head_timestamp=1_700_000_000):
        self.head = head
        self.head_timestamp = head_timestamp
        self.valid = set()  # (signer 20 bytes, hash 32 bytes, signature bytes)
        self.mode = "ok"
        self.calls = {}  # method -> count
        self.bad_calls = []  # eth_call inputs that did not match the 5.9.3 layout
        self.lock = threading.Lock()
        self.release = threading.Event()
        stub = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                req = json.loads(body)
                with stub.lock:
                    stub.calls[req["method"]] = stub.calls.get(req["method"], 0) + 1
                    mode = stub.mode
                if mode == "hang":
                    stub.release.wait(30)
                    return
                reply = {"jsonrpc": "2.0", "id": req.get("id")}
                if mode == "revert":
                    reply["error"] = {"code": 3, "message": "execution reverted"}
                else:
                    reply["result"] = stub.answer(req["method"], req.get("params", []))
                data = json.dumps(reply).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.handler = Handler
        self.port = 0
        self.listen()
        self.url = "http://127.0.0.1:%d/rpc" % self.port

    def listen(self):
        """Serves on `port` (a free one the first time)."""
        self.release.clear()
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", self.port), self.handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def stop(self):
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()

    def count(self, method):
        with self.lock:
            return self.calls.get(method, 0)

    def block(self, number):
        if number > self.head:
            return None
        return {"number": hex(number),
                "timestamp": hex(self.head_timestamp - (self.head - number) * BLOCK_SECONDS)}

    def answer(self, method, params):
        if method == "eth_blockNumber":
            return hex(self.head)
        if method == "eth_getBlockByNumber":
            tag = params[0]
            return self.block(self.head if tag == "latest" else int(tag, 16))
        if method == "eth_call":
            data = bytes.fromhex(params[0]["data"][2:])
            verdict = self.verdict(data)
            return "0x01" if verdict else "0x00"
        raise ValueError(method)

    def verdict(self, data):
        code, args = data[:VALIDATOR_BYTES], data[VALIDATOR_BYTES:]
        ok = hashlib.sha256(code).hexdigest() == VALIDATOR_SHA256 and len(args) >= 128
        if ok:
            signer, digest = args[12:32], args[32:64]
            offset = int.from_bytes(args[64:96], "big")
            length = int.from_bytes(args[96:128], "big")
            sig = args[128:128 + length]
            padded = (length + 31) // 32 * 32
            ok = args[:12] == bytes(12) and offset == 0x60 and len(args) == 128 + padded
        if not ok:
            with self.lock:
                self.bad_calls.append(data)
            return False
        return (signer, digest, sig) in self.valid
