// A template folder served with --templates, watched for changes: the
// client must hear prompts and tools list_changed when a file appears,
// changes or goes, and a half-written file must never hide the others.
// Shared by listchanged.test.mjs (the 1.x SDK, the 2025 era: every session
// hears the changes) and modern.sdk2.test.mjs (the 2.x client, 2026-07-28:
// the changes come on a subscriptions/listen stream, tagged with its id).
//
// This file is not a test file (node --test only picks up *.test.mjs here).

import assert from "node:assert/strict";
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";

import { assertTagged } from "./features-suite.mjs";
import { eventually, expectedPrompt, firstText, STEP_MS, SUITE_MS, tempDir, WATCH_MS, within } from "./helpers.mjs";
import { SDK_V1 } from "./sdk-helpers.mjs";

const opts = { timeout: STEP_MS };

function template(name, variables, results, tags = ["e2e"]) {
  return {
    metadata: {
      name,
      description: `${name} is a template written by the end-to-end tests.`,
      version: "1.0.0",
      author: "e2e",
      tags,
      category: "Testing",
      lastUpdated: "2026-01-01T00:00:00Z",
    },
    variables,
    results,
  };
}

// Every variable optional: one with a default, one without (renders "").
const ALPHA = template(
  "Alpha_Notes",
  [
    { name: "topic", type: "string", description: "What the notes are about.", required: false, default: "anything" },
    { name: "tone", type: "string", description: "How they should sound.", required: false },
  ],
  [
    { name: "Ask", content: "## Ask\n\nWrite notes about {{ topic }}.", format: "markdown", order: 2 },
    { name: "Tone", content: "Tone: [{{tone}}]", format: "markdown", order: 1 },
  ],
  [],
);

export const BETA = template(
  "Beta_Check",
  [{ name: "subject", type: "string", description: "What to check.", required: true }],
  [{ name: "Check", content: "Check {{subject}} twice.", format: "text" }],
);

const GAMMA = template(
  "Gamma_Plan",
  [{ name: "goal", type: "string", description: "The goal to plan for.", required: true }],
  [{ name: "Plan", content: "Plan for {{goal}}.", format: "text" }],
);

const DELTA = template(
  "Delta_Draft",
  [{ name: "idea", type: "string", description: "The idea to draft.", required: false, default: "x" }],
  [{ name: "Draft", content: "Draft {{idea}}.", format: "text" }],
);

export function writeTemplate(dir, t) {
  writeFileSync(join(dir, `${t.metadata.name}.json`), JSON.stringify(t, null, 2));
}

/** Collects notifications and lets a test wait for the next one of a kind. */
class Inbox {
  constructor() {
    this.counts = { prompts: 0, tools: 0, logs: 0 };
    this.logs = [];
    this.changes = []; // the params of every list_changed
    this.waiters = [];
  }
  bump(kind, params) {
    if (kind === "logs") this.logs.push(params);
    else this.changes.push(params);
    this.counts[kind]++;
    this.waiters = this.waiters.filter((w) => !w());
  }
  /** Waits until kind's count exceeds n. */
  after(kind, n, label) {
    if (this.counts[kind] > n) return Promise.resolve();
    return within(
      new Promise((res) => {
        this.waiters.push(() => {
          if (this.counts[kind] > n) {
            res();
            return true;
          }
          return false;
        });
      }),
      WATCH_MS,
      label,
    );
  }
}

/**
 * Registers the folder steps as a describe block, with a client of sdk
 * (SDK_V1 unless told) that start(dir, setup) connects to `flowyprompt
 * serve --templates dir`, calling setup(client) before the connect. start
 * resolves to { client, stop(), tap? } (tap: tapTransport's record, which a
 * modern session has).
 */
