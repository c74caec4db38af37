// Flows through real clients, on the built-in ship_a_change flow (review a
// diff, write its commit message, write its pull request description):
// walked step by step through flowyprompt_start_flow and
// flowyprompt_next_flow_step by the 1.x SDK client over stdio (2025 era,
// one session) and by the 2.x client over Streamable HTTP in the
// 2026-07-28 era, where every request stands alone and the handle is all
// that carries the flow from one step to the next; the flow as a prompt,
// one message for the plan and one for each step; a tampered handle
// refused.

import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { STEP_MS, SUITE_MS } from "./helpers.mjs";
import { SDK_V1, stdioClient } from "./sdk-helpers.mjs";
import { openModern, SDK_V2 } from "./sdk2-helpers.mjs";

const opts = { timeout: STEP_MS * 3 };

const DIFF = "--- a/add.go\n+++ b/add.go\n-\treturn a - b\n+\treturn a + b // <fix> & test";
const PURPOSE = "Fix the sign bug in add (issue 42).";
const REVIEW = "REVIEW-7f3: approve; add a test for negative numbers.";
const COMMIT = "COMMIT-91c: Fix the sign in add";

const CLIENTS = [
  {
    name: "1.x SDK client over stdio (2025 era)",
    sdk: SDK_V1,
    open: async () => {
      const s = await stdioClient({ name: "flowyprompt-e2e-flows" });
      return { client: s.client, stop: s.close };
    },
  },
  {
    name: "2.x client over Streamable HTTP (2026-07-28)",
    sdk: SDK_V2,
    open: () => openModern("http", { name: "flowyprompt-e2e-flows" }),
  },
];

for (const { name, sdk, open } of CLIENTS) {
  describe(`flows: ${name}`, { timeout: SUITE_MS }, () => {
    const callTool = (c, tool, args) => sdk.callTool(c, { name: tool, arguments: args }, { timeout: STEP_MS });

    it("lists the flows, then walks ship_a_change to the end, each step built from the results before it", opts, async () => {
      const s = await open();
      try {
        const { tools } = await s.client.listTools();
        for (const t of ["flowyprompt_start_flow", "flowyprompt_next_flow_step"]) {
          assert.ok(
            tools.some((x) => x.name === t),
            `tools/list has ${t}`,
          );
        }

        const listed = await callTool(s.client, "flowyprompt_start_flow", {});
        assert.notEqual(listed.isError, true, listed.content?.[0]?.text);
        const flow = listed.structuredContent.flows.find((f) => f.name === "ship_a_change");
        assert.ok(flow, JSON.stringify(listed.structuredContent));
        assert.deepEqual(
          flow.steps.map((st) => st.template),
          ["Code_Review", "Commit_Message", "Pull_Request_Description"],
        );
        assert.deepEqual(
          flow.arguments.filter((a) => a.required).map((a) => a.name),
          ["diff"],
        );

        const steps = [
          { call: ["flowyprompt_start_flow", { name: "ship_a_change", arguments: { diff: DIFF, purpose: PURPOSE } }], template: "Code_Review", has: [DIFF, PURPOSE] },
          { output: REVIEW, template: "Commit_Message", has: [DIFF, REVIEW] },
          { output: COMMIT, template: "Pull_Request_Description", has: [COMMIT, REVIEW, PURPOSE] },
        ];
        let handle;
        for (const [i, st] of steps.entries()) {
          const res = st.call
            ? await callTool(s.client, ...st.call)
            : await callTool(s.client, "flowyprompt_next_flow_step", { handle, output: st.output });
          assert.notEqual(res.isError, true, res.content?.[0]?.text);
          const sc = res.structuredContent;
          assert.equal(sc.done, false);
          assert.equal(sc.step, i + 1);
          assert.equal(sc.steps, 3);
          assert.equal(sc.template, st.template);
          for (const text of st.has) assert.ok(sc.prompt.includes(text), `step ${i + 1}'s prompt has ${JSON.stringify(text)}:\n${sc.prompt}`);
          // A model reads the text: the prompt and the handle are there too.
          assert.ok(res.content[0].text.includes(sc.handle), `step ${i + 1}: the handle is in the text`);
          assert.ok(sc.handle !== handle, "each step hands out a new handle");
          handle = sc.handle;
        }
        const done = await callTool(s.client, "flowyprompt_next_flow_step", { handle, output: "PR description" });
        assert.notEqual(done.isError, true, done.content?.[0]?.text);
        assert.equal(done.structuredContent.done, true);
        assert.equal(done.structuredContent.handle, undefined);
      } finally {
        await s.stop();
      }
    });

    it("refuses a tampered handle with INVALID_ARGUMENT and says to start again", opts, async () => {
      const s = await open();
      try {
        const res = await callTool(s.client, "flowyprompt_start_flow", { name: "ship_a_change", arguments: { diff: DIFF } });
        assert.notEqual(res.isError, true, res.content?.[0]?.text);
        const h = res.structuredContent.handle;
        // Change one character of the sealed body: the signature no longer matches.
        const i = Math.floor(h.length / 3);
        const tampered = h.slice(0, i) + (h[i] === "A" ? "B" : "A") + h.slice(i + 1);
        const bad = await callTool(s.client, "flowyprompt_next_flow_step", { handle: tampered, output: REVIEW });
        assert.equal(bad.isError, true);
        assert.equal(bad.structuredContent.code, "INVALID_ARGUMENT");
        assert.match(bad.structuredContent.why, /changed/);
        assert.match(bad.structuredContent.how, /start the flow again/);
        // The genuine handle still works.
        const good = await callTool(s.client, "flowyprompt_next_flow_step", { handle: h, output: REVIEW });
        assert.notEqual(good.isError, true, good.content?.[0]?.text);
        assert.equal(good.structuredContent.step, 2);
      } finally {
        await s.stop();
      }
    });

    it("serves the flow as the prompt flow:ship_a_change: the plan, then one message per step", opts, async () => {
      const s = await open();
      try {
        const { prompts } = await s.client.listPrompts(undefined, sdk.fresh);
        const p = prompts.find((x) => x.name === "flow:ship_a_change");
        assert.ok(p, `prompts/list has flow:ship_a_change: ${prompts.map((x) => x.name).join(", ")}`);
        assert.deepEqual(
          p.arguments.map((a) => [a.name, a.required]),
          [
            ["diff", true],
            ["purpose", false],
          ],
        );
        const got = await s.client.getPrompt({ name: "flow:ship_a_change", arguments: { diff: DIFF } });
        assert.equal(got.messages.length, 4, JSON.stringify(got.messages).slice(0, 500));
        for (const m of got.messages) assert.equal(m.role, "user");
        const texts = got.messages.map((m) => m.content.text);
        assert.match(texts[0], /Run the flow ship_a_change/);
        assert.match(texts[0], /flowyprompt_start_flow/);
        assert.match(texts[1], /^## Step 1 of 3: review/);
        assert.ok(texts[1].includes(DIFF), texts[1]);
        assert.match(texts[2], /^## Step 2 of 3: commit/);
        assert.ok(texts[2].includes("[your result of step 1, review]"), texts[2]);
        assert.match(texts[3], /^## Step 3 of 3: pull_request/);
        assert.ok(texts[3].includes("[your result of step 2, commit]"), texts[3]);
      } finally {
        await s.stop();
      }
    });
  });
}
