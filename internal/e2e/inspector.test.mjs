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
import { readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";

import { errorEnvelope, INSPECTOR, inspect as inspectCLI, NODE22, NODE22_WHAT, requireInstalled } from "./cli-helpers.mjs";
import { BIN, EXAMPLES, exampleTemplate, expectedPrompt, SUITE_MS, tempDir } from "./helpers.mjs";

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

/** The metadata names of the example files, sorted. */
function exampleNames() {
  return readdirSync(EXAMPLES)
    .filter((f) => f.endsWith(".json"))
    .map((f) => exampleTemplate(f.slice(0, -5)).metadata.name)
    .sort();
}

describe("MCP Inspector CLI over stdio", { timeout: SUITE_MS }, () => {
  it("prompts/list lists every example", async () => {
    const r = await inspect(["--method", "prompts/list"]);
    assert.equal(r.code, 0, r.stderr);
    const prompts = r.json.result.prompts;
    assert.deepEqual(prompts.map((p) => p.name).sort(), exampleNames());
    for (const p of prompts) {
      assert.ok(p.description?.trim(), `${p.name}: description`);
      assert.ok(Array.isArray(p.arguments), `${p.name}: arguments`);
    }
  });

  it("prompts/get renders with --prompt-args", async () => {
    const args = { diff: "-a = 1\n+a = 2", why: "the = sign splits only once" };
    const r = await inspect([
      "--method",
      "prompts/get",
      "--prompt-name",
      "Commit_Message",
      "--prompt-args",
      ...Object.entries(args).map(([k, v]) => `${k}=${v}`),
    ]);
    assert.equal(r.code, 0, r.stderr);
    const { messages } = r.json.result;
    assert.equal(messages.length, 1);
    assert.equal(messages[0].role, "user");
    assert.equal(messages[0].content.text, expectedPrompt(exampleTemplate("Commit_Message"), args));
  });

  it("prompts/get of an unknown prompt fails with a non-zero exit", async () => {
    const r = await inspect(["--method", "prompts/get", "--prompt-name", "Code_Reveiw"]);
    assert.notEqual(r.code, 0);
    assert.equal(r.json, undefined, "nothing on stdout");
    const e = errorEnvelope(r.stderr);
    assert.match(e.message, /Code_Reveiw/);
    assert.match(e.message, /not found/);
  });

  it("prompts/get without required arguments fails naming them", async () => {
    const r = await inspect(["--method", "prompts/get", "--prompt-name", "Release_Notes"]);
    assert.notEqual(r.code, 0);
    const e = errorEnvelope(r.stderr);
    for (const v of ["product_name", "version", "changes"]) assert.match(e.message, new RegExp(v));
  });

  it("tools/list lists the six tools with portable schemas (--strict)", async () => {
    const r = await inspect(["--method", "tools/list", "--strict"]);
    assert.equal(r.code, 0, `exit 6 means an unportable tool schema:\n${r.stderr}`);
    const tools = r.json.result.tools;
    assert.equal(tools.length, 6);
    for (const t of tools) {
      assert.match(t.name, /^flowyprompt_/);
      assert.equal(t.inputSchema.type, "object");
      assert.ok(t.description.trim());
    }
  });

  const code = 'def add(a, b):\n    return a - b  # "quoted" {{code}}';
  const want = () => expectedPrompt(exampleTemplate("Code_Review"), { code, language: "Python" });

  it("tools/call render with --tool-arg, a JSON object passed as key={...}", async () => {
    const r = await inspect([
      "--method",
      "tools/call",
      "--tool-name",
      "flowyprompt_render_template",
      "--tool-arg",
      "name=Code_Review",
      `arguments=${JSON.stringify({ code, language: "Python" })}`,
    ]);
    assert.equal(r.code, 0, r.stderr);
    const res = r.json.result;
    assert.notEqual(res.isError, true);
    assert.equal(res.content[0].type, "text");
    assert.ok(res.content[0].text.includes(want()), res.content[0].text.slice(0, 1000));
    assert.ok(res.structuredContent, "structuredContent present");
  });

  it("tools/call render with --tool-args-json", async () => {
    const r = await inspect([
      "--method",
      "tools/call",
      "--tool-name",
      "flowyprompt_render_template",
      "--tool-args-json",
      JSON.stringify({ name: "Code_Review", arguments: { code, language: "Python" } }),
    ]);
    assert.equal(r.code, 0, r.stderr);
    assert.ok(r.json.result.content[0].text.includes(want()));
  });

  it("tools/call with missing arguments is a tool error (exit 5)", async () => {
    const r = await inspect([
      "--method",
      "tools/call",
      "--tool-name",
      "flowyprompt_render_template",
      "--tool-arg",
      "name=Code_Review",
      "arguments={}",
    ]);
    assert.equal(r.code, 5, r.stderr);
    const res = r.json.result;
    assert.equal(res.isError, true);
    assert.match(res.content[0].text, /MISSING_REQUIRED_VARIABLE/);
    assert.match(res.content[0].text, /\bcode\b/);
    assert.equal(errorEnvelope(r.stderr).code, "tool_is_error");
  });

  it("tools/call search in Korean", async () => {
    const r = await inspect([
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
