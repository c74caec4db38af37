// The review loop against the fake GitHub API (cmd/fakegithub): a save
// from the TypeScript SDK client opens one pull request, whose branch
// holds the new file and whose body holds the diff; a second save updates
// that pull request rather than opening another; the served branch and
// what clients get stay as they were until the pull request is merged
// (POST /_merge/{number} on the fake), after which list_changed arrives
// and the new text is served.

import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { PromptListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";

import { BIN, serverEnv, STEP_MS, SUITE_MS, tempDir, within, WATCH_MS, startFakeGitHub } from "./helpers.mjs";

const TOKEN = "ghp_e2eReviewTokenThatMustNeverLeak012345678";
const READ_ONLY = "github_pat_e2eReadOnlyTokenThatMustNeverLeak0123";
const NAME = "Generated_000";
const PATH = `templates/${NAME}.json`;
const opts = { timeout: STEP_MS };

function startFake() {
  return startFakeGitHub(["--token", TOKEN, "--read-only-token", READ_ONLY, "--valid", "3", "--invalid", "0", "--oversized", "0"]);
}

async function ctl(fake, path) {
  const res = await fetch(fake.control + path);
  assert.equal(res.status, 200, path);
  return res.json();
}

/** The file at ref, read through the contents API as any GitHub client would. */
async function fileAt(fake, ref) {
  const res = await fetch(`${fake.api}repos/acme/prompts/contents/${PATH}?ref=${encodeURIComponent(ref)}`, {
    headers: { Authorization: `Bearer ${TOKEN}` },
  });
  assert.equal(res.status, 200, `contents at ${ref}`);
  const body = await res.json();
  return Buffer.from(body.content, "base64").toString("utf8");
}

/** A new version of the template, with an example so its rendered prompt shows in the diff. */
function proposal(text) {
  return JSON.stringify({
    metadata: { name: NAME, description: "Proposed", version: "2.0.0" },
    variables: [{ name: "subject", type: "string", description: "Subject", required: true, examples: ["tea"] }],
    results: [{ name: "s", content: `${text} {{subject}}` }],
  });
}

describe("changes proposed as pull requests", { timeout: SUITE_MS }, () => {
  let fake;
  let tmp;
  let client;
  let stderr = "";
  let served;
  let branch;
  // Each prompts list_changed resolves the waiters of nextChange.
  let waiters = [];
  const nextChange = () => new Promise((res) => waiters.push(res));

  before(async () => {
    tmp = tempDir();
    fake = await startFake();
    served = (await ctl(fake, "/head?branch=main")).commit;
    const transport = new StdioClientTransport({
      command: BIN,
      args: ["serve", "--allow-write"],
      env: serverEnv(tmp.dir, {
        GITHUB_REPO_URL: fake.repo,
        GITHUB_API_URL: fake.api,
        GITHUB_PAT: TOKEN,
        GITHUB_REF: "main",
        // Revalidate every second, so the merge reaches the client on
        // its own, as a reviewer's merge on GitHub does.
        CACHE_TTL_MS: "1000",
        FLOWYPROMPT_CACHE_DIR: tmp.dir,
      }),
      stderr: "pipe",
    });
    transport.stderr.on("data", (d) => (stderr += d));
    client = new Client({ name: "flowyprompt-e2e-review", version: "1.0.0" });
    await within(client.connect(transport), STEP_MS, "connect");
    client.setNotificationHandler(PromptListChangedNotificationSchema, () => {
      const w = waiters;
      waiters = [];
      for (const res of w) res();
    });
  });

  after(async () => {
    await client?.close();
    fake?.proc.kill();
    tmp?.cleanup();
  });

  it("says the save tool opens a pull request", opts, async () => {
    const { tools } = await client.listTools();
    const save = tools.find((t) => t.name === "flowyprompt_save_template");
    assert.ok(save, "the save tool is listed");
    assert.equal(save.title, "Propose a template (pull request)");
    assert.equal(save.annotations.destructiveHint, false);
    assert.match(save.description, /pull request/);
  });

  it("opens one pull request whose branch holds the file and whose body holds the diff", opts, async () => {
    const res = await client.callTool({
      name: "flowyprompt_save_template",
      arguments: { template: proposal("PROPOSED"), message: "Propose a new Generated_000", expected_version: "1.0.0" },
    });
    assert.notEqual(res.isError, true, res.content[0].text);
    const pr = res.structuredContent.pull_request;
    assert.equal(pr.number, 1);
    assert.equal(pr.updated, false);
    assert.match(pr.url, /\/pull\/1$/);
    assert.match(pr.branch, /^flowyprompt\/Generated_000-[0-9a-f]{8}$/);
    assert.match(res.content[0].text, /Opened pull request #1/);
    branch = pr.branch;

    assert.equal(await fileAt(fake, branch), proposal("PROPOSED"));
    const pulls = await ctl(fake, "/pulls");
    assert.equal(pulls.length, 1);
    assert.equal(pulls[0].head, branch);
    assert.equal(pulls[0].base, "main");
    assert.equal(pulls[0].title, "Propose a new Generated_000");
    assert.match(pulls[0].body, /\+\+\+ b\/templates\/Generated_000\.json/);
    assert.match(pulls[0].body, /\+PROPOSED tea/);
    assert.match(pulls[0].body, /\*\*Validation:\*\* valid/);
  });

  it("updates that pull request on the next save", opts, async () => {
    const res = await client.callTool({
      name: "flowyprompt_save_template",
      arguments: { template: proposal("REVISED"), message: "Propose a new Generated_000", expected_version: "1.0.0" },
    });
    assert.notEqual(res.isError, true, res.content[0].text);
    assert.deepEqual(res.structuredContent.pull_request, { url: res.structuredContent.location, number: 1, branch, updated: true });
    assert.equal(await fileAt(fake, branch), proposal("REVISED"));
    const pulls = await ctl(fake, "/pulls");
    assert.equal(pulls.length, 1, "still one pull request");
    assert.match(pulls[0].body, /\+REVISED tea/);
    assert.doesNotMatch(pulls[0].body, /PROPOSED/);
  });

  it("serves the branch unchanged until the merge", opts, async () => {
    assert.equal((await ctl(fake, "/head?branch=main")).commit, served);
    const refresh = await client.callTool({ name: "flowyprompt_refresh_templates", arguments: {} });
    assert.notEqual(refresh.isError, true, refresh.content[0].text);
    assert.deepEqual(refresh.structuredContent.changed, []);
    const prompt = await client.getPrompt({ name: NAME, arguments: { subject: "tea" } });
    assert.doesNotMatch(prompt.messages[0].content.text, /REVISED|PROPOSED/);
  });

  it("serves the new text after the merge, announced by list_changed", { timeout: WATCH_MS + STEP_MS }, async () => {
    const changed = nextChange();
    const merged = await fetch(`${fake.api}_merge/1`, { method: "POST" });
    assert.equal(merged.status, 200);
    assert.notEqual((await ctl(fake, "/head?branch=main")).commit, served);
    await within(changed, WATCH_MS, "prompts list_changed after the merge");
    const prompt = await client.getPrompt({ name: NAME, arguments: { subject: "tea" } });
    assert.match(prompt.messages[0].content.text, /REVISED tea/);
    const pulls = await ctl(fake, "/pulls");
    assert.equal(pulls[0].merged, true);
  });

  it("tells a token that may only read what it needs", opts, async () => {
    const ro = tempDir();
    const transport = new StdioClientTransport({
      command: BIN,
      args: ["serve", "--allow-write"],
      env: serverEnv(ro.dir, {
        GITHUB_REPO_URL: fake.repo,
        GITHUB_API_URL: fake.api,
        GITHUB_PAT: READ_ONLY,
        GITHUB_REF: "main",
        FLOWYPROMPT_CACHE_DIR: ro.dir,
      }),
      stderr: "pipe",
    });
    let roStderr = "";
    transport.stderr.on("data", (d) => (roStderr += d));
    const reader = new Client({ name: "flowyprompt-e2e-review-read-only", version: "1.0.0" });
    try {
      await within(reader.connect(transport), STEP_MS, "connect with a read-only token");
      const res = await reader.callTool({
        name: "flowyprompt_save_template",
        arguments: { template: proposal("DENIED"), message: "m", expected_version: "2.0.0" },
      });
      assert.equal(res.isError, true);
      assert.equal(res.structuredContent.code, "PERMISSION_DENIED", res.content[0].text);
      assert.match(res.structuredContent.how, /Contents: Read and write and Pull requests: Read and write/);
      assert.ok(!JSON.stringify(res).includes(READ_ONLY), "the token in the answer");
      assert.ok(!roStderr.includes(READ_ONLY), "the token in the server's log");
      assert.equal((await ctl(fake, "/pulls")).length, 1, "no pull request opened");
    } finally {
      await reader.close();
      ro.cleanup();
    }
  });

  it("never prints the token", opts, () => {
    assert.ok(!stderr.includes(TOKEN), "token in the server's log");
  });
});
