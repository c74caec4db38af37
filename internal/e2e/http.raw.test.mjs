// Raw HTTP: the legacy HTTP+SSE transport (/sse, what Void speaks) driven
// over plain sockets, no SDK, so the assertions are on the bytes the built
// binary writes: the response heads, the endpoint event first, each answer
// as one `event: message` frame of compact JSON, `: ping` keep-alives, the
// POST /sse fallback and Void's probe, the error bodies, and what hanging
// up the stream leaves behind.

import assert from "node:assert/strict";
import { connect } from "node:net";
import { after, before, describe, it } from "node:test";

import { STEP_MS, SUITE_MS, eventually, exampleTemplate, expectedPrompt, startHTTP, within } from "./helpers.mjs";

const KEEPALIVE = "200ms";
const HEX32 = "[0-9a-f]{32}";

const initialize = (protocolVersion) => ({
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion, capabilities: {}, clientInfo: { name: "flowyprompt-e2e-raw-http", version: "0" } },
});
// Void's revision on /sse; a Streamable HTTP client's elsewhere.
const INITIALIZE = initialize("2024-11-05");
const INITIALIZE_STREAMABLE = initialize("2025-11-25");
const ACCEPT_BOTH = { Accept: "application/json, text/event-stream" };
const INITIALIZED = { jsonrpc: "2.0", method: "notifications/initialized" };

/** s with the characters a regular expression treats specially escaped. */
const reEscape = (s) => s.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");

/** The head's status line and headers (names lower-cased). */
function parseHead(text) {
  const [statusLine, ...lines] = text.split("\r\n");
  const headers = {};
  for (const l of lines) {
    const i = l.indexOf(":");
    headers[l.slice(0, i).toLowerCase()] = l.slice(i + 1).trim();
  }
  return { statusLine, headers };
}

/** A chunked body's bytes without the framing. */
function unchunk(buf) {
  const parts = [];
  for (let at = 0; ; ) {
    const eol = buf.indexOf("\r\n", at);
    assert.ok(eol >= 0, "chunk size line");
    const n = parseInt(buf.subarray(at, eol).toString("latin1"), 16);
    if (n === 0) return Buffer.concat(parts);
    parts.push(buf.subarray(eol + 2, eol + 2 + n));
    at = eol + 2 + n + 2;
  }
}

/**
 * One HTTP/1.1 exchange on a fresh connection: the request is written
 * byte for byte with Connection: close, and the answer read until the
 * server closes. Resolves to { statusLine, headers, body }.
 */
async function exchange(base, method, path, { body, headers = {} } = {}) {
  const { hostname, port, host } = new URL(base);
  const sock = connect({ host: hostname, port: Number(port) });
  const chunks = [];
  const closed = new Promise((res, rej) => {
    sock.on("data", (c) => chunks.push(c));
    sock.on("end", res);
    sock.on("error", rej);
  });
  let head = `${method} ${path} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n`;
  for (const [k, v] of Object.entries(headers)) head += `${k}: ${v}\r\n`;
  const payload = body === undefined ? Buffer.alloc(0) : Buffer.from(body, "utf8");
  if (body !== undefined) head += `Content-Type: application/json\r\nContent-Length: ${payload.length}\r\n`;
  sock.write(Buffer.concat([Buffer.from(head + "\r\n", "latin1"), payload]));
  try {
    await within(closed, STEP_MS, `${method} ${path}`);
  } finally {
    sock.destroy();
  }
  const raw = Buffer.concat(chunks);
  const end = raw.indexOf("\r\n\r\n");
  assert.ok(end >= 0, `no response head: ${JSON.stringify(raw.toString("utf8").slice(0, 300))}`);
  const res = parseHead(raw.subarray(0, end).toString("latin1"));
  let rest = raw.subarray(end + 4);
  if (res.headers["transfer-encoding"] === "chunked") rest = unchunk(rest);
  else if (res.headers["content-length"] !== undefined) {
    assert.equal(rest.length, Number(res.headers["content-length"]), "the body is as long as Content-Length says");
  }
  return { ...res, body: rest.toString("utf8") };
}

