// The official TypeScript SDK client against `flowyprompt serve --transport
// http`, over both HTTP transports: SSEClientTransport on /sse (what Void
// uses) and StreamableHTTPClientTransport on /mcp (what MCP Inspector and
// modern clients use). Each runs the checks of the stdio SDK test (the
// shared suite in sdk-helpers.mjs), plus what only HTTP has: session ids,
// DELETE, list_changed reaching every session, the Host check, the token,
// and SIGTERM.

import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { SSEClientTransport } from "@modelcontextprotocol/sdk/client/sse.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  PromptListChangedNotificationSchema,
  ToolListChangedNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";

import {
  STEP_MS,
  SUITE_MS,
  TOOL_NAMES,
  WATCH_MS,
  exampleTemplate,
  expectedPrompt,
  rejection,
  startHTTP,
  tempDir,
  within,
} from "./helpers.mjs";
import { sdkSuite } from "./sdk-helpers.mjs";

const opts = { timeout: STEP_MS };

const TRANSPORTS = [
  { name: "SSEClientTransport on /sse", make: (base, init) => new SSEClientTransport(new URL(`${base}/sse`), init) },
  {
    name: "StreamableHTTPClientTransport on /mcp",
    make: (base, init) => new StreamableHTTPClientTransport(new URL(`${base}/mcp`), init),
  },
];

async function connect(base, transport, name = "flowyprompt-e2e-http") {
  const t = transport.make(base);
  const client = new Client({ name, version: "0.0.0" }, { capabilities: {} });
  await within(client.connect(t, opts), STEP_MS, `connect over ${transport.name}`);
  return { client, t };
}

for (const transport of TRANSPORTS) {
  sdkSuite(`TypeScript SDK client, ${transport.name} (embedded examples)`, async () => {
    const server = await startHTTP();
    let session;
    try {
      session = await connect(server.base, transport);
    } catch (err) {
      await server.stop().catch(() => {});
      throw err;
    }
    return {
      client: session.client,
      async stop() {
        await within(session.client.close(), STEP_MS, "client.close").catch(() => {});
        const res = await server.stop();
        if (process.env.FLOWYPROMPT_E2E_VERBOSE) process.stderr.write(`server stderr tail:\n${server.stderr()}\n`);
        assert.deepEqual(res, { code: 0, signal: null }, `exit after SIGTERM; stderr:\n${server.stderr()}`);
        assert.equal(server.stdout(), "", "nothing on stdout over HTTP");
      },
    };
  });
}

