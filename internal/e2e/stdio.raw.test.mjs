// Raw stdio: no SDK, just lines on the child's stdin and stdout, so we can
// send what no well-behaved client sends (malformed frames, odd ids,
// unknown protocol versions) and watch the process's lifecycle (EOF,
// SIGTERM) and its stdout discipline.

import assert from "node:assert/strict";
import { after, describe, it } from "node:test";

import { eventually, RawSession, STEP_MS, SUITE_MS, within } from "./helpers.mjs";

const sessions = [];
function session(args) {
  const s = new RawSession(args);
  sessions.push(s);
  return s;
}

after(async () => {
  await Promise.all(sessions.map((s) => s.kill()));
});

/** Every stdout line so far is a JSON-RPC 2.0 object: nothing else. */
function assertOnlyJSONLines(s) {
  assert.ok(s.lines.length > 0, "the server wrote something");
  for (const { line, msg } of s.lines) {
    assert.ok(msg !== undefined, `stdout line is not JSON: ${JSON.stringify(line.slice(0, 200))}`);
    assert.equal(typeof msg, "object", `not an object: ${line.slice(0, 200)}`);
    assert.ok(msg !== null && !Array.isArray(msg), `not an object: ${line.slice(0, 200)}`);
    assert.equal(msg.jsonrpc, "2.0", `jsonrpc 2.0: ${line.slice(0, 200)}`);
  }
}

