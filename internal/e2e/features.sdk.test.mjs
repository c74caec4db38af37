// The protocol features on top of prompts and tools, through the official
// TypeScript SDK client over stdio: templates as resources (list, read,
// subscribe → updated), argument completion, embedded resources in prompts
// and warnings as log messages (the checks live in features-suite.mjs,
// shared with the 2026-07-28 client in modern.sdk2.test.mjs); elicitation
// of missing variables (accepted, declined, unsupported) and progress during
// refresh.

import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

import { ELICIT_ANSWER, ELICIT_CALL, ELICIT_MISSING, featureSuite } from "./features-suite.mjs";
import { assertProgressOnWire, BIN, serverEnv, STEP_MS, SUITE_MS, tapTransport, tempDir, within } from "./helpers.mjs";
import { stdioClient, stdioFolder } from "./sdk-helpers.mjs";

const opts = { timeout: STEP_MS };

async function connect(args, env, capabilities = {}) {
  const client = new Client({ name: "flowyprompt-e2e-features", version: "1.0.0" }, { capabilities });
  const transport = new StdioClientTransport({ command: BIN, args: ["serve", ...args], env, stderr: "pipe" });
  await within(client.connect(transport), STEP_MS, "connect");
  return client;
}

featureSuite("resources, completion, embedded resources (folder source)", stdioFolder("flowyprompt-e2e-features"));

describe("elicitation of missing variables and progress (built-in examples)", { timeout: SUITE_MS }, () => {
  let tmp;
  before(() => {
    tmp = tempDir();
  });
  after(() => tmp?.cleanup());

  it("asks for the missing variables and renders with the answers", opts, async () => {
    const client = await connect([], serverEnv(tmp.dir), { elicitation: {} });
    try {
      let asked;
      client.setRequestHandler(ElicitRequestSchema, async (req) => {
        asked = req.params;
        return { action: "accept", content: ELICIT_ANSWER };
      });
      const res = await client.callTool(ELICIT_CALL);
      assert.notEqual(res.isError, true, res.content?.[0]?.text);
      assert.deepEqual(asked.requestedSchema.required, ELICIT_MISSING);
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
      const res = await client.callTool(ELICIT_CALL);
      assert.equal(res.isError, true);
      assert.match(res.content[0].text, /decline/);
    } finally {
      await client.close();
    }
  });

  it("names the missing variables when the client cannot elicit", opts, async () => {
    const client = await connect([], serverEnv(tmp.dir));
    try {
      const res = await client.callTool(ELICIT_CALL);
      assert.equal(res.isError, true);
      assert.match(res.content[0].text, /industry/);
      assert.match(res.content[0].text, /target_customer/);
    } finally {
      await client.close();
    }
  });

  it("reports progress while refreshing when asked", opts, async () => {
    let tap;
    const s = await stdioClient({ setup: (_, t) => (tap = tapTransport(t)) });
    try {
      const res = await s.client.callTool({ name: "flowyprompt_refresh_templates", arguments: {} }, undefined, {
        onprogress: () => {},
      });
      assert.notEqual(res.isError, true);
      assertProgressOnWire(tap);
    } finally {
      await s.close();
    }
  });
});
