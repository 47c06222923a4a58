// Serves the bundled page (build.mjs) on 127.0.0.1, opens it in headless Chromium (Debian's
// `chromium`) over the DevTools protocol (node's `ws`), calls window.xmtpTest(apiUrl, run) and
// prints `RESULT ok <json>` or `RESULT error <text>`; the page's and its workers' console output is
// echoed, and a run longer than TIMEOUT_S ends `RESULT timeout`.
//
// Cross-view capture: between the page's console lines XB_CAPTURE_BEGIN and XB_CAPTURE_END every
// MlsApi/SendGroupMessages request is held back from the backend: its message (the gRPC-Web frame's
// payload) is written to CAPTURE_DIR/NNN.bin and the client is answered OK, so that the test can
// publish it through xmtp.backend.v1 instead.
//
//   node driver.mjs API_URL OUT_DIR CAPTURE_DIR [TIMEOUT_S]
import { spawn } from "node:child_process";
import { createServer } from "node:http";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { extname, join } from "node:path";
import WebSocket from "ws";

const [apiUrl, outDir, captureDir, timeoutS = "300"] = process.argv.slice(2);
const types = { ".js": "text/javascript", ".wasm": "application/wasm", ".html": "text/html" };

function servePage() {
  const server = createServer((req, res) => {
    let path = join(outDir, decodeURIComponent(new URL(req.url, "http://x").pathname));
    if (path.endsWith("/")) path += "index.html";
    if (!existsSync(path) && existsSync(path + ".js")) path += ".js";  // "./workers/client"
    if (!existsSync(path)) {
      res.writeHead(404);
      res.end();
      return;
    }
    res.writeHead(200, { "content-type": types[extname(path)] || "text/javascript" });
    res.end(readFileSync(path));
  });
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(server)));
}

function startChromium(profile) {
  const chrome = spawn("chromium", ["--headless=new", "--no-sandbox", "--disable-gpu",
    "--no-first-run", "--no-default-browser-check", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--disable-domain-reliability",
    "--remote-debugging-port=0", `--user-data-dir=${profile}`, "about:blank"],
    { stdio: ["ignore", "ignore", "pipe"], detached: true });  // its own process group
  const url = new Promise((resolve, reject) => {
    let text = "";
    chrome.stderr.on("data", (d) => {
      text += d;
      const m = text.match(/DevTools listening on (ws:\/\/\S+)/);
      if (m) resolve(m[1]);
    });
    chrome.on("exit", (code) => reject(new Error(`chromium exited ${code}: ${text}`)));
  });
  return { chrome, url };
}

// A gRPC-Web OK answer for a method whose response is google.protobuf.Empty.
function grpcWebOk() {
  const trailers = Buffer.from("grpc-status:0\r\ngrpc-message:\r\n");
  const head = Buffer.from([0x80, 0, 0, 0, 0]);
  head.writeUInt32BE(trailers.length, 1);
  return Buffer.concat([Buffer.from([0, 0, 0, 0, 0]), head, trailers]).toString("base64");
}

function requestBody(request) {
  const parts = (request.postDataEntries || []).map((e) => Buffer.from(e.bytes || "", "base64"));
  let body = Buffer.concat(parts);
  const type = Object.entries(request.headers)
    .find(([k]) => k.toLowerCase() === "content-type")?.[1] || "";
  if (type.includes("grpc-web-text")) body = Buffer.from(body.toString(), "base64");
  return body.subarray(5, 5 + body.readUInt32BE(1));  // the one request message
}

const server = await servePage();
const profile = mkdtempSync(join(tmpdir(), "xb-chromium-"));
const { chrome, url } = startChromium(profile);
const ws = new WebSocket(await url);
await new Promise((resolve) => ws.on("open", resolve));
let nextId = 1;
let capturing = false;
let captured = 0;
const pending = new Map();
const send = (method, params = {}, sessionId) => new Promise((resolve, reject) => {
  const id = nextId++;
  pending.set(id, { resolve, reject });
  ws.send(JSON.stringify({ id, method, params, sessionId }));
});

