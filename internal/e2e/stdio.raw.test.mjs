// Raw stdio: no SDK, just lines on the child's stdin and stdout, so we can
// send what no well-behaved client sends (malformed frames, odd ids,
// unknown protocol versions) and watch the process's lifecycle (EOF,
// SIGTERM) and its stdout discipline.

import assert from "node:assert/strict";
import { after, describe, it } from "node:test";

import { RawSession, STEP_MS, SUITE_MS, within } from "./helpers.mjs";

const sessions = [];
function session() {
  const s = new RawSession();
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
  const malformed = [
    { name: "bad JSON", frame: '{"jsonrpc":"2.0","id":1,"method":"ping"', code: -32700, id: null },
    { name: "garbage", frame: "nope", code: -32700, id: null },
    { name: "number, not an object", frame: "42", code: -32600, id: null },
    { name: "string, not an object", frame: '"ping"', code: -32600, id: null },
    { name: "wrong jsonrpc", frame: '{"jsonrpc":"1.0","id":7,"method":"ping"}', code: -32600, id: 7 },
    { name: "missing jsonrpc", frame: '{"id":8,"method":"ping"}', code: -32600, id: 8 },
    { name: "no method", frame: '{"jsonrpc":"2.0","id":9}', code: -32600, id: 9 },
    { name: "null id", frame: '{"jsonrpc":"2.0","id":null,"method":"ping"}', code: -32600, id: null },
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
      assert.equal(typeof answer.error.message, "string");
      assert.ok(answer.error.message.length > 0, `${tc.name}: message`);
      const id = n++;
      assert.deepEqual((await s.request(id, "ping")).result, {}, `ping after ${tc.name}`);
    }
    // And real work still works afterwards.
    const list = await s.request(n, "tools/list");
    assert.ok(list.result.tools.length >= 6);
    assertOnlyJSONLines(s);
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
