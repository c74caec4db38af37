// The checks every SDK client transport must pass against the embedded
// example library, shared by stdio.sdk.test.mjs, http.sdk.test.mjs and
// modern.sdk2.test.mjs so that stdio, legacy SSE and Streamable HTTP, in
// both protocol eras, are held to the same promises of PROTOCOL.md,
// TEMPLATES.md and TOOLS.md; and the stdio client that the SDK tests start.
//
// This file is not a test file (node --test only picks up *.test.mjs here).

import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import {
  LoggingMessageNotificationSchema,
  McpError,
  PromptListChangedNotificationSchema,
  ResourceListChangedNotificationSchema,
  ResourceUpdatedNotificationSchema,
  ToolListChangedNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";

import {
  BIN,
  exampleTemplate,
  expectedPrompt,
  firstText,
  listAll,
  rejection,
  serverEnv,
  STEP_MS,
  SUITE_MS,
  tempDir,
  TOOL_NAMES,
  within,
} from "./helpers.mjs";

const opts = { timeout: STEP_MS };

const CODE = 'func add(a, b int) int {\n\treturn a - b // {{purpose}} stays literal\n}';

/**
 * What the shared suites need to know of an SDK generation: how it makes a
 * client and a stdio transport, calls a tool, hears a notification (on)
 * and subscribes to changes (listen), the class of the errors the server
 * answers with, the request options that skip a client cache, and the
 * protocol era it speaks: "legacy" (2025: initialize, then
 * a session) or "modern" (2026-07-28: every request on its own). This one
 * is @modelcontextprotocol/sdk 1.x, which speaks the legacy era only;
 * sdk2-helpers.mjs has the 2.x client's.
 */
export const SDK_V1 = {
  era: "legacy",
  ProtocolError: McpError,
  StdioClientTransport,
  client: (name, capabilities = {}) => new Client({ name, version: "0.0.0" }, { capabilities }),
  callTool: (client, params, options) => client.callTool(params, undefined, options),
  fresh: {},
  // 1.x takes a notification's schema where 2.x takes its method.
  on: (client, method, handler) => client.setNotificationHandler(V1_NOTIFICATIONS[method], handler),
  // The legacy era's subscriptions: list changes reach every session
  // unasked; a resource's updates once it is subscribed to.
  async listen(client, { resourceSubscriptions = [] }) {
    for (const uri of resourceSubscriptions) await client.subscribeResource({ uri }, opts);
    return { close: async () => {} };
  },
};

const V1_NOTIFICATIONS = {
  "notifications/message": LoggingMessageNotificationSchema,
  "notifications/prompts/list_changed": PromptListChangedNotificationSchema,
  "notifications/resources/list_changed": ResourceListChangedNotificationSchema,
  "notifications/resources/updated": ResourceUpdatedNotificationSchema,
  "notifications/tools/list_changed": ToolListChangedNotificationSchema,
};

/**
 * Spawns `flowyprompt ARGS` (or command, such as a bundle's) under the
 * StdioClientTransport of sdk (SDK_V1 unless told) with a hermetic environment (serverEnv over a private cache
 * directory, plus extraEnv) and connects a Client declaring capabilities,
 * with the connect options connect; setup(client, transport) runs before
 * the connect, so notification handlers miss nothing. Resolves to
 * { client, transport, stderr(), close() }: close() closes the client,
 * makes sure the child is gone even when that failed, and removes the
 * cache directory.
 */
export async function stdioClient({
  command = BIN,
  args = ["serve"],
  extraEnv = {},
  name = "flowyprompt-e2e-sdk",
  setup = () => {},
  sdk = SDK_V1,
  capabilities = {},
  connect = {},
} = {}) {
  const cache = tempDir("flowyprompt-e2e-cache-");
  let stderr = "";
  const transport = new sdk.StdioClientTransport({
    command,
    args,
    env: serverEnv(cache.dir, extraEnv),
    stderr: "pipe",
  });
  // Reading it also drains it: a full pipe would block the server's logs.
  transport.stderr.setEncoding("utf8");
  transport.stderr.on("data", (d) => {
    stderr = (stderr + d).slice(-20_000);
  });
  const client = sdk.client(name, capabilities);
  setup(client, transport);
  const close = async () => {
    await within(client.close(), STEP_MS, "client.close").catch(() => {});
    // close() ends the child; make sure of it even if close failed.
    const pid = transport.pid;
    if (pid) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // already gone
      }
    }
    cache.cleanup();
  };
  try {
    await within(client.connect(transport, { ...opts, ...connect }), STEP_MS, "connect");
  } catch (err) {
    await close();
    throw err;
  }
  return { client, transport, stderr: () => stderr, close };
}