describe("HTTP transports: sessions, list_changed, security, shutdown", { timeout: SUITE_MS }, () => {
  it("connects the way Void does: Streamable HTTP on the /sse URL fails, SSE on the same URL works", async () => {
    // Void's mcpChannel.ts: one Client; StreamableHTTPClientTransport(url)
    // first, and on any error SSEClientTransport(url) with the same client;
    // then tools/list, and a tool call's content[0].text.
    const server = await startHTTP();
    try {
      const url = new URL(`${server.base}/sse`);
      const client = new Client({ name: "flowyprompt-client", version: "0.1.0" });
      let via;
      try {
        await within(client.connect(new StreamableHTTPClientTransport(url)), STEP_MS, "Streamable HTTP probe");
        via = "http";
      } catch {
        await within(client.connect(new SSEClientTransport(url)), STEP_MS, "SSE fallback");
        via = "sse";
      }
      assert.equal(via, "sse", "the Streamable HTTP probe on /sse must fail so that Void falls back to SSE");
      const { tools } = await client.listTools();
      assert.deepEqual(tools.map((x) => x.name).sort(), [...TOOL_NAMES].sort());
      const res = await client.callTool({
        name: "flowyprompt_render_template",
        arguments: { name: "Commit_Message", arguments: { diff: "-a\n+b" } },
      });
      assert.equal(res.content[0].type, "text");
      assert.ok(res.content[0].text.includes(expectedPrompt(exampleTemplate("Commit_Message"), { diff: "-a\n+b" })));
      const health = await (await fetch(`${server.base}/healthz`)).json();
      assert.deepEqual(health.sessions, { total: 1, sse: 1, mcp: 0, listen: 0, clients: 1 }, "the failed probe left no session behind");
      await client.close();
    } finally {
      assert.deepEqual(await server.stop(), { code: 0, signal: null });
    }
  });

  it("a /mcp session has an id, and DELETE ends it", async () => {
    const server = await startHTTP();
    try {
      const { client, t } = await connect(server.base, TRANSPORTS[1]);
      assert.match(t.sessionId ?? "", /^[0-9a-f]{32}$/);
      const id = t.sessionId;
      await within(t.terminateSession(), STEP_MS, "terminateSession");
      const res = await fetch(`${server.base}/mcp`, {
        method: "POST",
        headers: { "Content-Type": "application/json", Accept: "application/json, text/event-stream", "Mcp-Session-Id": id },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" }),
      });
      assert.equal(res.status, 404, "the deleted session is gone");
      await client.close();
    } finally {
      assert.deepEqual(await server.stop(), { code: 0, signal: null });
    }
  });

  it("list_changed reaches SSE and /mcp sessions when a template is added", async () => {
    const dir = tempDir("flowyprompt-e2e-http-templates-");
    writeFileSync(join(dir.dir, "Commit_Message.json"), JSON.stringify(exampleTemplate("Commit_Message")));
    const server = await startHTTP(["--templates", dir.dir]);
    const clients = [];
    try {
      const heard = [];
      for (const transport of TRANSPORTS) {
        const { client } = await connect(server.base, transport);
        clients.push(client);
        heard.push(
          new Promise((res) => client.setNotificationHandler(PromptListChangedNotificationSchema, () => res(transport.name))),
          new Promise((res) => client.setNotificationHandler(ToolListChangedNotificationSchema, () => res(transport.name))),
        );
      }
      // The /mcp client hears broadcasts on its GET stream, which it opens
      // after initialize: make sure it is open before the change.
      await clients[1].ping(opts);
      const t = exampleTemplate("Code_Review");
      t.metadata.name = "Added_Over_HTTP";
      writeFileSync(join(dir.dir, "Added_Over_HTTP.json"), JSON.stringify(t));
      await within(Promise.all(heard), WATCH_MS, "list_changed on both transports");
      for (const client of clients) {
        const { prompts } = await client.listPrompts({}, opts);
        assert.ok(prompts.some((p) => p.name === "Added_Over_HTTP"), "the new prompt is listed");
      }
    } finally {
      for (const c of clients) await c.close().catch(() => {});
      assert.deepEqual(await server.stop(), { code: 0, signal: null });
      dir.cleanup();
    }
  });

  it("refuses a foreign Host or Origin with 403 and an explanation", async () => {
    const server = await startHTTP();
    try {
      const port = new URL(server.base).port;
      const body = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" });
      for (const [host, origin] of [
        [`evil.example.com:${port}`, undefined],
        [`127.0.0.1:${port}`, "http://evil.example.com"],
      ]) {
        const status = await rawStatus(server.base, "/sse", host, origin, body);
        assert.equal(status.code, 403, `Host ${host} Origin ${origin}`);
        assert.match(status.body, /FORBIDDEN_(HOST|ORIGIN)/);
        assert.match(status.body, /allowed-(hosts|origins)/, "says how to allow it");
      }
      assert.equal((await rawStatus(server.base, "/sse", `localhost:${port}`, undefined, body)).code, 200);
    } finally {
      assert.deepEqual(await server.stop(), { code: 0, signal: null });
    }
  });

  it("with a token: refused without it, accepted in the header (/mcp) and the query (/sse)", async () => {
    const token = "e2e-token-0123456789";
    const server = await startHTTP([], { MCP_AUTH_TOKEN: token });
    try {
      assert.doesNotMatch(server.stderr(), new RegExp(token), "the token is never printed");
      const bare = new Client({ name: "no-token", version: "0" }, { capabilities: {} });
      await rejection(bare.connect(TRANSPORTS[1].make(server.base), opts), "connect without a token");

      const mcp = new Client({ name: "token", version: "0" }, { capabilities: {} });
      await mcp.connect(
        TRANSPORTS[1].make(server.base, { requestInit: { headers: { Authorization: `Bearer ${token}` } } }),
        opts,
      );
      assert.deepEqual(await mcp.ping(opts), {});
      await mcp.close();

      const sse = new Client({ name: "token-sse", version: "0" }, { capabilities: {} });
      await sse.connect(new SSEClientTransport(new URL(`${server.base}/sse?token=${token}`)), opts);
      const { tools } = await sse.listTools({}, opts);
      assert.equal(tools.length, TOOL_NAMES.length);
      await sse.close();
    } finally {
      assert.deepEqual(await server.stop(), { code: 0, signal: null });
      assert.doesNotMatch(server.stderr(), /e2e-token-0123456789/, "the token is never logged");
    }
  });

  it("SIGTERM with clients connected exits 0", async () => {
    const server = await startHTTP();
    const clients = [];
    for (const transport of TRANSPORTS) {
      clients.push((await connect(server.base, transport)).client);
    }
    const res = await server.stop();
    assert.deepEqual(res, { code: 0, signal: null }, server.stderr());
    for (const c of clients) await c.close().catch(() => {});
  });
});

/** One POST with a forged Host (fetch cannot set Host), over node:http. */
async function rawStatus(base, path, host, origin, body) {
  const { request } = await import("node:http");
  const u = new URL(base);
  return new Promise((res, rej) => {
    const headers = { Host: host, "Content-Type": "application/json", "Content-Length": Buffer.byteLength(body) };
    if (origin) headers.Origin = origin;
    const req = request({ host: u.hostname, port: u.port, path, method: "POST", headers }, (r) => {
      let data = "";
      r.setEncoding("utf8");
      r.on("data", (d) => (data += d));
      r.on("end", () => res({ code: r.statusCode, body: data }));
    });
    req.on("error", rej);
    req.end(body);
  });
}