describe("raw stdio framing", { timeout: SUITE_MS }, () => {
  it("allows only ping before initialize", async () => {
    const s = session();
    assert.deepEqual((await s.request(1, "ping")).result, {});
    const res = await s.request(2, "prompts/list");
    assert.ok(res.error, "prompts/list before initialize is an error");
    assert.equal(res.result, undefined);
    const init = await s.initialize();
    assert.ok(init.result, JSON.stringify(init));
    assert.ok((await s.request(3, "prompts/list")).result.prompts.length > 0);
    assertOnlyJSONLines(s);
  });

  // Each malformed frame gets its own error, and the session goes on.
  // The answers are those of mcp/testdata/framing.golden.json: an id that
  // is not a string or an integer cannot be echoed, so the error carries
  // id null; a readable id is echoed even when the rest is wrong. Batches
  // are refused whole (MCP 2025-06-18 removed them), the empty one too.
  const malformed = [
    { name: "bad JSON", frame: '{"jsonrpc":"2.0","id":1,"method":"ping"', code: -32700, id: null, data: "PARSE_ERROR" },
    { name: "garbage", frame: "nope", code: -32700, id: null, data: "PARSE_ERROR" },
    { name: "number, not an object", frame: "42", code: -32600, id: null, data: "INVALID_REQUEST" },
    { name: "string, not an object", frame: '"ping"', code: -32600, id: null, data: "INVALID_REQUEST" },
    { name: "wrong jsonrpc", frame: '{"jsonrpc":"1.0","id":7,"method":"ping"}', code: -32600, id: 7, data: "INVALID_REQUEST" },
    { name: "missing jsonrpc", frame: '{"id":8,"method":"ping"}', code: -32600, id: 8, data: "INVALID_REQUEST" },
    { name: "no method", frame: '{"jsonrpc":"2.0","id":9}', code: -32600, id: 9, data: "INVALID_REQUEST" },
    { name: "null id", frame: '{"jsonrpc":"2.0","id":null,"method":"ping"}', code: -32600, id: null, data: "INVALID_REQUEST" },
    {
      name: "batch of one",
      frame: '[{"jsonrpc":"2.0","id":10,"method":"ping"}]',
      code: -32600,
      id: null,
      data: "INVALID_REQUEST",
      message: /batch requests are not supported/,
    },
    { name: "empty batch", frame: "[]", code: -32600, id: null, data: "INVALID_REQUEST", message: /batch requests are not supported/ },
    {
      name: "fractional id",
      frame: '{"jsonrpc":"2.0","id":1.5,"method":"ping"}',
      code: -32600,
      id: null,
      data: "INVALID_REQUEST",
      message: /not an integer/,
    },
    {
      name: "boolean id",
      frame: '{"jsonrpc":"2.0","id":true,"method":"ping"}',
      code: -32600,
      id: null,
      data: "INVALID_REQUEST",
      message: /string or an integer/,
    },
    {
      name: "object id",
      frame: '{"jsonrpc":"2.0","id":{"n":1},"method":"ping"}',
      code: -32600,
      id: null,
      data: "INVALID_REQUEST",
      message: /string or an integer/,
    },
    {
      name: "method is a number",
      frame: '{"jsonrpc":"2.0","id":11,"method":7}',
      code: -32600,
      id: 11,
      data: "INVALID_REQUEST",
      message: /method must be a string/,
    },
    {
      name: "method is empty",
      frame: '{"jsonrpc":"2.0","id":12,"method":""}',
      code: -32600,
      id: 12,
      data: "INVALID_REQUEST",
      message: /method is empty/,
    },
    {
      name: "prompts/get with array params",
      frame: '{"jsonrpc":"2.0","id":13,"method":"prompts/get","params":[1,2]}',
      code: -32602,
      id: 13,
      data: "INVALID_PARAMS",
      message: /params must be a JSON object/,
    },
    {
      name: "prompts/get with a number for name",
      frame: '{"jsonrpc":"2.0","id":14,"method":"prompts/get","params":{"name":5}}',
      code: -32602,
      id: 14,
      data: "INVALID_PARAMS",
      message: /name must be a string/,
    },
  ];

  it("answers every malformed frame and keeps the session alive", async () => {
    const s = session();
    await s.initialize();
    let n = 100;
    for (const tc of malformed) {
      const before = s.lines.length;
      s.send(tc.frame);
      // The answer to a frame is the next line the server writes (nothing
      // else is in flight), so we can match it even when its id is null.
      const { line, msg: answer } = await s.lineAt(before, `answer to ${tc.name}`);
      assert.ok(answer, `${tc.name}: answer is JSON: ${line}`);
      assert.ok(answer.error, `${tc.name}: an error, got ${JSON.stringify(answer)}`);
      assert.equal(answer.error.code, tc.code, `${tc.name}: code (${answer.error.message})`);
      assert.equal(answer.id, tc.id, `${tc.name}: id`);
      assert.equal(answer.error.data?.code, tc.data, `${tc.name}: error.data.code`);
      assert.equal(typeof answer.error.message, "string");
      assert.ok(answer.error.message.length > 0, `${tc.name}: message`);
      if (tc.message) assert.match(answer.error.message, tc.message, tc.name);
      const id = n++;
      assert.deepEqual((await s.request(id, "ping")).result, {}, `ping after ${tc.name}`);
    }
    // And real work still works afterwards.
    const list = await s.request(n, "tools/list");
    assert.ok(list.result.tools.length >= 6);
    assertOnlyJSONLines(s);
  });

  it("refuses a line over --max-message-size with id null and goes on", async () => {
    const max = 2000;
    const s = session(["serve", "--max-message-size", String(max)]);
    await s.initialize();
    // Just under the cap is still served, so the error below is the cap's.
    const padded = (id, n) => {
      const head = `{"jsonrpc":"2.0","id":${id},"method":"ping","params":{"pad":"`;
      return head + "x".repeat(n - head.length - 3) + '"}}';
    };
    const fits = padded(1, max);
    assert.equal(fits.length, max);
    s.send(fits);
    assert.deepEqual((await s.response("1")).msg.result, {}, "a message of exactly the cap is served");

    const before = s.lines.length;
    const big = padded(2, max + 1000);
    s.send(big);
    const { line, msg } = await s.lineAt(before, "answer to the oversized line");
    assert.ok(msg, `answer is JSON: ${line}`);
    assert.equal(msg.id, null, "the id of a message that was not read is null");
    assert.equal(msg.error?.code, -32600, line);
    assert.equal(msg.error.data?.code, "MESSAGE_TOO_LARGE");
    assert.equal(msg.error.data.details?.max, max, "details.max");
    assert.ok(msg.error.data.details.size >= big.length, `details.size ${msg.error.data.details.size}`);
    assert.match(msg.error.message, /2000/);
    assert.deepEqual((await s.request(3, "ping")).result, {}, "ping after the oversized line");
    // The oversized request itself (id 2) got no other answer.
    assert.equal(s.lines.filter((l) => l.msg?.id === 2).length, 0);
    assertOnlyJSONLines(s);
  });

  it("answers logging/setLevel with an empty result and goes on", async () => {
    const s = session();
    await s.initialize();
    assert.deepEqual(await s.request(1, "logging/setLevel", { level: "warning" }), {
      jsonrpc: "2.0",
      id: 1,
      result: {},
    });
    assert.deepEqual((await s.request(2, "ping")).result, {});
  });

  it("sends nothing for notifications/cancelled of an unknown request", async () => {
    const s = session();
    await s.initialize();
    s.send({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 424242, reason: "e2e" } });
    s.send({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: "never-sent" } });
    assert.deepEqual((await s.request(1, "ping")).result, {});
    // stdin is read in order, so an answer to either notification would
    // have been written before the ping's: only initialize's and the
    // ping's are there.
    assert.deepEqual(
      s.lines.map((l) => l.msg?.id),
      ["init", 1],
      s.lines.map((l) => l.line).join("\n"),
    );
  });

  it("answers an unknown method with -32601 and goes on", async () => {
    const s = session();
    await s.initialize();
    const res = await s.request(1, "nope/nothing");
    assert.equal(res.error?.code, -32601);
    assert.deepEqual((await s.request(2, "ping")).result, {});
  });

  it("ignores unknown notifications", async () => {
    const s = session();
    await s.initialize();
    s.send({ jsonrpc: "2.0", method: "notifications/nothing_here" });
    assert.deepEqual((await s.request(1, "ping")).result, {});
    // The notification got no answer: the only lines are the initialize and
    // ping responses.
    assert.equal(s.lines.length, 2, s.lines.map((l) => l.line).join("\n"));
  });

  const ids = [
    { name: "string", id: '"abc"' },
    { name: "negative", id: "-1" },
    { name: "2^53", id: "9007199254740992" },
    { name: "2^53+1", id: "9007199254740993" },
    { name: "-2^53", id: "-9007199254740992" },
    { name: "zero", id: "0" },
    { name: "unicode string", id: '"id-\uc544\uc774\ub514"' },
  ];
  it("echoes request ids exactly", async () => {
    const s = session();
    await s.initialize();
    for (const { name, id } of ids) {
      // One request at a time, so its answer is the next line: parsed ids
      // cannot tell 2^53 from 2^53+1, the raw line can.
      const before = s.lines.length;
      s.send(`{"jsonrpc":"2.0","id":${id},"method":"ping"}`);
      const { line: raw, msg } = await s.lineAt(before, `ping with ${name} id`);
      assert.ok(msg, `${name}: answer is JSON: ${raw}`);
      assert.deepEqual(msg.result, {}, name);
      // Compare the wire text: a server that went through float64 would
      // print 9007199254740992 in another form (9.007199254740992e+15).
      // Strings are compared decoded (escapes may differ).
      if (id.startsWith('"')) assert.equal(msg.id, JSON.parse(id), name);
      else assert.match(raw, new RegExp(`"id":${id}[,}]`), `${name}: raw line ${raw}`);
    }
  });
});

