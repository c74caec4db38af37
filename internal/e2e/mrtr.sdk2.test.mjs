// Missing variables asked for in the 2026-07-28 era (multi-round-trip
// requests, MRTR): a modern request cannot call its client, so a client
// that declares form elicitation and leaves out required variables gets,
// from prompts/get and from flowyprompt_render_template, a result of type
// input_required holding one elicitation/create form for exactly the
// missing variables and a signed requestState; it retries with its answers
// in inputResponses and the requestState, and gets the rendered prompt. A
// requestState changed on the way is refused. Over stdio and over /mcp,
// with the TypeScript SDK's 2.x client (which runs the rounds itself unless
// a call says allowInputRequired). The 2025 era's elicitation (a server→
// client request) is features.sdk.test.mjs's.

import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";

import { isInputRequiredResult } from "@modelcontextprotocol/client";

import { ELICIT_ANSWER, ELICIT_CALL, ELICIT_MISSING } from "./features-suite.mjs";
import { exampleTemplate, expectedPrompt, firstText, rejection, STEP_MS, SUITE_MS } from "./helpers.mjs";
import { MODERN_TRANSPORTS, openModern, SDK_V2 } from "./sdk2-helpers.mjs";

const opts = { timeout: STEP_MS };
const manual = { ...opts, allowInputRequired: true };

// The same template and arguments for prompts/get as for the render tool.
const NAME = ELICIT_CALL.arguments.name;
const GIVEN = ELICIT_CALL.arguments.arguments;
const PROMPT = { name: NAME, arguments: GIVEN };
const WANT = expectedPrompt(exampleTemplate(NAME), { ...GIVEN, ...ELICIT_ANSWER });

/** The two requests that can ask, each with how to read its rendered text. */
const ASKING = [
  { what: "prompts/get", call: (client, extra, options) => client.getPrompt({ ...PROMPT, ...extra }, options), text: (res) => res.messages[0].content.text },
  {
    what: "the render tool",
    call: (client, extra, options) => client.callTool({ ...ELICIT_CALL, ...extra }, options),
    text: (res) => {
      assert.notEqual(res.isError, true, firstText(res));
      return res.structuredContent.text;
    },
  },
];

/** Asserts that form is an elicitation/create form for exactly the missing variables. */
function assertForm(params) {
  assert.notEqual(params.mode, "url", "a form, not a URL");
  assert.equal(typeof params.message, "string");
  assert.deepEqual([...params.requestedSchema.required].sort(), [...ELICIT_MISSING].sort());
  assert.deepEqual(Object.keys(params.requestedSchema.properties).sort(), [...ELICIT_MISSING].sort());
}

/** requestState with one character in its middle changed. */
function tamper(state) {
  const i = Math.floor(state.length / 2);
  return state.slice(0, i) + (state[i] === "A" ? "B" : "A") + state.slice(i + 1);
}

for (const { name, kind } of MODERN_TRANSPORTS) {
  describe(`missing variables asked for with input_required results, 2026-07-28 over ${name}`, { timeout: SUITE_MS }, () => {
    let session;
    const asked = []; // the params of every form the handler was shown
    const answers = []; // what the handler answers next; then, the full answer

    before(async () => {
      session = await openModern(kind, {
        capabilities: { elicitation: { form: {} } },
        setup: (client) =>
          client.setRequestHandler("elicitation/create", async (req) => {
            asked.push(req.params);
            return answers.shift() ?? { action: "accept", content: ELICIT_ANSWER };
          }),
      });
    });

    after(async () => {
      await session?.stop();
    });

    for (const { what, call, text } of ASKING) {
      it(`${what} asks for exactly the missing variables and renders with the answers`, async () => {
        const n = asked.length;
        const res = await call(session.client, {}, opts);
        assert.equal(text(res), WANT);
        assert.equal(asked.length, n + 1, "one form");
        assertForm(asked.at(-1));
        // On the wire: the interim result, then the retry that carried the answers.
        const retry = session.tap.sent.findLast((m) => m.params?.inputResponses);
        assert.ok(retry, "a retry with inputResponses");
        assert.equal(typeof retry.params.requestState, "string");
      });

      it(`${what}: the interim result is input_required, and the retry with its requestState renders`, async () => {
        const ir = await call(session.client, {}, manual);
        assert.ok(isInputRequiredResult(ir), `input_required, got ${JSON.stringify(ir).slice(0, 500)}`);
        assert.equal(ir.resultType, "input_required");
        const keys = Object.keys(ir.inputRequests ?? {});
        assert.equal(keys.length, 1, `one input request: ${keys}`);
        const question = ir.inputRequests[keys[0]];
        assert.equal(question.method, "elicitation/create");
        assertForm(question.params);
        assert.equal(typeof ir.requestState, "string");
        assert.ok(ir.requestState.length > 0, "a requestState");

        const answers = { inputResponses: { [keys[0]]: { action: "accept", content: ELICIT_ANSWER } } };
        const res = await call(session.client, { ...answers, requestState: ir.requestState }, manual);
        assert.equal(text(res), WANT);

        const err = await rejection(
          call(session.client, { ...answers, requestState: tamper(ir.requestState) }, manual),
          "a retry with a tampered requestState",
        );
        assert.ok(err instanceof SDK_V2.ProtocolError, `a JSON-RPC error, got ${err?.stack ?? err}`);
        assert.equal(err.code, -32602);
      });

      it(`${what}: an answer that leaves a variable out is asked again`, async () => {
        const n = asked.length;
        answers.push({ action: "accept", content: { industry: ELICIT_ANSWER.industry } });
        const res = await call(session.client, {}, opts);
        assert.equal(text(res), WANT);
        assert.equal(asked.length, n + 2, "two forms");
        assert.ok(asked.at(-1).requestedSchema.required.includes("target_customer"), "the second form asks for what is left");
      });

      it(`${what}: a declined form is MISSING_REQUIRED_VARIABLE`, async () => {
        answers.push({ action: "decline" });
        const failure = await call(session.client, {}, opts).then(
          (res) => {
            assert.equal(res.isError, true, `a tool error, got ${JSON.stringify(res).slice(0, 500)}`);
            return firstText(res);
          },
          (err) => {
            assert.ok(err instanceof SDK_V2.ProtocolError, `a JSON-RPC error, got ${err?.stack ?? err}`);
            assert.equal(err.code, -32602);
            return err.data?.code;
          },
        );
        assert.match(failure, /MISSING_REQUIRED_VARIABLE/);
      });
    }
  });
}
