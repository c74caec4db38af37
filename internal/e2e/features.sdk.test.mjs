// The protocol features on top of prompts and tools, through the official
// TypeScript SDK client over stdio: templates as resources (list, read,
// subscribe → updated), argument completion, embedded resources in prompts,
// elicitation of missing variables (accepted, declined, unsupported),
// progress during refresh, and warnings as log messages.

import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import {
  ElicitRequestSchema,
  LoggingMessageNotificationSchema,
  ResourceUpdatedNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";

import { BIN, eventually, serverEnv, STEP_MS, SUITE_MS, tempDir, WATCH_MS, within } from "./helpers.mjs";

const opts = { timeout: STEP_MS };

function template(name, content, extra = {}) {
  return JSON.stringify({
    metadata: { name, description: `${name} template`, version: "1.0.0" },
    variables: [],
    results: [{ name: "s", content }],
    ...extra,
  });
}

async function connect(args, env, capabilities = {}) {
  const client = new Client({ name: "flowyprompt-e2e-features", version: "1.0.0" }, { capabilities });
  const transport = new StdioClientTransport({ command: BIN, args: ["serve", ...args], env, stderr: "pipe" });
  await within(client.connect(transport), STEP_MS, "connect");
  return client;
}

describe("resources, completion, embedded resources (folder source)", { timeout: SUITE_MS }, () => {
  let client;
  let tmp;
  let dir;
  const updates = [];
  const logs = [];

  before(async () => {
    tmp = tempDir();
    dir = join(tmp.dir, "templates");
    const { mkdirSync } = await import("node:fs");
    mkdirSync(dir);
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
    client = await connect(["--templates", dir], serverEnv(tmp.dir));
    client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => updates.push(n.params.uri));
    client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => logs.push(n.params));
  });

  after(async () => {
    await client?.close();
    tmp?.cleanup();
  });

  it("advertises resources (subscribe) and completions", opts, () => {
    const caps = client.getServerCapabilities();
    assert.equal(caps.resources?.subscribe, true);
    assert.ok(caps.completions, "completions capability");
    assert.ok(caps.logging, "logging capability");
  });

  it("lists and reads templates as template:// resources", opts, async () => {
    const { resources } = await client.listResources();
    assert.deepEqual(resources.map((r) => r.uri), ["template://Style", "template://Write", "template-file:///guides/voice.md"]);
    assert.ok(resources.slice(0, 2).every((r) => r.mimeType === "application/json"));
    assert.match(resources[2].mimeType, /^text\/markdown/);
    const { contents } = await client.readResource({ uri: "template://Style" });
    assert.equal(contents.length, 1);
    assert.equal(JSON.parse(contents[0].text).metadata.name, "Style");
    const { resourceTemplates } = await client.listResourceTemplates();
    assert.equal(resourceTemplates[0].uriTemplate, "template://{name}");
    await assert.rejects(client.readResource({ uri: "template://Nope" }), (err) => err.code === -32002);
  });

  it("reads the files templates list, and no other file of the folder", opts, async () => {
    const { contents } = await client.readResource({ uri: "template-file:///guides/voice.md" });
    assert.deepEqual(contents, [{ uri: "template-file:///guides/voice.md", mimeType: contents[0].mimeType, text: "# Voice\nSay it plainly.\n" }]);
    for (const uri of ["template-file:///.env", ".env", "template-file:///Style.json", "template-file:///../x"]) {
      await assert.rejects(
        client.readResource({ uri }),
        (err) => err.code === -32002 && !String(err.message).includes("do-not-serve"),
        `reading ${uri} must fail without its content`,
      );
    }
  });

  it("returns listed resources as embedded resources after the prompt text", opts, async () => {
    const res = await client.getPrompt({ name: "Write", arguments: { topic: "onboarding" } });
    assert.equal(res.messages.length, 3);
    assert.match(res.messages[0].content.text, /Write about onboarding in a friendly tone\./);
    assert.equal(res.messages[1].content.type, "resource");
    assert.equal(res.messages[1].content.resource.uri, "template://Style");
    assert.match(res.messages[1].content.resource.text, /Use short sentences\./);
    assert.equal(res.messages[2].content.type, "resource");
    assert.equal(res.messages[2].content.resource.uri, "template-file:///guides/voice.md");
    assert.equal(res.messages[2].content.resource.text, "# Voice\nSay it plainly.\n");
  });

  it("completes enum values, examples, and values the session used", opts, async () => {
    const ref = { type: "ref/prompt", name: "Write" };
    let r = await client.complete({ ref, argument: { name: "tone", value: "fr" } });
    assert.deepEqual(r.completion.values, ["friendly", "frank"]); // enum order
    // Examples first, then what this session used (the earlier prompts/get).
    r = await client.complete({ ref, argument: { name: "topic", value: "" } });
    assert.deepEqual(r.completion.values, ["release notes", "roadmap", "onboarding"]);
    await client.getPrompt({ name: "Write", arguments: { topic: "quarterly report" } });
    r = await client.complete({ ref, argument: { name: "topic", value: "q" } });
    assert.deepEqual(r.completion.values, ["quarterly report"]);
  });

  it("sends resources/updated to a subscriber when the template changes", { timeout: WATCH_MS + STEP_MS }, async () => {
    await client.subscribeResource({ uri: "template://Style" });
    writeFileSync(join(dir, "Style.json"), template("Style", "Use active voice."));
    await eventually(() => assert.ok(updates.includes("template://Style"), "resources/updated for template://Style"));
    const { contents } = await client.readResource({ uri: "template://Style" });
    assert.match(contents[0].text, /Use active voice\./);
  });

  it("reports a template that became invalid as a warning log message", { timeout: WATCH_MS + STEP_MS }, async () => {
    writeFileSync(join(dir, "Broken.json"), '{"metadata": {"name": "Broken"}');
    await eventually(() =>
      assert.ok(
        logs.some((l) => l.level === "warning" && l.data.path === "Broken.json" && /template left out/.test(l.data.message)),
        `a warning naming Broken.json, got ${JSON.stringify(logs)}`,
      ),
    );
  });
});