const post = (base, path, msg, headers) =>
  exchange(base, "POST", path, { body: typeof msg === "string" ? msg : JSON.stringify(msg), headers });

/** /healthz, parsed. */
async function health(base) {
  const res = await exchange(base, "GET", "/healthz");
  assert.equal(res.statusLine, "HTTP/1.1 200 OK", res.body);
  return JSON.parse(res.body);
}

/** path?query of an absolute URL. */
const pathOf = (url) => {
  const u = new URL(url);
  return u.pathname + u.search;
};

/** Asserts an answer of exactly 202 Accepted with an empty body. */
function assertAccepted(res, what) {
  assert.equal(res.statusLine, "HTTP/1.1 202 Accepted", `${what}: ${res.body}`);
  assert.equal(res.body, "", `${what}: no body`);
}

/**
 * Asserts an HTTP error answer: the status line, and a JSON-RPC error body
 * with id null, the JSON-RPC code and error.data's symbolic code with its
 * what and how (the codes are transport/internal/httpx's).
 */
function assertErrorBody(res, statusLine, rpcCode, dataCode, what) {
  assert.equal(res.statusLine, statusLine, `${what}: ${res.body}`);
  assert.equal(res.headers["content-type"], "application/json", what);
  const body = JSON.parse(res.body);
  assert.equal(body.jsonrpc, "2.0", what);
  assert.ok("id" in body && body.id === null, `${what}: id is null: ${res.body}`);
  assert.equal(body.result, undefined, what);
  assert.equal(body.error.code, rpcCode, `${what}: ${res.body}`);
  assert.equal(typeof body.error.message, "string", what);
  assert.equal(body.error.data.code, dataCode, `${what}: ${res.body}`);
  for (const k of ["what", "how"]) {
    assert.ok(typeof body.error.data[k] === "string" && body.error.data[k] !== "", `${what}: error.data.${k}`);
  }
}

/**
 * An open GET /sse on a raw socket. Its body is read as it arrives (a
 * chunked body is unframed first) and cut into frames, an event or a
 * comment each, ending in a blank line, kept exactly as written.
 */
class RawStream {
  constructor(base, path = "/sse") {
    const { hostname, port, host } = new URL(base);
    this.sock = connect({ host: hostname, port: Number(port) });
    this.raw = Buffer.alloc(0); // bytes not yet unframed
    this.body = Buffer.alloc(0); // the body's bytes not yet cut into frames
    this.head = undefined;
    this.frames = [];
    this.read = 0;
    this.waiters = [];
    this.closed = new Promise((res) => this.sock.once("close", res));
    this.sock.on("error", () => {}); // the test's assertions report what went wrong
    this.sock.on("data", (d) => {
      this.raw = Buffer.concat([this.raw, d]);
      this.pump();
    });
    this.sock.on("close", () => this.pump());
    this.sock.write(`GET ${path} HTTP/1.1\r\nHost: ${host}\r\nAccept: text/event-stream\r\n\r\n`);
  }

  pump() {
    if (this.head === undefined) {
      const end = this.raw.indexOf("\r\n\r\n");
      if (end >= 0) {
        this.head = parseHead(this.raw.subarray(0, end).toString("latin1"));
        this.raw = this.raw.subarray(end + 4);
      }
    }
    if (this.head !== undefined) {
      if (this.head.headers["transfer-encoding"] === "chunked") {
        // Whole chunks only: a chunk's size line, its bytes, CRLF.
        for (;;) {
          const eol = this.raw.indexOf("\r\n");
          if (eol < 0) break;
          const n = parseInt(this.raw.subarray(0, eol).toString("latin1"), 16);
          if (n === 0 || this.raw.length < eol + 2 + n + 2) break;
          this.body = Buffer.concat([this.body, this.raw.subarray(eol + 2, eol + 2 + n)]);
          this.raw = this.raw.subarray(eol + 2 + n + 2);
        }
      } else {
        this.body = Buffer.concat([this.body, this.raw]);
        this.raw = Buffer.alloc(0);
      }
      // A frame's data is one line, so a blank line only ever ends one.
      for (let end; (end = this.body.indexOf("\n\n")) >= 0; ) {
        this.frames.push(this.body.subarray(0, end + 2).toString("utf8"));
        this.body = this.body.subarray(end + 2);
      }
    }
    this.waiters = this.waiters.filter((w) => !w());
  }

