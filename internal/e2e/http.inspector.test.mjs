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

import { CLI_SUITE_MS, INSPECTOR, inspect as inspectCLI, NODE22, NODE22_WHAT, requireInstalled } from "./cli-helpers.mjs";
import { startHTTP, tempDir, TOOL_NAMES } from "./helpers.mjs";
import { inspectorSuite } from "./inspector-suite.mjs";

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

/**
 * Runs the inspector at path on a server of its own, started with
 * `--templates dir`, which must then stop cleanly.
 */
async function inspectFolder(dir, path, args) {
  const server = await startHTTP(["--templates", dir]);
  let r;
  try {
    r = await inspect(`${server.base}${path}`, args);
  } catch (err) {
    await server.stop().catch(() => {});
    throw err;
  }
  assert.deepEqual(await server.stop(), { code: 0, signal: null }, server.stderr());
  return r;
}


describe("MCP Inspector CLI over HTTP", { timeout: CLI_SUITE_MS }, () => {
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

      inspectorSuite(
        (args) => inspect(url(), args),
        (dir, args) => inspectFolder(dir, path, args),
      );
    });
  }
});

describe("MCP Inspector CLI over HTTP with an access token", { timeout: CLI_SUITE_MS }, () => {
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
    assert.equal(r.json.result.tools.length, TOOL_NAMES.length);
  });

  it("/sse with ?token= works", async () => {
    const r = await inspect(`${server.base}/sse?token=${token}`, ["--method", "prompts/list", "--transport", "sse"]);
    assert.equal(r.code, 0, r.stderr);
    assert.ok(r.json.result.prompts.length >= 10);
  });
});
