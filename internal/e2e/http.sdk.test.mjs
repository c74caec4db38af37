// The official TypeScript SDK client against `flowyprompt serve --transport
// http`, over both HTTP transports: SSEClientTransport on /sse (what Void
// uses) and StreamableHTTPClientTransport on /mcp (what MCP Inspector and
// modern clients use). Each runs the checks of the stdio SDK test, plus
// what only HTTP has: session ids, DELETE, list_changed reaching every
// session, the Host check, the token, and SIGTERM.

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { SSEClientTransport } from "@modelcontextprotocol/sdk/client/sse.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  McpError,
  PromptListChangedNotificationSchema,
  ToolListChangedNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";

import {
  BIN,
  EXAMPLES,
  STEP_MS,
  SUITE_MS,
  TOOL_NAMES,
  WATCH_MS,
  exampleTemplate,
  expectedPrompt,
  serverEnv,
  tempDir,
  within,
} from "./helpers.mjs";

const opts = { timeout: STEP_MS };
const START_MS = 15_000;

/**
 * Starts `flowyprompt serve --transport http` on a free loopback port (it
 * binds port 0 and prints the URL it got) and resolves to
 * { base, child, stderr(), stop() }. stop() sends SIGTERM and resolves to
 * the exit { code, signal }.
 */