  until(cond, label) {
    if (cond()) return Promise.resolve();
    return within(
      new Promise((res, rej) => {
        this.waiters.push(() => {
          if (cond()) {
            res();
            return true;
          }
          if (this.sock.destroyed) {
            rej(new Error(`${label}: the stream ended; unframed rest ${JSON.stringify(this.body.toString("utf8"))}`));
            return true;
          }
          return false;
        });
      }),
      STEP_MS,
      label,
    );
  }

  /** The response head: { statusLine, headers }. */
  async response() {
    await this.until(() => this.head !== undefined, "the stream's response head");
    return this.head;
  }

  /** The next frame, raw. */
  async next(label = "the next frame") {
    await this.until(() => this.frames.length > this.read, label);
    return this.frames[this.read++];
  }

  /** The next frame that is not a keep-alive, raw. */
  async nextMessage(label = "the next message") {
    for (;;) {
      const f = await this.next(label);
      if (!isPing(f)) return f;
    }
  }

  /** Hangs up and waits for the socket to close. */
  async hangUp() {
    this.sock.destroy();
    await this.closed;
  }
}

/**
 * The fields of one frame as an SSE client reads them, in whatever order
 * they come: { event, data, comment, dataLines }. Fails on a field no SSE
 * client knows, and on an id other than the empty one the server names
 * every event with (it only resets a client's last event id: the legacy
 * transport never resumes streams).
 */
function fields(frame, what) {
  assert.ok(frame.endsWith("\n\n"), `${what}: a frame ends with a blank line: ${JSON.stringify(frame)}`);
  const f = { event: undefined, data: undefined, comment: undefined, dataLines: 0 };
  for (const line of frame.slice(0, -2).split("\n")) {
    const i = line.indexOf(":");
    const name = i < 0 ? line : line.slice(0, i);
    const value = i < 0 ? "" : line.slice(i + 1).replace(/^ /, "");
    if (name === "") f.comment = value;
    else if (name === "event") f.event = value;
    else if (name === "data") {
      f.data = value;
      f.dataLines++;
    } else if (name === "id") assert.equal(value, "", `${what}: an event id the legacy transport would give: ${JSON.stringify(frame)}`);
    else assert.fail(`${what}: unknown SSE field ${JSON.stringify(name)} in ${JSON.stringify(frame)}`);
  }
  return f;
}

/** Whether a frame is a `: ping` keep-alive comment and nothing else. */
function isPing(frame) {
  const f = fields(frame, "a frame");
  return f.comment === "ping" && f.dataLines === 0 && f.event === undefined;
}

/**
 * Parses a frame that must be one event named event whose data is one
 * line, and returns the data.
 */
function eventData(frame, event, what) {
  const f = fields(frame, what);
  assert.equal(f.event, event, `${what}: not an ${event} event: ${JSON.stringify(frame)}`);
  assert.equal(f.dataLines, 1, `${what}: the data is one line: ${JSON.stringify(frame)}`);
  return f.data;
}

/**
 * Parses a frame that must be one `event: message` whose data is one line
 * of compact JSON, and returns the message.
 */
function message(frame, what) {
  const data = eventData(frame, "message", what);
  const msg = JSON.parse(data);
  assert.equal(data, JSON.stringify(msg), `${what}: the data is compact JSON`);
  return msg;
}