export function folderSuite(title, start, { sdk = SDK_V1 } = {}) {
  describe(title, { timeout: SUITE_MS }, () => {
    let client;
    let session;
    let sub;
    let folder;
    const inbox = new Inbox();
    const modern = sdk.era === "modern";
    const callTool = (params) => sdk.callTool(client, params, opts);

    const names = async () => (await client.listPrompts({}, { ...opts, ...sdk.fresh })).prompts.map((p) => p.name).sort();

    before(async () => {
      folder = tempDir("flowyprompt-e2e-templates-");
      writeTemplate(folder.dir, ALPHA);
      writeTemplate(folder.dir, BETA);
      session = await start(folder.dir, (c) => {
        sdk.on(c, "notifications/prompts/list_changed", (n) => inbox.bump("prompts", n.params));
        sdk.on(c, "notifications/tools/list_changed", (n) => inbox.bump("tools", n.params));
        sdk.on(c, "notifications/message", (n) => inbox.bump("logs", n.params));
      });
      client = session.client;
      sub = await sdk.listen(client, { promptsListChanged: true, toolsListChanged: true });
    });

    after(async () => {
      await sub?.close();
      await session?.stop();
      folder?.cleanup();
    });

    // The steps build on each other, in order (node:test runs a describe's
    // tests sequentially).

    it("serves the folder's templates, not the examples", async () => {
      assert.deepEqual(await names(), ["Alpha_Notes", "Beta_Check"]);
    });

    it("renders an all-optional template without arguments", async () => {
      const res = await client.getPrompt({ name: "Alpha_Notes" }, opts);
      const text = res.messages[0].content.text;
      assert.equal(text, expectedPrompt(ALPHA, {}));
      // Spelled out too, so a mistake in expectedPrompt cannot hide one in the
      // server: sections by order, default taken, missing optional empty, no
      // Tags line for empty tags, no trailing separator.
      assert.equal(
        text,
        "# Alpha_Notes\n\nAlpha_Notes is a template written by the end-to-end tests.\n\n" +
          "**Version**: 1.0.0\n\n---\n\nTone: []\n\n---\n\n## Ask\n\nWrite notes about anything.",
      );
    });

    it("renders with arguments", async () => {
      const res = await client.getPrompt({ name: "Beta_Check", arguments: { subject: "the {{subject}} brakes" } }, opts);
      assert.equal(
        res.messages[0].content.text,
        "# Beta_Check\n\nBeta_Check is a template written by the end-to-end tests.\n\n" +
          "**Version**: 1.0.0\n**Tags**: e2e\n\n---\n\nCheck the {{subject}} brakes twice.",
      );
    });

    it("announces a new file and lists its prompt", async () => {
      const p0 = inbox.counts.prompts;
      const t0 = inbox.counts.tools;
      writeTemplate(folder.dir, GAMMA);
      await inbox.after("prompts", p0, "notifications/prompts/list_changed after adding Gamma_Plan");
      await inbox.after("tools", t0, "notifications/tools/list_changed after adding Gamma_Plan");
      await eventually(async () => assert.deepEqual(await names(), ["Alpha_Notes", "Beta_Check", "Gamma_Plan"]));
      const res = await client.getPrompt({ name: "Gamma_Plan", arguments: { goal: "launch" } }, opts);
      assert.equal(res.messages[0].content.text, expectedPrompt(GAMMA, { goal: "launch" }));
    });

    it("keeps serving the others while a file is half written", async () => {
      const path = join(folder.dir, "Delta_Draft.json");
      const full = JSON.stringify(DELTA, null, 2);
      const l0 = inbox.counts.logs;
      writeFileSync(path, full.slice(0, Math.floor(full.length / 2)));
      if (modern) {
        // A 2026 client hears no warning (a file going bad is no request's):
        // the refresh tool reads the folder and reports the broken file.
        const res = await callTool({ name: "flowyprompt_refresh_templates", arguments: {} });
        assert.notEqual(res.isError, true, firstText(res));
        const invalid = res.structuredContent?.invalid ?? [];
        assert.ok(invalid.some((x) => x.path === "Delta_Draft.json"), `refresh reports Delta_Draft.json: ${JSON.stringify(invalid)}`);
      } else {
        // The watcher has read the broken file once the client is warned of it.
        await inbox.after("logs", l0, "a warning about the half-written Delta_Draft.json");
        const warning = inbox.logs.at(-1);
        assert.equal(warning.level, "warning");
        assert.equal(warning.data.path, "Delta_Draft.json");
        assert.match(warning.data.message, /template left out/);
      }
      assert.deepEqual(await names(), ["Alpha_Notes", "Beta_Check", "Gamma_Plan"]);
      const res = await client.getPrompt({ name: "Beta_Check", arguments: { subject: "s" } }, opts);
      assert.equal(res.messages[0].content.text, expectedPrompt(BETA, { subject: "s" }));

      // Finishing the file makes it appear: the watcher saw the broken one
      // and did not give up on it.
      const p0 = inbox.counts.prompts;
      writeFileSync(path, full);
      await inbox.after("prompts", p0, "list_changed after completing Delta_Draft");
      await eventually(async () =>
        assert.deepEqual(await names(), ["Alpha_Notes", "Beta_Check", "Delta_Draft", "Gamma_Plan"]),
      );
    });

    it("announces a changed file and serves the new content", async () => {
      const changed = structuredClone(GAMMA);
      changed.results[0].content = "A new plan for {{goal}}.";
      const p0 = inbox.counts.prompts;
      writeTemplate(folder.dir, changed);
      await inbox.after("prompts", p0, "list_changed after changing Gamma_Plan");
      await eventually(async () => {
        const res = await client.getPrompt({ name: "Gamma_Plan", arguments: { goal: "g" } }, opts);
        assert.equal(res.messages[0].content.text, expectedPrompt(changed, { goal: "g" }));
      });
    });

    it("announces a removed file and stops listing it", async () => {
      const p0 = inbox.counts.prompts;
      rmSync(join(folder.dir, "Gamma_Plan.json"));
      await inbox.after("prompts", p0, "list_changed after removing Gamma_Plan");
      await eventually(async () => assert.deepEqual(await names(), ["Alpha_Notes", "Beta_Check", "Delta_Draft"]));
    });

    it("the tools see the folder too", async () => {
      const res = await callTool({ name: "flowyprompt_list_templates", arguments: {} });
      assert.notEqual(res.isError, true);
      const text = res.content[0].text;
      for (const n of ["Alpha_Notes", "Beta_Check", "Delta_Draft"]) assert.ok(text.includes(n), n);
      assert.ok(!text.includes("Gamma_Plan"), "removed template is gone");
      assert.ok(!text.includes("Code_Review"), "no embedded examples");
    });

    if (modern) {
      it("tags every list_changed with the subscription's id", () => assertTagged(session.tap, inbox.changes));
    }
  });
}