describe("protocol version negotiation", { timeout: SUITE_MS }, () => {
  const cases = [
    { asked: "2024-11-05", want: "2024-11-05" },
    { asked: "2025-03-26", want: "2025-03-26" },
    { asked: "2025-06-18", want: "2025-06-18" },
    { asked: "2025-11-25", want: "2025-11-25" },
    { asked: "2030-01-01", want: "2025-11-25" },
    { asked: "1999-01-01", want: "2025-11-25" },
  ];
  for (const { asked, want } of cases) {
    it(`answers ${want} to ${asked}`, async () => {
      const s = session();
      const res = await s.initialize(asked);
      assert.equal(res.result?.protocolVersion, want, JSON.stringify(res));
      assert.ok(res.result.serverInfo?.name, "serverInfo.name");
      assert.ok(res.result.capabilities?.prompts, "prompts capability");
      assert.ok(res.result.capabilities?.tools, "tools capability");
    });
  }
});

describe("process lifecycle", { timeout: SUITE_MS }, () => {
  it("exits 0 on stdin EOF, having answered what it was sent", async () => {
    const s = session();
    await s.initialize();
    s.send({ jsonrpc: "2.0", id: 1, method: "prompts/list" });
    s.child.stdin.end();
    const { code, signal } = await within(s.exited, STEP_MS, "exit after EOF");
    assert.equal(signal, null);
    assert.equal(code, 0, s.stderr);
    // A request sent just before EOF is still answered (the drain).
    assert.ok(s.lines.some((l) => l.msg?.id === 1 && l.msg.result?.prompts), "prompts/list answered");
    assertOnlyJSONLines(s);
  });

  it("exits 0 on SIGTERM", async () => {
    const s = session();
    await s.initialize();
    s.child.kill("SIGTERM");
    const { code, signal } = await within(s.exited, 5_000, "exit within 5 s of SIGTERM");
    assert.equal(signal, null, "exited by itself rather than dying of the signal");
    assert.equal(code, 0, s.stderr);
    assertOnlyJSONLines(s);
  });

  it("exits 0 on SIGINT", async () => {
    const s = session();
    await s.initialize();
    s.child.kill("SIGINT");
    const { code, signal } = await within(s.exited, STEP_MS, "exit after SIGINT");
    assert.equal(signal, null);
    assert.equal(code, 0, s.stderr);
  });

  // A request that stays in flight as long as the client wants: the render
  // tool, missing a required argument, asks a client that can elicit for
  // it and waits for the answer. No test-only method is needed.
  async function heldRequest() {
    const s = session();
    await s.request("init", "initialize", {
      protocolVersion: "2025-11-25",
      capabilities: { elicitation: {} },
      clientInfo: { name: "flowyprompt-e2e-raw", version: "0.0.0" },
    });
    s.send({ jsonrpc: "2.0", method: "notifications/initialized" });
    s.send({
      jsonrpc: "2.0",
      id: 1,
      method: "tools/call",
      params: { name: "flowyprompt_render_template", arguments: { name: "Commit_Message", arguments: {} } },
    });
    const ask = await s.next((m) => m.method === "elicitation/create" && "id" in m, "elicitation/create for diff");
    assert.match(JSON.stringify(ask.params.requestedSchema), /"diff"/);
    return { s, ask };
  }

  // The server logs this once the signal has been taken, which is also
  // when a second one would end it (the handler is released first).
  const draining = (s) =>
    eventually(() => assert.match(s.stderr, /shutting down: finishing in-flight requests/), STEP_MS);

  const answered = (s, id) => s.lines.some((l) => l.msg?.id === id && !("method" in l.msg));

  for (const sig of ["SIGTERM", "SIGINT"]) {
    it(`${sig} lets the request in flight finish, answers it, then exits 0`, async () => {
      const { s, ask } = await heldRequest();
      s.child.kill(sig);
      await draining(s);
      assert.equal(s.child.exitCode, null, "still running while the request is in flight");
      assert.ok(!answered(s, 1), "not answered yet");
      // stdin is still read during the drain: the client's answer arrives.
      s.send({ jsonrpc: "2.0", id: ask.id, result: { action: "accept", content: { diff: "+drained = true" } } });
      const { msg } = await s.response("1", "the tools/call answer after the signal");
      assert.notEqual(msg.result?.isError, true, JSON.stringify(msg));
      assert.match(msg.result.content[0].text, /\+drained = true/);
      const { code, signal } = await within(s.exited, STEP_MS, `exit after ${sig} and the drain`);
      assert.equal(signal, null);
      assert.equal(code, 0, s.stderr);
      assertOnlyJSONLines(s);
    });
  }

  it("a second signal during the drain ends the process at once", async () => {
    const { s } = await heldRequest();
    s.child.kill("SIGTERM");
    await draining(s);
    const t0 = Date.now();
    s.child.kill("SIGINT");
    // Without the second signal the drain would wait 10 s for the client.
    const { signal } = await within(s.exited, 3_000, "exit within 3 s of a second signal");
    assert.equal(signal, "SIGINT", "the second signal takes its default action");
    assert.ok(Date.now() - t0 < 3_000);
    assert.ok(!answered(s, 1), "the request in flight was abandoned, not answered");
  });

  it("writes logs to stderr, never stdout", async () => {
    const s = session();
    await s.initialize();
    // A failing request makes the server log something, if it logs at all.
    await s.request(1, "prompts/get", { name: "Code_Reveiw" });
    await s.request(2, "tools/call", { name: "flowyprompt_render_template", arguments: {} });
    s.child.stdin.end();
    await within(s.exited, STEP_MS, "exit after EOF");
    assertOnlyJSONLines(s);
    // Every stdout line is one of our responses: ids init, 1, 2.
    assert.deepEqual(s.lines.map((l) => l.msg.id), ["init", 1, 2]);
  });
});