/**
 * Opens GET /sse and reads the endpoint event, which must be first and
 * name base's /sse/message with a 32-hex session id.
 */
async function openSession(base, endpointBase = base) {
  const stream = new RawStream(base);
  const first = await stream.next("the endpoint event");
  const m = new RegExp(`^(${reEscape(endpointBase)}/sse/message\\?session_id=(${HEX32}))$`).exec(
    eventData(first, "endpoint", "the first event"),
  );
  assert.ok(m, `first event ${JSON.stringify(first)}, want the endpoint under ${endpointBase}`);
  return { stream, endpoint: m[1], id: m[2], path: pathOf(m[1]) };
}

/** openSession, then initialize and notifications/initialized. */
async function initializedSession(base) {
  const s = await openSession(base);
  assertAccepted(await post(base, s.path, INITIALIZE), "initialize");
  assert.equal(message(await s.stream.nextMessage("initialize answer"), "initialize answer").id, 1);
  assertAccepted(await post(base, s.path, INITIALIZED), "notifications/initialized");
  return s;
}

/** Stops a server started by startHTTP: exit 0 after SIGTERM, stdout empty. */
async function stopServer(server) {
  const res = await server.stop();
  assert.deepEqual(res, { code: 0, signal: null }, `exit after SIGTERM; stderr:\n${server.stderr()}`);
  assert.equal(server.stdout(), "", "nothing on stdout over HTTP");
}

