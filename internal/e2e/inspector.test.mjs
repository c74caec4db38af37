// The MCP Inspector's command-line mode (@modelcontextprotocol/inspector
// 2.x, `inspector --cli`), spawning `flowyprompt serve` over stdio.
//
// Facts about the 2.x CLI these tests rely on (checked against 2.12.0):
// - The package's bins are `inspector` / `mcp-inspector` (a launcher: the
//   mode flag --cli must come first) and `mcpdo`. It needs Node >= 22.19,
//   so we run it with the Node 22 that the `node` npm package installs
//   (node_modules/node/bin/node), whatever node runs the tests.
// - --prompt-args and --tool-arg are variadic: they swallow every later
//   word, so the server command goes last, after `--`.
// - Values of --prompt-args / --tool-arg go through JSON.parse first (a
//   value that is not JSON stays a string), so `arguments={"code":"x"}`
//   passes an object; --tool-args-json takes the whole arguments object.
// - --format json prints one JSON object {"result": ...} on stdout; -q
//   silences banners and the server's stderr; a failure prints
//   {"error": {code, message}} on stderr. Exit codes: 0 ok, 1 error
//   (e.g. a JSON-RPC error), 5 tool result with isError or unknown tool,
//   6 unportable tool schema under --strict.
// - It stores state under HOME/.mcp-inspector and MCP_STORAGE_DIR; both
//   point at a temporary directory here.

import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";

import { CLI_SUITE_MS, INSPECTOR, inspect as inspectCLI, NODE22, NODE22_WHAT, requireInstalled } from "./cli-helpers.mjs";
import { BIN, exampleTemplate, tempDir } from "./helpers.mjs";
import { inspectorSuite } from "./inspector-suite.mjs";

requireInstalled([
  [NODE22_WHAT, NODE22],
  ["MCP Inspector", INSPECTOR],
]);

let home;
before(() => {
  home = tempDir("flowyprompt-e2e-inspector-");
});
after(() => home?.cleanup());

/**
 * Runs `inspector --cli -q --format json ARGS -- BIN serve SERVER_ARGS`,
 * the server with its cache in the temporary home; resolves to
 * { code, stdout, stderr, json } (see cli-helpers.mjs).
 */
function inspect(args, serverArgs = []) {
  return inspectCLI(home, ["-e", `XDG_CACHE_HOME=${home.dir}`, ...args, "--", BIN, "serve", ...serverArgs]);
}

describe("MCP Inspector CLI over stdio", { timeout: CLI_SUITE_MS }, () => {
  inspectorSuite(
    (args) => inspect(args),
    (dir, args) => inspect(args, ["--templates", dir]),
  );

  it("serves a --templates folder given after the command", async () => {
    const folder = tempDir("flowyprompt-e2e-templates-");
    try {
      const t = exampleTemplate("Commit_Message");
      t.metadata.name = "Only_One";
      writeFileSync(join(folder.dir, "Only_One.json"), JSON.stringify(t));
      const r = await inspect(["--method", "prompts/list"], ["--templates", folder.dir]);
      assert.equal(r.code, 0, r.stderr);
      assert.deepEqual(r.json.result.prompts.map((p) => p.name), ["Only_One"]);
    } finally {
      folder.cleanup();
    }
  });
});