function onConsole(params) {
  const text = params.args.map((a) => a.value ?? a.description).join(" ");
  if (text === "XB_CAPTURE_BEGIN") capturing = true;
  if (text === "XB_CAPTURE_END") capturing = false;
  console.log("[console]", text);
}

// Every request of a session is paused (Fetch): held back and answered while capturing, else let
// through.
function onRequestPaused(params, sessionId) {
  const { requestId, request } = params;
  if (capturing && request.method === "POST" && request.url.endsWith("/SendGroupMessages")) {
    captured += 1;
    writeFileSync(join(captureDir, String(captured).padStart(3, "0") + ".bin"), requestBody(request));
    send("Fetch.fulfillRequest", { requestId, responseCode: 200, body: grpcWebOk(),
      responseHeaders: [{ name: "content-type", value: "application/grpc-web+proto" },
                        { name: "access-control-allow-origin", value: "*" },
                        { name: "access-control-expose-headers", value: "grpc-status,grpc-message" }] },
         sessionId).catch(() => {});
    return;
  }
  send("Fetch.continueRequest", { requestId }, sessionId).catch(() => {});
}

async function instrument(sessionId) {
  await send("Runtime.enable", {}, sessionId);
  await send("Fetch.enable", { patterns: [{ urlPattern: "*SendGroupMessages", requestStage: "Request" }] },
             sessionId).catch(() => {});
  await send("Target.setAutoAttach", { autoAttach: true, waitForDebuggerOnStart: true, flatten: true },
             sessionId);
  await send("Runtime.runIfWaitingForDebugger", {}, sessionId).catch(() => {});
}

ws.on("message", (raw) => {
  const msg = JSON.parse(raw);
  if (msg.id && pending.has(msg.id)) {
    const p = pending.get(msg.id);
    pending.delete(msg.id);
    if (msg.error) p.reject(new Error(JSON.stringify(msg.error)));
    else p.resolve(msg.result);
  } else if (msg.method === "Runtime.consoleAPICalled") {
    onConsole(msg.params);
  } else if (msg.method === "Runtime.exceptionThrown") {
    console.log("[exception]", msg.params.exceptionDetails.exception?.description);
  } else if (msg.method === "Fetch.requestPaused") {
    onRequestPaused(msg.params, msg.sessionId);
  } else if (msg.method === "Target.attachedToTarget") {
    instrument(msg.params.sessionId).catch(() => {});  // a worker
  }
});

// Chromium is asked to close (its helper processes go with it), and its whole process group is
// killed if it has not within 5 s; the profile directory is removed after that.
const finish = (line, code) => {
  console.log(line);
  server.close();
  const done = () => {
    try {
      process.kill(-chrome.pid, "SIGKILL");
    } catch {
      // the group is gone already
    }
    rmSync(profile, { recursive: true, force: true, maxRetries: 5 });
    process.exit(code);
  };
  chrome.once("exit", () => setTimeout(done, 200));
  send("Browser.close").catch(() => {});
  setTimeout(done, 5000);
};
setTimeout(() => finish("RESULT timeout", 2), Number(timeoutS) * 1000);
const { targetId } = await send("Target.createTarget", { url: "about:blank" });
const { sessionId } = await send("Target.attachToTarget", { targetId, flatten: true });
await instrument(sessionId);
await send("Page.enable", {}, sessionId);
await send("Page.navigate", { url: `http://127.0.0.1:${server.address().port}/` }, sessionId);
for (let i = 0; i < 300; i++) {
  const r = await send("Runtime.evaluate", { expression: "typeof window.xmtpTest", returnByValue: true },
                       sessionId);
  if (r.result.value === "function") break;
  await new Promise((resolve) => setTimeout(resolve, 100));
}
const run = String(Date.now());
const r = await send("Runtime.evaluate", {
  expression: `xmtpTest(${JSON.stringify(apiUrl)}, ${JSON.stringify(run)})`,
  awaitPromise: true, returnByValue: true }, sessionId);
if (r.exceptionDetails) {
  finish("RESULT error " + (r.exceptionDetails.exception?.description ||
                            JSON.stringify(r.exceptionDetails)), 1);
} else {
  finish("RESULT ok " + r.result.value, 0);
}
