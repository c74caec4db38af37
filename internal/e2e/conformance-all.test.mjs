// The official MCP conformance suite (@modelcontextprotocol/conformance
// 0.1.16), every server scenario (`--suite all`, pending ones included),
// against cmd/conformance-server: the suite's fixtures served by
// flowyprompt's own engine and Streamable HTTP transport.
//
// This file builds nothing. It runs FLOWYPROMPT_CONFORMANCE_BIN (an
// absolute path; default ../../bin/conformance-server, built with
// `go build -o bin/conformance-server ./cmd/conformance-server`).
//
// Facts about the suite these tests rely on (checked against 0.1.16):
// - The package's bin is `conformance` = dist/index.js; it needs Node 22,
//   so it runs under the Node 22 that the `node` npm package installs.
// - `conformance server --url URL --suite all` runs every server scenario
//   one after the other and ends with `Total: N passed, M failed`, where N
//   and M count SUCCESS and FAILURE checks; WARNING and INFO checks count
//   in neither. It exits 1 when M > 0. It prints ANSI colours even into a
//   pipe.
// - In suite mode it prints no per-check detail; `-o DIR` writes each
//   scenario's checks to DIR/<scenario>-<time>/checks.json, which is where
//   the warnings are read from here.
// - The DNS rebinding scenario needs a loopback URL, hence 127.0.0.1.

import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { badChecks, CONFORMANCE, requireFiles, runOnFixture, startFixture } from "./conformance-helpers.mjs";

const RUN_MS = 180_000; // one whole suite run (about 5 s here)
const TEST_MS = RUN_MS + 30_000; // the run, the server's start and stop

// The Go SDK scores 44 with `--suite all`: the three checks of
// server-sse-polling stay warnings there. With resumable streams we score
// all 47.
const MIN_PASSED = 47;

/**
 * Runs the suite against a fresh server started with serverArgs and
 * checks its closing line; returns the warnings for the caller to judge.
 */
async function conform(t, serverArgs, minPassed) {
  const result = await runOnFixture(CONFORMANCE, serverArgs, ["--suite", "all"], RUN_MS);
  const total = /^Total: (\d+) passed, (\d+) failed\s*$/m.exec(result.output);
  assert.ok(total, `no "Total: N passed, M failed" line${result.explain}`);
  const [passed, failed] = [Number(total[1]), Number(total[2])];
  assert.equal(failed, 0, `${failed} conformance checks failed${result.explain}`);
  assert.ok(passed >= minPassed, `only ${passed} checks passed, want at least ${minPassed}${result.explain}`);
  assert.equal(result.code, 0, `the suite exited ${result.code}${result.explain}`);
  const bad = badChecks(result.results);
  assert.deepEqual(bad.filter((c) => c.status === "FAILURE"), [], "saved checks hold no failure");
  t.diagnostic(`${passed} conformance checks passed`);
  const warnings = bad.filter((c) => c.status === "WARNING");
  for (const w of warnings) t.diagnostic(`warning: ${w.scenario} ${w.id}: ${w.message}`);
  return warnings;
}

describe("official MCP conformance suite, --suite all", { timeout: 2 * TEST_MS }, () => {
  it(`passes at least ${MIN_PASSED} checks with none failed (answers as event streams)`, { timeout: TEST_MS }, async (t) => {
    const warnings = await conform(t, [], MIN_PASSED);
    assert.deepEqual(warnings, [], "no warnings");
  });

  it("has none failed when the transport picks JSON or a stream itself (--answers auto)", { timeout: TEST_MS }, async (t) => {
    // JSON answers turn server-sse-multiple-streams' stream check into
    // INFO, hence one check fewer. test_reconnection still ends its stream:
    // ending a JSON answer early starts a resumable stream.
    const warnings = await conform(t, ["--answers", "auto"], MIN_PASSED - 1);
    assert.deepEqual(warnings, [], "no warnings");
  });
});

describe("resumable streams with the TypeScript SDK client", { timeout: TEST_MS }, () => {
  it("gets test_reconnection's answer after the server ends the stream mid-call", { timeout: TEST_MS }, async () => {
    requireFiles(CONFORMANCE);
    const { Client } = await import("@modelcontextprotocol/sdk/client/index.js");
    const { StreamableHTTPClientTransport } = await import("@modelcontextprotocol/sdk/client/streamableHttp.js");
    const server = startFixture();
    const client = new Client({ name: "flowyprompt-e2e-resume", version: "1.0.0" });
    const transport = new StreamableHTTPClientTransport(new URL(`${await server.url}/mcp`));
    const resumed = [];
    try {
      await client.connect(transport);
      assert.equal(transport.protocolVersion, "2025-11-25", "streams are resumable from this revision on");
      // The SDK client resumes on its own: it keeps the priming event's id,
      // waits the announced retry, and sends GET with Last-Event-ID.
      const result = await client.callTool({ name: "test_reconnection", arguments: {} }, undefined, {
        onresumptiontoken: (token) => resumed.push(token),
        timeout: 30_000,
      });
      assert.equal(result.isError ?? false, false);
      assert.match(result.content[0].text, /Reconnection test completed successfully/);
      // The priming event's id on the POST, then the answer's on the GET,
      // on the same stream.
      assert.equal(resumed.length, 2, `resumption tokens: ${JSON.stringify(resumed)}`);
      const [stream0, seq0] = resumed[0].split("-");
      const [stream1, seq1] = resumed[1].split("-");
      assert.equal(stream1, stream0, "the answer came on the stream the call started");
      assert.equal(Number(seq0), 0, "the first id is the priming event's");
      assert.ok(Number(seq1) > 0, "the answer's id follows it");
    } finally {
      await client.close().catch(() => {});
      await server.stop();
    }
  });
});