describe(`raw HTTP+SSE on /sse (--keepalive ${KEEPALIVE})`, { timeout: SUITE_MS }, () => {
  let server;
  const streams = [];
  const track = (s) => {
    streams.push(s.stream);
    return s;
  };

  before(async () => {
    server = await startHTTP(["--keepalive", KEEPALIVE]);
  });
  after(async () => {
    await Promise.all(streams.map((s) => s.hangUp()));
    if (server) await stopServer(server);
  });

  it("GET /sse, the endpoint event first, 202 for each post and the answers on the stream, keep-alives", async () => {
    const stream = new RawStream(server.base);
    streams.push(stream);
    const head = await stream.response();
    assert.equal(head.statusLine, "HTTP/1.1 200 OK");
    assert.equal(head.headers["content-type"], "text/event-stream");
    assert.equal(head.headers["cache-control"], "no-cache, no-transform");
    // A body of unknown length on a connection that stays open.
    assert.equal(head.headers["transfer-encoding"], "chunked");
    assert.notEqual(head.headers["connection"], "close");

    const first = await stream.next("the endpoint event");
    const want = `^${reEscape(server.base)}/sse/message\\?session_id=(${HEX32})$`;
    const m = new RegExp(want).exec(eventData(first, "endpoint", "the first event"));
    assert.ok(m, `first event ${JSON.stringify(first)}`);
    assert.match(server.base, /^http:\/\/127\.0\.0\.1:\d+$/);
    const path = `/sse/message?session_id=${m[1]}`;

    assertAccepted(await post(server.base, path, INITIALIZE), "initialize");
    const init = message(await stream.nextMessage("initialize answer"), "initialize answer");
    assert.equal(init.jsonrpc, "2.0");
    assert.equal(init.id, 1);
    assert.equal(init.result.protocolVersion, "2024-11-05");
    assert.equal(init.result.serverInfo.name, "flowyprompt");
    assertAccepted(await post(server.base, path, INITIALIZED), "notifications/initialized");

    const args = { diff: "-a\n+b\n" };
    assertAccepted(
      await post(server.base, path, {
        jsonrpc: "2.0",
        id: 2,
        method: "prompts/get",
        params: { name: "Commit_Message", arguments: args },
      }),
      "prompts/get",
    );
    // The next message is the prompt: initialize was answered once, and
    // the notification not at all.
    const got = message(await stream.nextMessage("prompts/get answer"), "prompts/get answer");
    assert.equal(got.id, 2);
    assert.equal(got.result.messages.length, 1);
    assert.equal(got.result.messages[0].content.text, expectedPrompt(exampleTemplate("Commit_Message"), args));

    // Nothing else is sent while the session is quiet but keep-alives.
    assert.ok(isPing(await stream.next("a keep-alive comment")), "a keep-alive comment");
    assert.ok(isPing(await stream.next("a second keep-alive comment")), "a second keep-alive comment");
  });

  for (const how of [
    { name: "session_id in the query", path: (id) => `/sse?session_id=${id}`, headers: () => ({}) },
    { name: "Mcp-Session-Id header", path: () => "/sse", headers: (id) => ({ "Mcp-Session-Id": id }) },
  ]) {
    it(`POST /sse with the stream's session (${how.name}) answers in the body, not on the stream`, async () => {
      const s = track(await initializedSession(server.base));
      const ping = { jsonrpc: "2.0", id: "direct", method: "ping" };
      const res = await post(server.base, how.path(s.id), ping, how.headers(s.id));
      assert.equal(res.statusLine, "HTTP/1.1 200 OK", res.body);
      assert.equal(res.headers["content-type"], "application/json");
      assert.equal(res.body, '{"jsonrpc":"2.0","id":"direct","result":{}}');
      // The next message on the stream answers the next posted request.
      assertAccepted(await post(server.base, s.path, { jsonrpc: "2.0", id: 3, method: "ping" }), "ping");
      assert.deepEqual(message(await s.stream.nextMessage("ping answer"), "ping answer"), {
        jsonrpc: "2.0",
        id: 3,
        result: {},
      });
    });
  }

  // Clients that try Streamable HTTP first fall back to GET /sse on a 404
  // or 405, and some on nothing else (Void falls back on any error).
  it("POST /sse with initialize is 405 with Allow: GET, which sends a Streamable HTTP probe back to GET /sse", async () => {
    const sessionsBefore = (await health(server.base)).sessions.total;
    const res = await post(server.base, "/sse", INITIALIZE_STREAMABLE, ACCEPT_BOTH);
    assertErrorBody(res, "HTTP/1.1 405 Method Not Allowed", -32000, "METHOD_NOT_ALLOWED", "initialize on POST /sse");
    assert.equal(res.headers.allow, "GET", "the 405 names the method that opens a session here");
    const why = JSON.parse(res.body).error.data.why;
    assert.ok(typeof why === "string" && why !== "", `initialize on POST /sse: error.data.why: ${res.body}`);
    assert.equal((await health(server.base)).sessions.total, sessionsBefore, "the probe left no session behind");
  });

  const errors = [
    {
      name: "unknown session_id",
      path: () => `/sse/message?session_id=${"0".repeat(32)}`,
      body: '{"jsonrpc":"2.0","id":1,"method":"ping"}',
      want: ["HTTP/1.1 404 Not Found", -32001, "SESSION_NOT_FOUND"],
    },
    {
      name: "missing session_id",
      path: () => "/sse/message",
      body: '{"jsonrpc":"2.0","id":1,"method":"ping"}',
      want: ["HTTP/1.1 400 Bad Request", -32000, "SESSION_REQUIRED"],
    },
    {
      name: "a body that is not JSON, on the endpoint",
      path: (s) => s.path,
      body: '{"jsonrpc":"2.0","id":1,"method":',
      want: ["HTTP/1.1 400 Bad Request", -32700, "PARSE_ERROR"],
    },
    {
      name: "a body that is not JSON, on POST /sse",
      path: () => "/sse",
      body: "nope",
      want: ["HTTP/1.1 400 Bad Request", -32700, "PARSE_ERROR"],
    },
    {
      name: "POST /sse naming an unknown session",
      path: () => `/sse?session_id=${"0".repeat(32)}`,
      body: '{"jsonrpc":"2.0","id":1,"method":"ping"}',
      want: ["HTTP/1.1 404 Not Found", -32001, "SESSION_NOT_FOUND"],
    },
  ];
  it("refuses bad posts with JSON-RPC error bodies: 404 unknown session, 400 no session or not JSON", async () => {
    const s = track(await initializedSession(server.base));
    for (const tc of errors) {
      assertErrorBody(await post(server.base, tc.path(s), tc.body), ...tc.want, tc.name);
    }
    // The session outlived every refused post.
    assertAccepted(await post(server.base, s.path, { jsonrpc: "2.0", id: 9, method: "ping" }), "ping after the errors");
    assert.equal(message(await s.stream.nextMessage("ping answer"), "ping answer").id, 9);
  });

  it("hanging up the stream ends the session: /healthz counts no SSE session, the endpoint answers 404", async () => {
    // Earlier tests' streams are hung up first, so the count is this one's.
    await Promise.all(streams.splice(0).map((st) => st.hangUp()));
    const s = await initializedSession(server.base);
    assert.equal((await health(server.base)).sessions.sse, 1, "the open stream is counted");
    await s.stream.hangUp();
    await eventually(async () => {
      const h = await health(server.base);
      assert.equal(h.status, "ok");
      assert.deepEqual(h.sessions, { total: 0, sse: 0, mcp: 0, listen: 0, clients: 0 });
    }, STEP_MS);
    assertErrorBody(
      await post(server.base, s.path, { jsonrpc: "2.0", id: 10, method: "ping" }),
      "HTTP/1.1 404 Not Found",
      -32001,
      "SESSION_NOT_FOUND",
      "a post to the endpoint of a hung-up stream",
    );
  });
});