/**
 * The start function of the folder suites (features-suite.mjs,
 * folder-suite.mjs) over stdio: stdioClient with options, serving the
 * folder dir, setup(client) run before the connect.
 */
export function stdioFolder(name, options = {}) {
  return async (dir, setup) => {
    const s = await stdioClient({ ...options, args: ["serve", "--templates", dir], name, setup });
    return { ...s, stop: s.close };
  };
}

/**
 * Registers a describe block, titled title, that runs every SDK-level check
 * against a client of sdk (SDK_V1 unless told) that start() connects to a
 * server serving the embedded examples. start resolves to { client,
 * stop() }; stop() ends the client and the server and asserts whatever the
 * transport promises about a clean end. more(session), when given,
 * registers further tests in the block; session() returns what start
 * resolved to.
 */
export function sdkSuite(title, start, { sdk = SDK_V1, more } = {}) {
  describe(title, { timeout: SUITE_MS }, () => {
    let session;
    let client;
    const callTool = (params) => sdk.callTool(client, params, opts);
    const assertProtocolError = (err) =>
      assert.ok(err instanceof sdk.ProtocolError, `${sdk.ProtocolError.name}, got ${err?.stack ?? err}`);
    // Lists that must reach the server, whatever a client cache holds.
    const listOpts = { ...opts, ...sdk.fresh };

    before(async () => {
      session = await start();
      client = session.client;
    });

    after(async () => {
      await session?.stop();
    });

    it("reports server info and list_changed capabilities", () => {
      const info = client.getServerVersion();
      assert.ok(info, "serverInfo present");
      assert.match(info.name, /flowyprompt/i);
      assert.equal(typeof info.version, "string");
      assert.ok(info.version.length > 0, "serverInfo.version non-empty");
      const caps = client.getServerCapabilities();
      assert.equal(caps.prompts?.listChanged, true, "prompts.listChanged");
      assert.equal(caps.tools?.listChanged, true, "tools.listChanged");
    });

    if (sdk.era === "legacy") {
      // The modern era has no ping: every request stands on its own.
      it("answers ping with an empty result", async () => {
        assert.deepEqual(await client.ping(opts), {});
      });
    }

    it("lists at least 10 prompts, each described, in a deterministic order", async () => {
      const first = await listAll((p) => client.listPrompts(p, listOpts), "prompts");
      const second = await listAll((p) => client.listPrompts(p, listOpts), "prompts");
      assert.ok(first.length >= 10, `got ${first.length} prompts`);
      assert.deepEqual(second, first, "two listings are identical");
      const names = first.map((p) => p.name);
      assert.equal(new Set(names).size, names.length, "prompt names are unique");
      for (const p of first) {
        assert.equal(typeof p.description, "string", `${p.name}: description`);
        assert.ok(p.description.trim().length > 0, `${p.name}: description non-empty`);
        assert.ok(Array.isArray(p.arguments), `${p.name}: arguments is an array`);
        for (const a of p.arguments) {
          assert.ok(a.name, `${p.name}: argument has a name`);
          assert.ok(a.description?.trim(), `${p.name}.${a.name}: argument description`);
        }
      }
    });

    it("lists each example's variables as its prompt's arguments", async () => {
      const prompts = await listAll((p) => client.listPrompts(p, listOpts), "prompts");
      for (const name of ["Code_Review", "Brand_Positioning_Strategy", "Meeting_Summary", "Commit_Message"]) {
        const t = exampleTemplate(name);
        const p = prompts.find((x) => x.name === name);
        assert.ok(p, `${name} is listed`);
        assert.equal(p.description, t.metadata.description);
        assert.deepEqual(
          p.arguments.map((a) => ({ name: a.name, required: a.required === true })),
          t.variables.map((v) => ({ name: v.name, required: v.required === true })),
          `${name}: arguments`,
        );
        // The server may append hints ("(default: …)", "(one of: …)") for
        // clients that offer no completion; the author's text comes first.
        for (const [i, v] of t.variables.entries()) {
          assert.ok(
            p.arguments[i].description.startsWith(v.description),
            `${name}.${v.name}: description starts with the variable's: ${p.arguments[i].description}`,
          );
        }
      }
    });

    const renderCases = [
      {
        name: "Code_Review",
        args: { code: CODE, language: "Go", focus: "correctness" },
      },
      {
        // Korean sections and values; "purpose" left empty takes its default.
        name: "Brand_Positioning_Strategy",
        args: { company_name: "테크스타트업", industry: "AI", target_customer: "B2B SaaS 기업" },
      },
      {
        name: "Commit_Message",
        args: { diff: "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b", why: "" },
      },
    ];

    for (const tc of renderCases) {
      it(`prompts/get ${tc.name} renders exactly the documented markdown`, async () => {
        const res = await client.getPrompt({ name: tc.name, arguments: tc.args }, opts);
        assert.equal(res.messages.length, 1, "one message");
        const [msg] = res.messages;
        assert.equal(msg.role, "user");
        assert.equal(msg.content.type, "text");
        assert.equal(msg.content.text, expectedPrompt(exampleTemplate(tc.name), tc.args));
      });
    }

    it("prompts/get without the required arguments names every missing one", async () => {
      // No example is all-optional (that case runs against a folder in
      // listchanged.test.mjs); Brand_Positioning_Strategy has three required.
      const t = exampleTemplate("Brand_Positioning_Strategy");
      const required = t.variables.filter((v) => v.required).map((v) => v.name);
      assert.equal(required.length, 3);
      const err = await rejection(
        client.getPrompt({ name: t.metadata.name, arguments: {} }, opts),
        "getPrompt without arguments",
      );
      assertProtocolError(err);
      assert.equal(err.code, -32602);
      assert.equal(err.data?.code, "MISSING_REQUIRED_VARIABLE");
      for (const name of required) {
        assert.ok(err.message.includes(name), `message names ${name}: ${err.message}`);
        assert.ok(JSON.stringify(err.data).includes(name), `data names ${name}`);
      }
    });

    it("prompts/get with some required arguments names only the missing ones", async () => {
      const err = await rejection(
        client.getPrompt(
          { name: "Brand_Positioning_Strategy", arguments: { company_name: "ACME" } },
          opts,
        ),
        "getPrompt with one of three",
      );
      assertProtocolError(err);
      assert.equal(err.code, -32602);
      assert.equal(err.data?.code, "MISSING_REQUIRED_VARIABLE");
      assert.match(err.message, /industry/);
      assert.match(err.message, /target_customer/);
      assert.doesNotMatch(err.message, /company_name/);
    });

    it("prompts/get of an unknown prompt suggests the right name", async () => {
      const err = await rejection(
        client.getPrompt({ name: "Code_Reveiw", arguments: { code: "x" } }, opts),
        "getPrompt Code_Reveiw",
      );
      assertProtocolError(err);
      assert.equal(err.code, -32602);
      assert.equal(err.data?.code, "TEMPLATE_NOT_FOUND");
      assert.ok(Array.isArray(err.data.suggestions), "data.suggestions is an array");
      assert.ok(err.data.suggestions.includes("Code_Review"), `suggestions: ${err.data.suggestions}`);
    });

    // TEMPLATES.md limits each value to 10,000 characters (not bytes: the
    // value that fits is three bytes a character in UTF-8).
    const MAX_VALUE = 10_000;

    it("prompts/get takes a value of exactly 10,000 characters", async () => {
      const args = { code: "가".repeat(MAX_VALUE) };
      const res = await client.getPrompt({ name: "Code_Review", arguments: args }, opts);
      assert.equal(res.messages[0].content.text, expectedPrompt(exampleTemplate("Code_Review"), args));
    });

    it("prompts/get with a value over 10,000 characters is -32602 naming the variable and the limit", async () => {
      const err = await rejection(
        client.getPrompt({ name: "Code_Review", arguments: { code: "x".repeat(MAX_VALUE + 1) } }, opts),
        "getPrompt with a 10,001-character value",
      );
      assertProtocolError(err);
      assert.equal(err.code, -32602);
      assert.equal(err.data?.code, "INVALID_ARGUMENT");
      assert.deepEqual(err.data.details, { variable: "code", length: MAX_VALUE + 1, maxLength: MAX_VALUE });
      assert.match(err.message, /"code"/);
      assert.match(err.message, /10000/);
    });

    it("render tool with a value over 10,000 characters is a tool error naming the limit", async () => {
      const res = await callTool({
        name: "flowyprompt_render_template",
        arguments: { name: "Code_Review", arguments: { code: "x".repeat(MAX_VALUE + 1) } },
      });
      assert.equal(res.isError, true);
      const text = firstText(res);
      assert.match(text, /INVALID_ARGUMENT/);
      assert.match(text, /arguments\.code/, "names the variable");
      assert.match(text, /10000/, "names the limit");
    });

    it("lists the nine tools, described, object schemas, read-only", async () => {
      const tools = await listAll((p) => client.listTools(p, listOpts), "tools");
      assert.deepEqual(tools.map((t) => t.name).sort(), [...TOOL_NAMES].sort());
      for (const t of tools) {
        assert.ok(t.description?.trim(), `${t.name}: description`);
        assert.equal(t.inputSchema?.type, "object", `${t.name}: inputSchema.type`);
        assert.equal(t.annotations?.readOnlyHint, true, `${t.name}: readOnlyHint`);
        assert.match(t.name, /^[A-Za-z0-9_.-]{1,128}$/, `${t.name}: tool-name rules`);
      }
      const again = await listAll((p) => client.listTools(p, listOpts), "tools");
      assert.deepEqual(again, tools, "deterministic");
    });

    it("render tool returns the same text as prompts/get, with structuredContent", async () => {
      const args = { code: CODE, purpose: "add two numbers" };
      const prompt = await client.getPrompt({ name: "Code_Review", arguments: args }, opts);
      const want = prompt.messages[0].content.text;
      assert.equal(want, expectedPrompt(exampleTemplate("Code_Review"), args));
      const res = await callTool(
        { name: "flowyprompt_render_template", arguments: { name: "Code_Review", arguments: args } },
      );
      assert.notEqual(res.isError, true, firstText(res));
      assert.ok(firstText(res).includes(want), "content[0].text contains the prompts/get text");
      assert.equal(typeof res.structuredContent, "object");
      assert.ok(res.structuredContent !== null, "structuredContent present");
      assert.ok(
        JSON.stringify(res.structuredContent).includes(JSON.stringify(want).slice(1, -1)),
        "structuredContent carries the rendered text",
      );
    });

    it("render tool without required arguments is a tool error naming them", async () => {
      const res = await callTool({
        name: "flowyprompt_render_template",
        arguments: { name: "Brand_Positioning_Strategy", arguments: { company_name: "ACME" } },
      });
      assert.equal(res.isError, true);
      const text = firstText(res);
      assert.match(text, /industry/);
      assert.match(text, /target_customer/);
      assert.match(text, /MISSING_REQUIRED_VARIABLE/);
    });

    it("render tool with an unknown template is a tool error with a suggestion", async () => {
      const res = await callTool(
        { name: "flowyprompt_render_template", arguments: { name: "Code_Reveiw", arguments: { code: "x" } } },
      );
      assert.equal(res.isError, true);
      const text = firstText(res);
      assert.match(text, /TEMPLATE_NOT_FOUND/);
      assert.match(text, /Code_Review/);
    });

    it("render tool with arguments of the wrong type is a tool error, not a protocol error", async () => {
      const res = await callTool({ name: "flowyprompt_render_template", arguments: { name: 42 } });
      assert.equal(res.isError, true);
      assert.match(firstText(res), /name/);
    });

    it("calling an unknown tool is a JSON-RPC -32602 error", async () => {
      const err = await rejection(
        callTool({ name: "flowyprompt_no_such_tool", arguments: {} }),
        "unknown tool",
      );
      assertProtocolError(err);
      assert.equal(err.code, -32602);
      assert.equal(err.data?.code, "TOOL_NOT_FOUND");
      assert.match(err.message, /flowyprompt_no_such_tool/);
    });

    it("list tool lists the examples", async () => {
      const res = await callTool({ name: "flowyprompt_list_templates", arguments: {} });
      assert.notEqual(res.isError, true, firstText(res));
      const text = firstText(res);
      assert.match(text, /Code_Review/);
      assert.ok(res.structuredContent, "structuredContent present");
      assert.match(JSON.stringify(res.structuredContent), /Code_Review/);
    });

    it("list tool pages with limit and cursor through every template once", async () => {
      const prompts = await listAll((p) => client.listPrompts(p, listOpts), "prompts");
      const seen = [];
      let cursor;
      for (let page = 0; page < 20; page++) {
        const args = cursor === undefined ? { limit: 5 } : { limit: 5, cursor };
        const res = await callTool({ name: "flowyprompt_list_templates", arguments: args });
        assert.notEqual(res.isError, true, firstText(res));
        const sc = res.structuredContent;
        assert.ok(Array.isArray(sc?.templates), "structuredContent.templates");
        assert.ok(sc.templates.length <= 5, `page ${page} has ${sc.templates.length} > limit`);
        seen.push(...sc.templates.map((t) => t.name));
        cursor = sc.next_cursor;
        if (!cursor) break;
        // The text carries the cursor too: text-only clients (Void) need it.
        assert.ok(firstText(res).includes(cursor), "content[0].text shows the next cursor");
      }
      assert.equal(cursor, undefined, "pagination ends");
      // Flows are prompts (flow:NAME) but not templates.
      const templates = prompts.map((p) => p.name).filter((n) => !n.startsWith("flow:"));
      assert.deepEqual([...seen].sort(), templates.sort(), "every template exactly once");
    });

    const searches = [
      { query: "브랜드", want: "Brand_Positioning_Strategy" },
      { query: "code review", want: "Code_Review" },
      { query: "meeting", want: "Meeting_Summary" },
    ];
    for (const { query, want } of searches) {
      it(`search tool finds ${want} for ${JSON.stringify(query)}`, async () => {
        const res = await callTool({ name: "flowyprompt_search_templates", arguments: { query } });
        assert.notEqual(res.isError, true, firstText(res));
        assert.ok(firstText(res).includes(want), firstText(res).slice(0, 2000));
        assert.ok(JSON.stringify(res.structuredContent ?? {}).includes(want), "structuredContent has it");
      });
    }

    it("get tool returns the definition with its variables", async () => {
      const res = await callTool({ name: "flowyprompt_get_template", arguments: { name: "Code_Review" } });
      assert.notEqual(res.isError, true, firstText(res));
      const text = firstText(res);
      for (const v of exampleTemplate("Code_Review").variables) {
        assert.ok(text.includes(v.name), `text mentions variable ${v.name}`);
      }
      assert.match(JSON.stringify(res.structuredContent), /"Code_Review"/);
    });

    it("get tool with an unknown name is a tool error", async () => {
      const res = await callTool({ name: "flowyprompt_get_template", arguments: { name: "Code_Reveiw" } });
      assert.equal(res.isError, true);
      assert.match(firstText(res), /Code_Review/);
    });

    it("validate tool accepts a valid template", async () => {
      const template = JSON.stringify(exampleTemplate("Commit_Message"));
      const res = await callTool({ name: "flowyprompt_validate_template", arguments: { template } });
      assert.notEqual(res.isError, true, firstText(res));
      assert.ok(firstText(res).length > 0);
      assert.ok(res.structuredContent, "structuredContent present");
    });

    it("validate tool reports an invalid template's errors with a pointer", async () => {
      const t = exampleTemplate("Commit_Message");
      t.metadata.version = "one";
      const res = await callTool({ name: "flowyprompt_validate_template", arguments: { template: JSON.stringify(t) } });
      // Whether "the template is invalid" is a tool error or a successful
      // report is the server's choice; the report must point at the field.
      assert.match(firstText(res), /\/metadata\/version|metadata\.version/);
    });

    it("refresh tool succeeds", async () => {
      const res = await callTool({ name: "flowyprompt_refresh_templates", arguments: {} });
      assert.notEqual(res.isError, true, firstText(res));
      assert.ok(firstText(res).trim().length > 0);
    });

    it("keeps answering many requests in flight at once", async () => {
      const names = ["Code_Review", "Commit_Message", "Meeting_Summary", "Bug_Triage"];
      const calls = [];
      for (let i = 0; i < 40; i++) {
        const name = names[i % names.length];
        calls.push(callTool({ name: "flowyprompt_get_template", arguments: { name } })
          .then((res) => ({ name, text: firstText(res) })));
      }
      for (const { name, text } of await within(Promise.all(calls), STEP_MS, "40 concurrent calls")) {
        assert.ok(text.includes(name), `the answer for ${name} is about ${name}`);
      }
    });

    more?.(() => session);
  });
}
