// The MCP Inspector's command-line mode (@modelcontextprotocol/inspector
// 2.x, `inspector --cli`) against `flowyprompt serve --transport http`,
// over both transports: the URL ending in /mcp selects Streamable HTTP,
// the one ending in /sse the legacy SSE transport.
//
// The CLI facts this relies on are those of inspector.test.mjs (Node 22
// from the `node` npm package, -q, --format json, exit 5 for a tool error,
// the {"error": ...} envelope on stderr); in addition, for a URL target:
// - the transport is chosen from the URL's path (/mcp → http, /sse → sse);
// - --header "Name: value" adds an HTTP header to every request (how a
//   bearer token is sent on /mcp); on /sse the token rides in the URL.

import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";

import { errorEnvelope, INSPECTOR, inspect as inspectCLI, NODE22, NODE22_WHAT, requireInstalled } from "./cli-helpers.mjs";
import { exampleTemplate, expectedPrompt, startHTTP, tempDir } from "./helpers.mjs";

const SUITE_MS = 300_000;

requireInstalled([
  [NODE22_WHAT, NODE22],
  ["MCP Inspector", INSPECTOR],
]);

let home;
before(() => {
  home = tempDir("flowyprompt-e2e-inspector-http-");
});
after(() => home?.cleanup());

/** Runs `inspector --cli -q --format json URL ARGS` (see cli-helpers.mjs). */
function inspect(url, args) {
  return inspectCLI(home, [url, ...args]);
}

const code = 'def add(a, b):\n    return a - b  # "quoted" {{code}}';

describe("MCP Inspector CLI over HTTP", { timeout: SUITE_MS }, () => {
  let server;
  before(async () => {
    server = await startHTTP();
  });
  after(async () => {
    const res = await server?.stop();
    assert.deepEqual(res, { code: 0, signal: null }, server?.stderr());
  });

  for (const path of ["/mcp", "/sse"]) {
    describe(`target ${path}`, () => {
      const url = () => `${server.base}${path}`;

      it("prompts/list lists the examples", async () => {
        const r = await inspect(url(), ["--method", "prompts/list"]);
        assert.equal(r.code, 0, r.stderr);
        const names = r.json.result.prompts.map((p) => p.name);
        for (const n of ["Code_Review", "Commit_Message", "Brand_Positioning_Strategy"]) {
          assert.ok(names.includes(n), `${n} listed`);
        }
      });

      it("prompts/get renders with --prompt-args", async () => {
        const args = { diff: "-a = 1\n+a = 2", why: "the = sign splits only once" };
        const r = await inspect(url(), [
          "--method",
          "prompts/get",
          "--prompt-name",
          "Commit_Message",
          "--prompt-args",
          ...Object.entries(args).map(([k, v]) => `${k}=${v}`),
        ]);
        assert.equal(r.code, 0, r.stderr);
        assert.equal(r.json.result.messages[0].content.text, expectedPrompt(exampleTemplate("Commit_Message"), args));
      });

      it("prompts/get of an unknown prompt fails with a non-zero exit", async () => {
        const r = await inspect(url(), ["--method", "prompts/get", "--prompt-name", "Code_Reveiw"]);
        assert.notEqual(r.code, 0);
        assert.match(errorEnvelope(r.stderr).message, /Code_Reveiw/);
      });

      it("tools/list lists the six tools with portable schemas (--strict)", async () => {
        const r = await inspect(url(), ["--method", "tools/list", "--strict"]);
        assert.equal(r.code, 0, r.stderr);
        assert.equal(r.json.result.tools.length, 6);
      });

      it("tools/call render returns the rendered prompt", async () => {
        const r = await inspect(url(), [
          "--method",
          "tools/call",
          "--tool-name",
          "flowyprompt_render_template",
          "--tool-args-json",
          JSON.stringify({ name: "Code_Review", arguments: { code, language: "Python" } }),
        ]);
        assert.equal(r.code, 0, r.stderr);
        const want = expectedPrompt(exampleTemplate("Code_Review"), { code, language: "Python" });
        assert.ok(r.json.result.content[0].text.includes(want));
      });

      it("tools/call with missing arguments is a tool error (exit 5)", async () => {
        const r = await inspect(url(), [
          "--method",
          "tools/call",
          "--tool-name",
          "flowyprompt_render_template",
          "--tool-arg",
          "name=Code_Review",
          "arguments={}",
        ]);
        assert.equal(r.code, 5, r.stderr);
        assert.match(r.json.result.content[0].text, /MISSING_REQUIRED_VARIABLE/);
      });

      it("tools/call search in Korean", async () => {
        const r = await inspect(url(), [
          "--method",
          "tools/call",
          "--tool-name",
          "flowyprompt_search_templates",
          "--tool-arg",
          "query=브랜드",
        ]);
        assert.equal(r.code, 0, r.stderr);
        assert.match(r.json.result.content[0].text, /Brand_Positioning_Strategy/);
      });
    });
  }
});

describe("MCP Inspector CLI over HTTP with an access token", { timeout: SUITE_MS }, () => {
  const token = "inspector-e2e-token";
  let server;
  before(async () => {
    server = await startHTTP([], { MCP_AUTH_TOKEN: token });
  });
  after(async () => {
    assert.deepEqual(await server?.stop(), { code: 0, signal: null });
  });

  it("/mcp without the token fails", async () => {
    const r = await inspect(`${server.base}/mcp`, ["--method", "tools/list"]);
    assert.notEqual(r.code, 0);
  });

  it("/mcp with --header Authorization works", async () => {
    const r = await inspect(`${server.base}/mcp`, ["--method", "tools/list", "--header", `Authorization: Bearer ${token}`]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.json.result.tools.length, 6);
  });

  it("/sse with ?token= works", async () => {
    const r = await inspect(`${server.base}/sse?token=${token}`, ["--method", "prompts/list", "--transport", "sse"]);
    assert.equal(r.code, 0, r.stderr);
    assert.ok(r.json.result.prompts.length >= 10);
  });
});