describe("raw HTTP+SSE with --public-url", { timeout: SUITE_MS }, () => {
  it("names the public URL in the endpoint event; the local path takes the posts", async () => {
    const server = await startHTTP(["--public-url", "https://prompts.example.com"]);
    try {
      const s = await openSession(server.base, "https://prompts.example.com");
      try {
        assert.equal(s.path, `/sse/message?session_id=${s.id}`);
        assertAccepted(await post(server.base, s.path, INITIALIZE), "initialize via the local path");
        assert.equal(message(await s.stream.nextMessage("initialize answer"), "initialize answer").id, 1);
      } finally {
        await s.stream.hangUp();
      }
    } finally {
      await stopServer(server);
    }
  });
});

describe("raw HTTP+SSE with --keepalive 0", { timeout: SUITE_MS }, () => {
  it("an open stream that carries nothing outlives --idle-timeout; a /mcp session without one expires", async () => {
    const server = await startHTTP(["--keepalive", "0", "--idle-timeout", "300ms"]);
    try {
      const s = await initializedSession(server.base);
      try {
        // Each round opens a /mcp session after the SSE session was last
        // used, and waits for it to expire: the pass of the server's idle
        // sweep that takes it found the SSE session idle at least as long,
        // so three rounds are three idle timeouts survived.
        for (let round = 1; round <= 3; round++) {
          const res = await post(server.base, "/mcp", INITIALIZE_STREAMABLE, ACCEPT_BOTH);
          assert.equal(res.statusLine, "HTTP/1.1 200 OK", res.body);
          assert.match(res.headers["mcp-session-id"] ?? "", new RegExp(`^${HEX32}$`));
          await eventually(async () => {
            assert.equal((await health(server.base)).sessions.mcp, 0, `round ${round}: the /mcp session expired`);
          }, STEP_MS);
          assert.equal((await health(server.base)).sessions.sse, 1, `round ${round}: the SSE session is still there`);
          assertAccepted(
            await post(server.base, s.path, { jsonrpc: "2.0", id: 100 + round, method: "ping" }),
            `round ${round}: ping`,
          );
          // No keep-alive comments: the answer is the next frame.
          assert.deepEqual(message(await s.stream.next(`round ${round}: ping answer`), `round ${round}: ping answer`), {
            jsonrpc: "2.0",
            id: 100 + round,
            result: {},
          });
        }
      } finally {
        await s.stream.hangUp();
      }
    } finally {
      await stopServer(server);
    }
  });
});
