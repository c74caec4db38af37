// The MCP Inspector CLI checks that hold on every transport, registered by
// inspector.test.mjs (stdio) and http.inspector.test.mjs (/mcp and /sse)
// with their own way to run the CLI against the server.
//
// This file is not a test file (node --test only picks up *.test.mjs here).

import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { it } from "node:test";

import { errorEnvelope } from "./cli-helpers.mjs";
import { examplePrompts, exampleTemplate, expectedPrompt, tempDir, TOOL_NAMES } from "./helpers.mjs";

// Every variable optional, one with a default and one without (which
// renders as ""). No built-in example is all-optional, so this one is
// served from a --templates folder.
const ALL_OPTIONAL = {
  metadata: {
    name: "All_Optional",
    description: "All_Optional is a template written by the end-to-end tests.",
    version: "1.0.0",
    author: "e2e",
    tags: ["e2e"],
    category: "Testing",
    lastUpdated: "2026-01-01T00:00:00Z",
  },
  variables: [
    { name: "topic", type: "string", description: "What the notes are about.", required: false, default: "anything" },
    { name: "tone", type: "string", description: "How they should sound.", required: false },
  ],
  results: [{ name: "Ask", content: "Write notes about {{ topic }} in a [{{tone}}] tone.", format: "markdown" }],
};

/**
 * Registers the shared checks in the current describe block. run(args)
 * runs `inspector --cli ARGS` against a server serving the built-in
 * examples and resolves to { code, stdout, stderr, json };
 * runOnFolder(dir, args) does the same against a server started with
 * `--templates dir`.
 */
export function inspectorSuite(run, runOnFolder) {
  it("prompts/list lists every example", async () => {
    const r = await run(["--method", "prompts/list"]);
    assert.equal(r.code, 0, r.stderr);
    const prompts = r.json.result.prompts;
    assert.deepEqual(prompts.map((p) => p.name).sort(), examplePrompts());
    for (const p of prompts) {
      assert.ok(p.description?.trim(), `${p.name}: description`);
      assert.ok(Array.isArray(p.arguments), `${p.name}: arguments`);
    }
  });

  it("prompts/get renders with --prompt-args", async () => {
    const args = { diff: "-a = 1\n+a = 2", why: "the = sign splits only once" };
    const r = await run([
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
    const r = await run(["--method", "prompts/get", "--prompt-name", "Code_Reveiw"]);
    assert.notEqual(r.code, 0);
    assert.equal(r.json, undefined, "nothing on stdout");
    const e = errorEnvelope(r.stderr);
    assert.match(e.message, /Code_Reveiw/);
    assert.match(e.message, /not found/);
  });

  it("prompts/get without required arguments fails naming them", async () => {
    const r = await run(["--method", "prompts/get", "--prompt-name", "Release_Notes"]);
    assert.notEqual(r.code, 0);
    const e = errorEnvelope(r.stderr);
    for (const v of ["product_name", "version", "changes"]) assert.match(e.message, new RegExp(v));
  });

  it("prompts/get of an all-optional prompt succeeds without --prompt-args", async () => {
    const folder = tempDir("flowyprompt-e2e-inspector-templates-");
    try {
      writeFileSync(join(folder.dir, "All_Optional.json"), JSON.stringify(ALL_OPTIONAL, null, 2));
      const r = await runOnFolder(folder.dir, ["--method", "prompts/get", "--prompt-name", "All_Optional"]);
      assert.equal(r.code, 0, r.stderr);
      const { messages } = r.json.result;
      assert.equal(messages.length, 1);
      assert.equal(messages[0].role, "user");
      assert.equal(messages[0].content.text, expectedPrompt(ALL_OPTIONAL));
      assert.match(messages[0].content.text, /about anything in a \[\] tone/, "the default, and \"\" for no default");
    } finally {
      folder.cleanup();
    }
  });

  // The CLI looks the name up in the server's tools/list before calling,
  // and fails as it does for a tool error (exit 5).
  it("tools/call of an unknown tool fails with a non-zero exit naming it", async () => {
    const r = await run(["--method", "tools/call", "--tool-name", "flowyprompt_no_such_tool"]);
    assert.equal(r.code, 5, r.stderr);
    assert.equal(r.json, undefined, "nothing on stdout");
    const e = errorEnvelope(r.stderr);
    assert.match(e.message, /flowyprompt_no_such_tool/);
    assert.match(e.message, /not found/);
  });

  it("tools/list lists the nine tools with portable schemas (--strict)", async () => {
    const r = await run(["--method", "tools/list", "--strict"]);
    assert.equal(r.code, 0, `exit 6 means an unportable tool schema:\n${r.stderr}`);
    const tools = r.json.result.tools;
    assert.deepEqual(tools.map((t) => t.name).sort(), [...TOOL_NAMES].sort());
    for (const t of tools) {
      assert.equal(t.inputSchema.type, "object");
      assert.ok(t.description.trim());
    }
  });

  const code = 'def add(a, b):\n    return a - b  # "quoted" {{code}}';
  const want = () => expectedPrompt(exampleTemplate("Code_Review"), { code, language: "Python" });

  it("tools/call render with --tool-arg, a JSON object passed as key={...}", async () => {
    const r = await run([
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
    const r = await run([
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
    const r = await run([
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
    const r = await run([
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
}
