// The protocol features on top of prompts and tools, against a template
// folder: templates and the files they list as resources (list, read,
// updates to a subscriber), argument completion, embedded resources in
// prompts. Shared by features.sdk.test.mjs (the 1.x SDK, the 2025 era) and
// modern.sdk2.test.mjs (the 2.x client, 2026-07-28), which differ where the
// revisions do: the code of an unknown resource, how a client subscribes,
// and whether the server has a session to remember values in.
//
// This file is not a test file (node --test only picks up *.test.mjs here).

import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";

import { eventually, STEP_MS, SUITE_MS, tempDir, WATCH_MS } from "./helpers.mjs";
import { SDK_V1 } from "./sdk-helpers.mjs";

const opts = { timeout: STEP_MS };

/** A template file's text: one section of content, no variables. */
function template(name, content, extra = {}) {
  return JSON.stringify({
    metadata: { name, description: `${name} template`, version: "1.0.0" },
    variables: [],
    results: [{ name: "s", content }],
    ...extra,
  });
}

/**
 * Writes the folder the suite serves into dir: Style (plain), Write (an
 * enum, examples, and two listed resources: Style and guides/voice.md), and
 * a .env file that must never be served.
 */
function writeFeatureFolder(dir) {
  writeFileSync(join(dir, "Style.json"), template("Style", "Use short sentences."));
  writeFileSync(
    join(dir, "Write.json"),
    JSON.stringify({
      metadata: { name: "Write", description: "Writes a text", version: "1.0.0" },
      variables: [
        { name: "tone", type: "string", description: "Tone", enum: ["formal", "friendly", "frank"], default: "friendly" },
        { name: "topic", type: "string", description: "Topic", required: true, examples: ["release notes", "roadmap"] },
      ],
      results: [{ name: "s", content: "Write about {{topic}} in a {{tone}} tone." }],
      resources: ["template://Style", "guides/voice.md"],
    }),
  );
  mkdirSync(join(dir, "guides"));
  writeFileSync(join(dir, "guides", "voice.md"), "# Voice\nSay it plainly.\n");
  writeFileSync(join(dir, ".env"), "SECRET=do-not-serve\n");
}

/**
 * The missing-variable case of the elicitation tests: the render tool
 * given one of Brand_Positioning_Strategy's three required variables, and
 * the answer to the form that asks for the other two.
 */
export const ELICIT_CALL = {
  name: "flowyprompt_render_template",
  arguments: { name: "Brand_Positioning_Strategy", arguments: { company_name: "Acme" } },
};
export const ELICIT_MISSING = ["industry", "target_customer"];
export const ELICIT_ANSWER = { industry: "Robotics", target_customer: "Factories" };

/**
 * Registers a describe block of the feature checks, with a client of sdk
 * (SDK_V1 unless told) that start(dir, setup) connects to `flowyprompt
 * serve --templates dir`, calling setup(client) before the connect. start
 * resolves to { client, stop(), tap? } (tap: tapTransport's record, which a
 * modern session has).
 */
