// Labels (docs/review.md): one repository of the fake GitHub API
// (cmd/fakegithub) whose main and staging branches hold different texts,
// served with --github-labels production:main+staging:staging. Each client
// gets its label's text: one sending the Flowyprompt-Label header, one
// naming the label in a request's _meta, one over stdio started with
// --label staging (a Claude Desktop configuration pointed at staging), and
// one naming none. Moving the staging branch reaches the staging clients'
// list_changed alone, moving main the others' alone; an unknown label is
// refused with the labels there are.

import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  PromptListChangedNotificationSchema,
  ResourceListChangedNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";

import { eventually, rejection, startHTTP, STEP_MS, SUITE_MS, within, startFakeGitHub } from "./helpers.mjs";
import { stdioClient } from "./sdk-helpers.mjs";

const LABEL = "io.flowyprompt/label";
const SERVED = "io.flowyprompt/served";
const opts = { timeout: STEP_MS * 3 };

function startFake() {
  return startFakeGitHub(["--valid", "1", "--invalid", "0", "--oversized", "0"]);
}

async function ctl(fake, path, body) {
  const res = await fetch(fake.control + path, { method: "POST", body });
  assert.equal(res.status, 200, `POST ${path}`);
  return res.json();
}

function template(name, text) {
  return JSON.stringify({
    metadata: { name, description: `about ${name}`, version: "1.0.0" },
    variables: [],
    results: [{ name: "s", content: text }],
  });
}

/** A client of the server's /mcp, sending headers on every request, that counts its notifications. */
async function httpClient(base, name, headers = {}) {
  const client = new Client({ name, version: "1.0.0" });
  const heard = { prompts: 0, resources: 0 };
  client.setNotificationHandler(PromptListChangedNotificationSchema, () => heard.prompts++);
  client.setNotificationHandler(ResourceListChangedNotificationSchema, () => heard.resources++);
  const transport = new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { requestInit: { headers } });
  await within(client.connect(transport), STEP_MS, `${name} connect`);
  return { client, heard };
}

/** The text of a Greeting prompt: the rendered prompt's last line. */
function greeting(res) {
  return res.messages[0].content.text.split("\n").at(-1);
}

