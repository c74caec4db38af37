// The formats teams already keep, served beside our JSON: GitHub Models'
// .prompt.yml, dotprompt's .prompt and Prompty's .prompty files, written as
// each format's documentation shows them (templates/testdata/formats), in
// one folder served over stdio and over Streamable HTTP (/mcp) to the
// TypeScript SDK client. Checked: the prompt names (the file's base name),
// titles (the file's own name), arguments from the declared inputs or the
// placeholders, the messages (a system message first, as a user message;
// dotprompt's model role as assistant), the model settings in _meta, and
// the file served as a resource in its own media type.

import assert from "node:assert/strict";
import { copyFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

import { firstText, REPO, startHTTP, STEP_MS, SUITE_MS, tempDir, within } from "./helpers.mjs";
import { stdioClient } from "./sdk-helpers.mjs";

const opts = { timeout: STEP_MS };
const FORMATS = join(REPO, "templates", "testdata", "formats");
const MODEL_META = "io.flowyprompt/model";

const SUMMARY_SYSTEM = "You are a text summarizer. Your only job is to summarize text given to you.";
const TEXT = "The quick brown fox jumped over the lazy dog.\nThe dog was too tired to react.";

/** What each file is served as: prompts/list's entry and a prompts/get. */
const CASES = [
  {
    name: "summarize",
    title: "Text Summarizer",
    description: "Summarizes input text concisely",
    arguments: [{ name: "input", required: true }],
    model: { name: "openai/gpt-4o-mini", parameters: { temperature: 0.5 } },
    args: { input: TEXT },
    messages: [
      ["user", SUMMARY_SYSTEM],
      ["user", `Summarize the given text, beginning with "Summary -":\n<text>\n${TEXT}\n</text>`],
    ],
    mime: "application/yaml",
  },
  {
    name: "greet",
    title: "greet",
    arguments: [
      { name: "location", required: false },
      { name: "style", required: false },
      { name: "name", required: false },
    ],
    model: { name: "googleai/gemini-1.5-flash", parameters: { temperature: 0.9 } },
    // location is left out: its default fills it.
    args: { name: "Ada", style: "a pirate" },
    messages: [
      ["user", "You are the world's most welcoming AI assistant and are currently working at a restaurant.\n\n" +
        "Greet a guest named Ada in the style of a pirate."],
    ],
    mime: "text/markdown",
  },
  {
    name: "typed",
    title: "typed",
    description: "Inputs of every type",
    arguments: [
      { name: "topic", required: true },
      { name: "count", required: true },
      { name: "ratio", required: false },
      { name: "formal", required: false },
      { name: "tone", required: false },
    ],
    args: { topic: "rain", count: "3", tone: "dry" },
    messages: [
      ["user", "Be dry."],
      ["user", "Write 3 lines on rain (0.5, false)."],
      ["assistant", "Here they are:"],
    ],
    mime: "text/markdown",
  },
  {
    name: "chat",
    title: "ExamplePrompt",
    description: "A prompt that uses context to ground an incoming question",
    arguments: [
      { name: "firstName", required: true },
      { name: "context", required: true },
      { name: "question", required: true },
    ],
    model: { name: "<your-deployment>", parameters: { max_tokens: 3000 } },
    args: { firstName: "Jane", context: "Tents are waterproof.", question: "Are the tents waterproof?" },
    messages: [
      ["user", "You are an AI assistant who helps people find information. As the assistant, \n" +
        "you answer questions briefly, succinctly, and in a personable manner using \n" +
        "markdown and even add some personal flair with appropriate emojis.\n\n# Customer\n" +
        "You are helping Jane to find answers to their questions.\nUse their name to address them in your responses.\n\n" +
        "# Context\nUse the following context to provide a more personalized response to Jane:\nTents are waterproof."],
      ["user", "Are the tents waterproof?"],
    ],
    mime: "text/markdown",
  },
  {
    name: "support",
    title: "Support",
    description: "Answers a customer",
    arguments: [
      { name: "customer", required: false },
      { name: "question", required: true },
    ],
    model: { name: "gpt-4o", parameters: { temperature: 0.2 } },
    args: { question: "Where is my order?" },
    messages: [
      ["user", "You answer support questions kindly."],
      ["user", "Hi, I am there. Where is my order?"],
      ["assistant", "Let me look into that."],
    ],
    mime: "text/markdown",
  },
];

/** The checks, against a client connected to a server of the folder. */
function formatChecks(title, connect) {
  describe(title, { timeout: SUITE_MS }, () => {
    let session;
    before(async () => {
      session = await connect();
    });
    after(async () => {
      await session?.stop();
    });

    it("lists each file as a prompt named after it, titled by it, with its arguments and model", async () => {
      const { prompts } = await session.client.listPrompts({}, opts);
      const byName = Object.fromEntries(prompts.map((p) => [p.name, p]));
      assert.deepEqual(Object.keys(byName).sort(), ["Fixture_Template", "chat", "food_chat", "greet", "summarize", "support", "typed"]);
      for (const c of CASES) {
        const p = byName[c.name];
        assert.equal(p.title, c.title, c.name);
        assert.equal(p.description ?? "", c.description ?? "", c.name);
        assert.deepEqual(p.arguments.map(({ name, required }) => ({ name, required })), c.arguments, c.name);
        assert.deepEqual(p._meta?.[MODEL_META], c.model, `${c.name} _meta`);
      }
      assert.equal(byName.Fixture_Template._meta, undefined, "a JSON template has no model settings");
    });

    for (const c of CASES) {
      it(`prompts/get ${c.name}: its messages, roles mapped, and its model`, async () => {
        const res = await session.client.getPrompt({ name: c.name, arguments: c.args }, opts);
        assert.deepEqual(res.messages.map((m) => [m.role, m.content.text]), c.messages);
        assert.deepEqual(res._meta?.[MODEL_META], c.model);
      });
    }

    it("a required input left out is MISSING_REQUIRED_VARIABLE naming it", async () => {
      await assert.rejects(session.client.getPrompt({ name: "summarize", arguments: {} }, opts), (err) => {
        assert.equal(err.data?.code, "MISSING_REQUIRED_VARIABLE");
        assert.deepEqual(err.data?.details?.missing, ["input"]);
        return true;
      });
    });

    it("the get tool shows the model settings, and the file is a resource in its own type", async () => {
      const res = await session.client.callTool({ name: "flowyprompt_get_template", arguments: { name: "summarize" } }, undefined, opts);
      assert.ok(!res.isError, firstText(res));
      assert.match(firstText(res), /## Model\n- Name: openai\/gpt-4o-mini\n- temperature: 0\.5\n/);
      assert.deepEqual(res.structuredContent.model, CASES[0].model);
      assert.equal(res.structuredContent.format, "prompt-yml");
      for (const c of CASES) {
        const { contents } = await session.client.readResource({ uri: `template://${c.name}` }, opts);
        assert.equal(contents[0].mimeType, c.mime, c.name);
      }
    });
  });
}

/** A folder holding the format files and one JSON template. */
function library() {
  const lib = tempDir("flowyprompt-e2e-formats-");
  for (const f of readdirSync(FORMATS)) copyFileSync(join(FORMATS, f), join(lib.dir, f));
  copyFileSync(join(REPO, "templates", "testdata", "Fixture_Template.json"), join(lib.dir, "Fixture_Template.json"));
  return lib;
}

formatChecks("the formats over stdio", async () => {
  const lib = library();
  const s = await stdioClient({ args: ["serve", "--templates", lib.dir], name: "formats-stdio" });
  return {
    client: s.client,
    async stop() {
      await s.close();
      lib.cleanup();
    },
  };
});

formatChecks("the formats over Streamable HTTP (/mcp)", async () => {
  const lib = library();
  const server = await startHTTP(["--templates", lib.dir]);
  const client = new Client({ name: "formats-http", version: "0.0.0" }, { capabilities: {} });
  await within(client.connect(new StreamableHTTPClientTransport(new URL(`${server.base}/mcp`))), STEP_MS, "connect");
  return {
    client,
    async stop() {
      await within(client.close(), STEP_MS, "client.close").catch(() => {});
      await server.stop();
      lib.cleanup();
    },
  };
});