describe("elicitation of missing variables and progress (built-in examples)", { timeout: SUITE_MS }, () => {
  let tmp;
  before(() => {
    tmp = tempDir();
  });
  after(() => tmp?.cleanup());
  const call = {
    name: "flowyprompt_render_template",
    arguments: { name: "Brand_Positioning_Strategy", arguments: { company_name: "Acme" } },
  };

  it("asks for the missing variables and renders with the answers", opts, async () => {
    const client = await connect([], serverEnv(tmp.dir), { elicitation: {} });
    try {
      let asked;
      client.setRequestHandler(ElicitRequestSchema, async (req) => {
        asked = req.params;
        return { action: "accept", content: { industry: "Robotics", target_customer: "Factories" } };
      });
      const res = await client.callTool(call);
      assert.notEqual(res.isError, true, res.content?.[0]?.text);
      assert.deepEqual(asked.requestedSchema.required, ["industry", "target_customer"]);
      assert.match(res.structuredContent.text, /Robotics/);
      assert.match(res.structuredContent.text, /Factories/);
    } finally {
      await client.close();
    }
  });

  it("reports a declined form as a tool error", opts, async () => {
    const client = await connect([], serverEnv(tmp.dir), { elicitation: {} });
    try {
      client.setRequestHandler(ElicitRequestSchema, async () => ({ action: "decline" }));
      const res = await client.callTool(call);
      assert.equal(res.isError, true);
      assert.match(res.content[0].text, /decline/);
    } finally {
      await client.close();
    }
  });

  it("names the missing variables when the client cannot elicit", opts, async () => {
    const client = await connect([], serverEnv(tmp.dir));
    try {
      const res = await client.callTool(call);
      assert.equal(res.isError, true);
      assert.match(res.content[0].text, /industry/);
      assert.match(res.content[0].text, /target_customer/);
    } finally {
      await client.close();
    }
  });

  it("reports progress while refreshing when asked", opts, async () => {
    const client = await connect([], serverEnv(tmp.dir));
    try {
      // The SDK drops progress that arrives in the same read as the response
      // (notification handlers run a microtask later; typescript-sdk#2580),
      // a race no server can avoid, so count the notifications on the wire.
      const wire = [];
      const transport = client.transport;
      const deliver = transport.onmessage;
      transport.onmessage = (m) => {
        if (m.method === "notifications/progress") wire.push(m.params);
        deliver(m);
      };
      const res = await client.callTool({ name: "flowyprompt_refresh_templates", arguments: {} }, undefined, {
        onprogress: () => {},
      });
      assert.notEqual(res.isError, true);
      assert.ok(wire.length >= 2, `progress notifications: ${JSON.stringify(wire)}`);
      const token = wire[0].progressToken;
      assert.ok(wire.every((p) => p.progressToken === token), "one token, the request's");
      assert.equal(wire.at(-1).progress, wire.at(-1).total);
      for (let i = 1; i < wire.length; i++) assert.ok(wire[i].progress > wire[i - 1].progress);
    } finally {
      await client.close();
    }
  });
});