describe("labels", { timeout: SUITE_MS * 2 }, () => {
  let fake;
  let server;
  let stdio;
  const clients = {};
  let prod;
  let stag;
  const env = {};

  before(async () => {
    fake = await startFake();
    ({ commit: stag } = await ctl(fake, "/files?path=templates/Greeting.json", template("Greeting", "staging text")));
    await ctl(fake, `/branch?name=staging&commit=${stag}`);
    ({ commit: prod } = await ctl(fake, "/files?path=templates/Greeting.json", template("Greeting", "production text")));
    Object.assign(env, {
      GITHUB_REPO_URL: fake.repo,
      GITHUB_API_URL: fake.api,
      GITHUB_LABELS: "production:main+staging:staging",
    });
    server = await startHTTP([], env);
    clients.header = await httpClient(server.base, "header", { "Flowyprompt-Label": "staging" });
    clients.meta = await httpClient(server.base, "meta");
    clients.none = await httpClient(server.base, "none");
    const heard = { prompts: 0, resources: 0 };
    stdio = await stdioClient({
      args: ["serve", "--label", "staging"],
      extraEnv: env,
      name: "stdio",
      setup: (client) => {
        client.setNotificationHandler(PromptListChangedNotificationSchema, () => heard.prompts++);
        client.setNotificationHandler(ResourceListChangedNotificationSchema, () => heard.resources++);
      },
    });
    clients.stdio = { client: stdio.client, heard };
  });

  after(async () => {
    for (const c of Object.values(clients)) await within(c.client.close(), STEP_MS, "close").catch(() => {});
    await stdio?.close();
    await server?.stop();
    fake?.proc.kill();
  });

  it("serves each client its label's text and says which label and commit served it", opts, async () => {
    const cases = [
      ["header", clients.header.client, {}, "staging text", "staging", stag],
      ["_meta", clients.meta.client, { _meta: { [LABEL]: "staging" } }, "staging text", "staging", stag],
      ["--label over stdio", clients.stdio.client, {}, "staging text", "staging", stag],
      ["none", clients.none.client, {}, "production text", "production", prod],
      ["_meta naming the default", clients.header.client, { _meta: { [LABEL]: "production" } }, "production text", "production", prod],
    ];
    for (const [name, client, extra, text, label, commit] of cases) {
      const res = await client.getPrompt({ name: "Greeting", ...extra });
      assert.equal(greeting(res), text, name);
      assert.deepEqual(res._meta?.[SERVED], { label, commit }, name);
    }
    const tool = await clients.header.client.callTool({ name: "flowyprompt_render_template", arguments: { name: "Greeting" } });
    assert.match(tool.content[0].text, /staging text/);
    assert.deepEqual(tool._meta?.[SERVED], { label: "staging", commit: stag });
    const list = await clients.header.client.callTool({ name: "flowyprompt_list_templates", arguments: {} });
    assert.equal(list.isError, undefined, list.content[0].text);
  });

  it("refuses an unknown label with the labels there are", opts, async () => {
    const err = await rejection(clients.none.client.getPrompt({ name: "Greeting", _meta: { [LABEL]: "canary" } }), "canary");
    assert.match(err.message, /unknown label "canary"/);
    assert.match(err.message, /production, staging/);
    const other = await httpClient(server.base, "canary", { "Flowyprompt-Label": "canary" });
    try {
      const list = await rejection(other.client.listPrompts(), "canary list");
      assert.match(list.message, /production, staging/);
    } finally {
      await other.client.close();
    }
  });

  it("announces a label's move to the clients following it alone", opts, async () => {
    // Commit on a scratch branch made the default, so that main stays
    // where it is, then point staging at the commit: a label's move.
    const scratch = async (files) => {
      await ctl(fake, `/branch?name=scratch&commit=${prod}`);
      await ctl(fake, "/default-branch?name=scratch");
      let commit;
      for (const [path, body] of Object.entries(files)) ({ commit } = await ctl(fake, `/files?path=${path}`, body));
      await ctl(fake, "/default-branch?name=main");
      return commit;
    };
    const refresh = (c) => c.client.callTool({ name: "flowyprompt_refresh_templates", arguments: {} });

    // 1. staging moves to a commit that changes Greeting.
    const moved = await scratch({ "templates/Greeting.json": template("Greeting", "staging two") });
    await ctl(fake, `/branch?name=staging&commit=${moved}`);
    await refresh(clients.header);
    await refresh(clients.stdio);
    await eventually(() => assert.equal(clients.header.heard.prompts, 1, "header client's list_changed"), STEP_MS, 20);
    await eventually(() => assert.equal(clients.stdio.heard.prompts, 1, "stdio client's list_changed"), STEP_MS, 20);
    assert.equal(greeting(await clients.header.client.getPrompt({ name: "Greeting" })), "staging two");
    assert.equal(greeting(await clients.stdio.client.getPrompt({ name: "Greeting" })), "staging two");
    assert.equal(greeting(await clients.none.client.getPrompt({ name: "Greeting" })), "production text");

    // 2. main changes and gains a template: resources/list_changed, after
    // its prompts/list_changed, is the later event that proves the
    // production client heard nothing of staging's move.
    await ctl(fake, "/files?path=templates/Main_Only.json", template("Main_Only", "main only"));
    await refresh(clients.none);
    await eventually(() => assert.equal(clients.none.heard.resources, 1, "none client's resources list_changed"), STEP_MS, 20);
    assert.equal(clients.none.heard.prompts, 1, "the production client heard of staging's move");

    // 3. staging moves again and gains a template: the staging clients'
    // resources/list_changed proves they heard nothing of main's change.
    const again = await scratch({
      "templates/Greeting.json": template("Greeting", "staging two"),
      "templates/Staging_Only.json": template("Staging_Only", "staging only"),
    });
    await ctl(fake, `/branch?name=staging&commit=${again}`);
    await refresh(clients.header);
    await refresh(clients.stdio);
    for (const name of ["header", "stdio"]) {
      await eventually(() => assert.equal(clients[name].heard.resources, 1, `${name} client's resources list_changed`), STEP_MS, 20);
      assert.equal(clients[name].heard.prompts, 2, `the ${name} client heard of main's change`);
    }
    const list = await clients.header.client.listPrompts();
    assert.deepEqual(list.prompts.map((p) => p.name).sort(), ["Generated_000", "Greeting", "Staging_Only"]);
  });
});