export function featureSuite(title, start, { sdk = SDK_V1 } = {}) {
  describe(title, { timeout: SUITE_MS }, () => {
    let session;
    let client;
    let tmp;
    let dir;
    const updates = [];
    const logs = [];
    const modern = sdk.era === "modern";
    // 2026-07-28 folded "resource not found" (-32002) into invalid params.
    const notFound = modern ? -32602 : -32002;

    before(async () => {
      tmp = tempDir();
      dir = join(tmp.dir, "templates");
      mkdirSync(dir);
      writeFeatureFolder(dir);
      session = await start(dir, (c) => {
        sdk.on(c, "notifications/resources/updated", (n) => updates.push(n.params));
        sdk.on(c, "notifications/message", (n) => logs.push(n.params));
      });
      client = session.client;
    });

    after(async () => {
      await session?.stop();
      tmp?.cleanup();
    });

    it("advertises resources (subscribe) and completions", opts, () => {
      const caps = client.getServerCapabilities();
      assert.equal(caps.resources?.subscribe, true);
      assert.ok(caps.completions, "completions capability");
      assert.ok(caps.logging, "logging capability");
    });

    it("lists and reads templates as template:// resources", opts, async () => {
      const { resources } = await client.listResources({}, opts);
      assert.deepEqual(resources.map((r) => r.uri), ["template://Style", "template://Write", "template-file:///guides/voice.md"]);
      assert.ok(resources.slice(0, 2).every((r) => r.mimeType === "application/json"));
      assert.match(resources[2].mimeType, /^text\/markdown/);
      const { contents } = await client.readResource({ uri: "template://Style" }, opts);
      assert.equal(contents.length, 1);
      assert.equal(JSON.parse(contents[0].text).metadata.name, "Style");
      const { resourceTemplates } = await client.listResourceTemplates({}, opts);
      assert.equal(resourceTemplates[0].uriTemplate, "template://{name}");
      const err = await client.readResource({ uri: "template://Nope" }, opts).then(
        (res) => assert.fail(`template://Nope was read: ${JSON.stringify(res)}`),
        (e) => e,
      );
      assert.ok(err instanceof sdk.ProtocolError, `${sdk.ProtocolError.name}, got ${err}`);
      assert.equal(err.code, notFound);
      assert.equal(err.data?.code, "RESOURCE_NOT_FOUND");
      assert.equal(err.data.uri, "template://Nope", "error.data names the uri");
    });

    if (modern) {
      it("tells a client to cache a folder's lists and resources for five seconds", opts, async () => {
        const fresh = { ...opts, ...sdk.fresh };
        for (const res of [await client.listResources({}, fresh), await client.readResource({ uri: "template://Style" }, fresh)]) {
          assert.equal(res.ttlMs, 5_000);
          assert.equal(res.cacheScope, "public");
        }
      });
    }

    it("reads the files templates list, and no other file of the folder", opts, async () => {
      const { contents } = await client.readResource({ uri: "template-file:///guides/voice.md" }, opts);
      assert.deepEqual(contents, [{ uri: "template-file:///guides/voice.md", mimeType: contents[0].mimeType, text: "# Voice\nSay it plainly.\n" }]);
      for (const uri of ["template-file:///.env", ".env", "template-file:///Style.json", "template-file:///../x"]) {
        await assert.rejects(
          client.readResource({ uri }, opts),
          (err) => err.code === notFound && !String(err.message).includes("do-not-serve"),
          `reading ${uri} must fail without its content`,
        );
      }
    });

    it("returns listed resources as embedded resources after the prompt text", opts, async () => {
      const res = await client.getPrompt({ name: "Write", arguments: { topic: "onboarding" } }, opts);
      assert.equal(res.messages.length, 3);
      assert.match(res.messages[0].content.text, /Write about onboarding in a friendly tone\./);
      assert.equal(res.messages[1].content.type, "resource");
      assert.equal(res.messages[1].content.resource.uri, "template://Style");
      assert.match(res.messages[1].content.resource.text, /Use short sentences\./);
      assert.equal(res.messages[2].content.type, "resource");
      assert.equal(res.messages[2].content.resource.uri, "template-file:///guides/voice.md");
      assert.equal(res.messages[2].content.resource.text, "# Voice\nSay it plainly.\n");
    });

    // A 2025 session remembers the values its client used and offers them;
    // a 2026 request has no session, so nothing it used is offered to any
    // client (over HTTP, another user's).
    const used = modern ? "completes enum values and examples, never values used before" : "completes enum values, examples, and values the session used";
    it(used, opts, async () => {
      const ref = { type: "ref/prompt", name: "Write" };
      let r = await client.complete({ ref, argument: { name: "tone", value: "fr" } }, opts);
      assert.deepEqual(r.completion.values, ["friendly", "frank"]); // enum order
      // Examples first, then what this session used (the earlier prompts/get).
      r = await client.complete({ ref, argument: { name: "topic", value: "" } }, opts);
      assert.deepEqual(r.completion.values, ["release notes", "roadmap", ...(modern ? [] : ["onboarding"])]);
      await client.getPrompt({ name: "Write", arguments: { topic: "quarterly report" } }, opts);
      r = await client.complete({ ref, argument: { name: "topic", value: "q" } }, opts);
      assert.deepEqual(r.completion.values, modern ? [] : ["quarterly report"]);
    });

    it("sends resources/updated to a subscriber when the template changes", { timeout: WATCH_MS + STEP_MS }, async () => {
      const sub = await sdk.listen(client, { resourceSubscriptions: ["template://Style"] });
      try {
        writeFileSync(join(dir, "Style.json"), template("Style", "Use active voice."));
        await eventually(() => assert.ok(updates.some((u) => u.uri === "template://Style"), "resources/updated for template://Style"));
        const { contents } = await client.readResource({ uri: "template://Style" }, { ...opts, ...sdk.fresh });
        assert.match(contents[0].text, /Use active voice\./);
        if (modern) assertTagged(session.tap, updates);
      } finally {
        await sub.close();
      }
    });

    if (!modern) {
      // A 2026 request hears only its own log messages: a file going bad
      // is no request's.
      it("reports a template that became invalid as a warning log message", { timeout: WATCH_MS + STEP_MS }, async () => {
        writeFileSync(join(dir, "Broken.json"), '{"metadata": {"name": "Broken"}');
        await eventually(() =>
          assert.ok(
            logs.some((l) => l.level === "warning" && l.data.path === "Broken.json" && /template left out/.test(l.data.message)),
            `a warning naming Broken.json, got ${JSON.stringify(logs)}`,
          ),
        );
      });
    }
  });
}

/**
 * Asserts that each of notifications (their params) carries in _meta the
 * id of a subscriptions/listen request the client sent (tap records them),
 * as 2026-07-28 tags what a subscription relays.
 */
export function assertTagged(tap, notifications) {
  const ids = tap.sent.filter((m) => m.method === "subscriptions/listen").map((m) => m.id);
  assert.ok(ids.length > 0, "the client sent subscriptions/listen");
  assert.ok(notifications.length > 0, "notifications to check");
  for (const p of notifications) {
    const id = p?._meta?.["io.modelcontextprotocol/subscriptionId"];
    assert.ok(ids.includes(id), `tagged with a subscription id (${JSON.stringify(ids)}): ${JSON.stringify(p)}`);
  }
}
