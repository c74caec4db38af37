// The built binary serving a GitHub template library, against the fake
// GitHub API (cmd/fakegithub, the same fake the Go tests use) through
// GITHUB_API_URL, with the official TypeScript SDK client: cold start with
// invalid and oversized files mixed in, a changed file reaching the client,
// GitHub going down while the catalog keeps being served, and the token
// never showing up in anything the server prints.

import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { PromptListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";

import { BIN, eventually, serverEnv, STEP_MS, SUITE_MS, tempDir, within, startFakeGitHub } from "./helpers.mjs";

const TOKEN = "ghp_e2eSecretTokenThatMustNeverLeak0123456789";
const opts = { timeout: STEP_MS };

function startFake() {
  return startFakeGitHub(["--token", TOKEN]);
}

async function ctl(fake, method, path, body) {
  const res = await fetch(fake.control + path, { method, body });
  assert.equal(res.status, 200, `${method} ${path}`);
  return res.json();
}

async function listAllPrompts(client) {
  const all = [];
  let cursor;
  do {
    const res = await client.listPrompts(cursor ? { cursor } : {});
    all.push(...res.prompts);
    cursor = res.nextCursor;
  } while (cursor);
  return all;
}

function text(res) {
  return res.content[0].text;
}

describe("GitHub library through the fake API", { timeout: SUITE_MS }, () => {
  let fake;
  let tmp;
  let client;
  let stderr = "";
  const changes = [];

  before(async () => {
    tmp = tempDir();
    fake = await startFake();
    const transport = new StdioClientTransport({
      command: BIN,
      args: ["serve", "--log-level", "debug"],
      env: serverEnv(tmp.dir, {
        GITHUB_REPO_URL: fake.repo,
        GITHUB_API_URL: fake.api,
        GITHUB_PAT: TOKEN,
        GITHUB_REF: "main",
        FLOWYPROMPT_CACHE_DIR: tmp.dir,
      }),
      stderr: "pipe",
    });
    transport.stderr.on("data", (d) => (stderr += d));
    client = new Client({ name: "flowyprompt-e2e-github", version: "1.0.0" });
    await within(client.connect(transport), STEP_MS, "connect");
    client.setNotificationHandler(PromptListChangedNotificationSchema, () => changes.push(Date.now()));
  });

  after(async () => {
    await client?.close();
    fake?.proc.kill();
    tmp?.cleanup();
  });

  it("lists every valid template and leaves out invalid and oversized ones", opts, async () => {
    const prompts = await listAllPrompts(client);
    assert.equal(prompts.length, 140);
    assert.ok(prompts.every((p) => p.name.startsWith("Generated_")));
    const res = await client.callTool({ name: "flowyprompt_refresh_templates", arguments: {} });
    assert.equal(res.structuredContent.invalid.length, 10, text(res));
    assert.ok(res.structuredContent.invalid.some((i) => /byte limit/.test(i.error)));
    assert.equal(res.structuredContent.source.kind, "github");
  });

  it("revalidates with one conditional request when nothing changed", opts, async () => {
    await ctl(fake, "POST", "/reset");
    const res = await client.callTool({ name: "flowyprompt_refresh_templates", arguments: {} });
    assert.notEqual(res.isError, true, text(res));
    const counts = await ctl(fake, "GET", "/requests");
    assert.ok(counts.total <= 2, JSON.stringify(counts));
    assert.equal(counts.byStatus["304"], counts.total, JSON.stringify(counts));
  });

  it("serves a changed file after refresh and announces list_changed", opts, async () => {
    const before = await client.getPrompt({ name: "Generated_000", arguments: { subject: "tea" } });
    assert.doesNotMatch(before.messages[0].content.text, /EDITED/);
    const tmpl = JSON.stringify({
      metadata: { name: "Generated_000", description: "Edited", version: "2.0.0" },
      variables: [{ name: "subject", type: "string", description: "Subject", required: true }],
      results: [{ name: "s", content: "EDITED {{subject}}" }],
    });
    await ctl(fake, "POST", "/reset");
    await ctl(fake, "POST", "/files?path=templates/Generated_000.json", tmpl);
    const n = changes.length;
    const res = await client.callTool({ name: "flowyprompt_refresh_templates", arguments: {} });
    assert.deepEqual(res.structuredContent.changed, ["Generated_000"], text(res));
    const counts = await ctl(fake, "GET", "/requests");
    assert.ok(counts.total <= 4, JSON.stringify(counts));
    const after = await client.getPrompt({ name: "Generated_000", arguments: { subject: "tea" } });
    assert.match(after.messages[0].content.text, /EDITED tea/);
    await eventually(() => assert.ok(changes.length > n, "prompts list_changed received"), STEP_MS, 20);
  });

  it("keeps serving the catalog, marked stale, while GitHub is down", opts, async () => {
    await ctl(fake, "POST", "/fault?status=502");
    const res = await client.callTool({ name: "flowyprompt_refresh_templates", arguments: {} });
    assert.equal(res.isError, true);
    assert.match(text(res), /NETWORK_ERROR|502/);
    const prompt = await client.getPrompt({ name: "Generated_001", arguments: { subject: "x" } });
    assert.match(prompt.messages[0].content.text, /Generated_001/);
    const list = await client.callTool({ name: "flowyprompt_list_templates", arguments: { limit: 1 } });
    assert.equal(list.structuredContent.stale, true, text(list));
    assert.match(text(list), /stale/);
    await ctl(fake, "POST", "/fault?status=0");
    const ok = await client.callTool({ name: "flowyprompt_refresh_templates", arguments: {} });
    assert.notEqual(ok.isError, true, text(ok));
  });

  it("never prints the token", opts, () => {
    assert.ok(stderr.length > 0, "the server logged something");
    assert.ok(!stderr.includes(TOKEN), "token in the server's log");
  });
});