export function startHTTP(extraArgs = [], extraEnv = {}) {
  const cache = tempDir("flowyprompt-e2e-http-");
  const child = spawn(BIN, ["serve", "--transport", "http", "--addr", "127.0.0.1:0", ...extraArgs], {
    env: serverEnv(cache.dir, extraEnv),
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stderr = "";
  let stdout = "";
  const exited = new Promise((res) => child.once("exit", (code, signal) => res({ code, signal })));
  child.stdout.setEncoding("utf8");
  child.stdout.on("data", (d) => {
    stdout += d;
  });
  const base = new Promise((res, rej) => {
    const timer = setTimeout(
      () => rej(new Error(`server did not print its URL within ${START_MS} ms:\n${stderr}`)),
      START_MS,
    );
    child.stderr.setEncoding("utf8");
    child.stderr.on("data", (d) => {
      stderr = (stderr + d).slice(-50_000);
      const m = /serving over HTTP on (http:\/\/127\.0\.0\.1:\d+)/.exec(stderr);
      if (m) {
        clearTimeout(timer);
        res(m[1]);
      }
    });
    exited.then(({ code, signal }) => {
      clearTimeout(timer);
      rej(new Error(`server exited (${code ?? signal}) before serving:\n${stderr}`));
    });
  });
  return base.then((url) => ({
    base: url,
    child,
    stderr: () => stderr,
    stdout: () => stdout,
    exited,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
      const res = await within(exited, STEP_MS, "server exit after SIGTERM").catch(async (err) => {
        child.kill("SIGKILL");
        throw err;
      });
      cache.cleanup();
      return res;
    },
  }));
}

/** Resolves to the error p rejects with; fails when p resolves. */
async function rejection(p, label) {
  try {
    const v = await p;
    assert.fail(`${label}: expected an error, got ${JSON.stringify(v).slice(0, 500)}`);
  } catch (err) {
    if (err instanceof assert.AssertionError) throw err;
    return err;
  }
}

/** Every page of a paginated list call, following nextCursor. */
async function listAll(call, key) {
  const all = [];
  let cursor;
  for (let page = 0; page < 50; page++) {
    const res = await call(cursor === undefined ? {} : { cursor });
    all.push(...res[key]);
    cursor = res.nextCursor;
    if (!cursor) return all;
  }
  throw new Error(`${key}: more than 50 pages, the cursor does not advance`);
}

/** The text of a tool result's first content block, which must be text. */
function firstText(res) {
  assert.ok(Array.isArray(res.content) && res.content.length > 0, "content is a non-empty array");
  assert.equal(res.content[0].type, "text");
  assert.equal(typeof res.content[0].text, "string");
  return res.content[0].text;
}

const CODE = 'func add(a, b int) int {\n\treturn a - b // {{purpose}} stays literal\n}';

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
  describe(`TypeScript SDK client, ${transport.name} (embedded examples)`, { timeout: SUITE_MS }, () => {
    let server;
    let client;
    let t;

    before(async () => {
      server = await startHTTP();
      ({ client, t } = await connect(server.base, transport));
    });

    after(async () => {
      await within(client?.close() ?? Promise.resolve(), STEP_MS, "client.close").catch(() => {});
      const res = await server?.stop();
      if (process.env.FLOWYPROMPT_E2E_VERBOSE) process.stderr.write(`server stderr tail:\n${server?.stderr()}\n`);
      assert.deepEqual(res, { code: 0, signal: null }, `exit after SIGTERM; stderr:\n${server?.stderr()}`);
      assert.equal(server.stdout(), "", "nothing on stdout over HTTP");
    });

    it("initializes with server info and list_changed capabilities", () => {
      const info = client.getServerVersion();
      assert.match(info.name, /flowyprompt/i);
      assert.ok(info.version.length > 0, "serverInfo.version non-empty");
      const caps = client.getServerCapabilities();
      assert.equal(caps.prompts?.listChanged, true, "prompts.listChanged");
      assert.equal(caps.tools?.listChanged, true, "tools.listChanged");
    });

    it("answers ping with an empty result", async () => {
      assert.deepEqual(await client.ping(opts), {});
    });

    it("lists at least 10 prompts, each described, in a deterministic order", async () => {
      const first = await listAll((p) => client.listPrompts(p, opts), "prompts");
      const second = await listAll((p) => client.listPrompts(p, opts), "prompts");
      assert.ok(first.length >= 10, `got ${first.length} prompts`);
      assert.deepEqual(second, first, "two listings are identical");
      const names = first.map((p) => p.name);
      assert.equal(new Set(names).size, names.length, "prompt names are unique");
      for (const p of first) {
        assert.ok(p.description?.trim(), `${p.name}: description`);
        assert.ok(Array.isArray(p.arguments), `${p.name}: arguments is an array`);
      }
    });

    it("lists each example's variables as its prompt's arguments", async () => {
      const prompts = await listAll((p) => client.listPrompts(p, opts), "prompts");
      for (const name of ["Code_Review", "Brand_Positioning_Strategy", "Meeting_Summary", "Commit_Message"]) {
        const tpl = exampleTemplate(name);
        const p = prompts.find((x) => x.name === name);
        assert.ok(p, `${name} is listed`);
        assert.equal(p.description, tpl.metadata.description);
        assert.deepEqual(
          p.arguments.map((a) => ({ name: a.name, required: a.required === true })),
          tpl.variables.map((v) => ({ name: v.name, required: v.required === true })),
          `${name}: arguments`,
        );
      }
    });

    const renderCases = [
      { name: "Code_Review", args: { code: CODE, language: "Go", focus: "correctness" } },
      {
        name: "Brand_Positioning_Strategy",
        args: { company_name: "테크스타트업", industry: "AI", target_customer: "B2B SaaS 기업" },
      },
      { name: "Commit_Message", args: { diff: "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b", why: "" } },
    ];
    for (const tc of renderCases) {
      it(`prompts/get ${tc.name} renders exactly the documented markdown`, async () => {
        const res = await client.getPrompt({ name: tc.name, arguments: tc.args }, opts);
        assert.equal(res.messages.length, 1, "one message");
        assert.equal(res.messages[0].role, "user");
        assert.equal(res.messages[0].content.type, "text");
        assert.equal(res.messages[0].content.text, expectedPrompt(exampleTemplate(tc.name), tc.args));
      });
    }

    it("prompts/get without required arguments names the missing ones", async () => {
      const err = await rejection(
        client.getPrompt({ name: "Brand_Positioning_Strategy", arguments: { company_name: "ACME" } }, opts),
        "getPrompt with one of three",
      );
      assert.ok(err instanceof McpError, `McpError, got ${err}`);
      assert.equal(err.code, -32602);
      assert.equal(err.data?.code, "MISSING_REQUIRED_VARIABLE");
      assert.match(err.message, /industry/);
      assert.match(err.message, /target_customer/);
      assert.doesNotMatch(err.message, /company_name/);
    });

    it("prompts/get of an unknown prompt suggests the right name", async () => {
      const err = await rejection(
        client.getPrompt({ name: "Code_Reveiw", arguments: { code: "x" } }, opts),
        "getPrompt Code_Reveiw",
      );
      assert.ok(err instanceof McpError, `McpError, got ${err}`);
      assert.equal(err.code, -32602);
      assert.equal(err.data?.code, "TEMPLATE_NOT_FOUND");
      assert.ok(err.data.suggestions.includes("Code_Review"), `suggestions: ${err.data.suggestions}`);
    });

    it("lists the six tools, described, object schemas, read-only", async () => {
      const tools = await listAll((p) => client.listTools(p, opts), "tools");
      assert.deepEqual(tools.map((x) => x.name).sort(), [...TOOL_NAMES].sort());
      for (const x of tools) {
        assert.ok(x.description?.trim(), `${x.name}: description`);
        assert.equal(x.inputSchema?.type, "object", `${x.name}: inputSchema.type`);
        assert.equal(x.annotations?.readOnlyHint, true, `${x.name}: readOnlyHint`);
      }
    });

    it("render tool returns the prompts/get text, with structuredContent", async () => {
      const args = { code: CODE, purpose: "add two numbers" };
      const want = expectedPrompt(exampleTemplate("Code_Review"), args);
      const res = await client.callTool(
        { name: "flowyprompt_render_template", arguments: { name: "Code_Review", arguments: args } },
        undefined,
        opts,
      );
      assert.notEqual(res.isError, true, firstText(res));
      assert.ok(firstText(res).includes(want), "content[0].text contains the rendered prompt");
      assert.ok(res.structuredContent, "structuredContent present");
    });

    it("render tool without required arguments is a tool error naming them", async () => {
      const res = await client.callTool(
        {
          name: "flowyprompt_render_template",
          arguments: { name: "Brand_Positioning_Strategy", arguments: { company_name: "ACME" } },
        },
        undefined,
        opts,
      );
      assert.equal(res.isError, true);
      assert.match(firstText(res), /industry/);
      assert.match(firstText(res), /MISSING_REQUIRED_VARIABLE/);
    });

    it("render tool with arguments of the wrong type is a tool error", async () => {
      const res = await client.callTool(
        { name: "flowyprompt_render_template", arguments: { name: 42 } },
        undefined,
        opts,
      );
      assert.equal(res.isError, true);
    });

    it("calling an unknown tool is a JSON-RPC -32602 error", async () => {
      const err = await rejection(
        client.callTool({ name: "flowyprompt_no_such_tool", arguments: {} }, undefined, opts),
        "unknown tool",
      );
      assert.ok(err instanceof McpError, `McpError, got ${err}`);
      assert.equal(err.code, -32602);
    });

    it("list tool lists the examples", async () => {
      const res = await client.callTool({ name: "flowyprompt_list_templates", arguments: {} }, undefined, opts);
      assert.notEqual(res.isError, true, firstText(res));
      assert.match(firstText(res), /Code_Review/);
    });

    for (const { query, want } of [
      { query: "브랜드", want: "Brand_Positioning_Strategy" },
      { query: "code review", want: "Code_Review" },
    ]) {
      it(`search tool finds ${want} for ${JSON.stringify(query)}`, async () => {
        const res = await client.callTool(
          { name: "flowyprompt_search_templates", arguments: { query } },
          undefined,
          opts,
        );
        assert.notEqual(res.isError, true, firstText(res));
        assert.ok(firstText(res).includes(want), firstText(res).slice(0, 2000));
      });
    }

    it("get tool returns the definition with its variables", async () => {
      const res = await client.callTool(
        { name: "flowyprompt_get_template", arguments: { name: "Code_Review" } },
        undefined,
        opts,
      );
      assert.notEqual(res.isError, true, firstText(res));
      for (const v of exampleTemplate("Code_Review").variables) {
        assert.ok(firstText(res).includes(v.name), `text mentions variable ${v.name}`);
      }
    });

    it("validate tool accepts a valid template", async () => {
      const template = JSON.stringify(exampleTemplate("Commit_Message"));
      const res = await client.callTool(
        { name: "flowyprompt_validate_template", arguments: { template } },
        undefined,
        opts,
      );
      assert.notEqual(res.isError, true, firstText(res));
    });

    it("refresh tool succeeds", async () => {
      const res = await client.callTool({ name: "flowyprompt_refresh_templates", arguments: {} }, undefined, opts);
      assert.notEqual(res.isError, true, firstText(res));
    });

    it("keeps answering many requests in flight at once", async () => {
      const names = ["Code_Review", "Commit_Message", "Meeting_Summary", "Bug_Triage"];
      const calls = [];
      for (let i = 0; i < 40; i++) {
        const name = names[i % names.length];
        calls.push(client.callTool({ name: "flowyprompt_get_template", arguments: { name } }, undefined, opts)
          .then((res) => ({ name, text: firstText(res) })));
      }
      for (const { name, text } of await within(Promise.all(calls), STEP_MS, "40 concurrent calls")) {
        assert.ok(text.includes(name), `the answer for ${name} is about ${name}`);
      }
    });
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
      assert.deepEqual(health.sessions, { total: 1, sse: 1, mcp: 0 }, "the failed probe left no session behind");
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

// EXAMPLES is imported for the reader: the templates these checks expect
// are the ones in that folder.
void EXAMPLES;
