// The official MCP conformance suite (@modelcontextprotocol/conformance)
// against the real binary, `flowyprompt serve --transport http`, at /mcp:
// the generic server scenarios, the ones that need no fixture of the
// suite's own (conformance-all.test.mjs runs every scenario against
// cmd/conformance-server, which serves those fixtures).
//
// Facts about the suite these tests rely on (checked against 0.1.16):
// - It needs Node 22, so it runs under the Node 22 that the `node` npm
//   package installs (node_modules/node/bin/node).
// - `conformance server --url URL --scenario NAME -o DIR` runs one
//   scenario, prints `Passed: N/M, F failed, W warnings`, exits 1 when a
//   check failed, and writes its checks to DIR/server-NAME-<time>/checks.json.
// - It prints ANSI colours even into a pipe.
// - dns-rebinding-protection needs a loopback URL, hence 127.0.0.1.

import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";

import { CONFORMANCE, NODE22, NODE22_WHAT, requireInstalled, runConformance } from "./cli-helpers.mjs";
import { startHTTP } from "./helpers.mjs";

const RUN_MS = 60_000; // one scenario (about a second here)

const SCENARIOS = [
  "server-initialize",
  "ping",
  "logging-set-level",
  "tools-list",
  "prompts-list",
  "resources-list",
  "server-sse-multiple-streams",
  "dns-rebinding-protection",
];

requireInstalled([
  [NODE22_WHAT, NODE22],
  ["@modelcontextprotocol/conformance", CONFORMANCE],
]);

/** Runs one scenario; resolves to { code, output, checks }. */
async function runScenario(url, scenario) {
  const outDir = mkdtempSync(join(tmpdir(), "flowyprompt-conformance-"));
  try {
    const { code, output } = await runConformance(["server", "--url", url, "--scenario", scenario, "-o", outDir], RUN_MS, scenario);
    const checks = [];
    for (const dir of readdirSync(outDir)) {
      const file = join(outDir, dir, "checks.json");
      if (existsSync(file)) checks.push(...JSON.parse(readFileSync(file, "utf8")));
    }
    return { code, output, checks };
  } finally {
    rmSync(outDir, { recursive: true, force: true });
  }
}

describe("official MCP conformance suite, generic scenarios, against serve --transport http /mcp", { timeout: SCENARIOS.length * RUN_MS + 30_000 }, () => {
  let server;
  before(async () => {
    server = await startHTTP();
  });
  after(async () => {
    const res = await server?.stop();
    assert.deepEqual(res, { code: 0, signal: null }, `exit after SIGTERM:\n${server?.stderr()}`);
  });

  for (const scenario of SCENARIOS) {
    it(scenario, { timeout: RUN_MS + 5_000 }, async (t) => {
      const r = await runScenario(`${server.base}/mcp`, scenario);
      const explain = `\n--- conformance output ---\n${r.output}\n--- server stderr (tail) ---\n${server.stderr().slice(-5_000)}`;
      const line = /Passed: (\d+)\/(\d+), (\d+) failed, (\d+) warnings/.exec(r.output);
      assert.ok(line, `no "Passed: N/M, F failed, W warnings" line${explain}`);
      const [passed, total, failed, warnings] = line.slice(1).map(Number);
      assert.equal(failed, 0, `${failed} checks failed${explain}`);
      assert.equal(warnings, 0, `${warnings} warnings${explain}`);
      assert.ok(passed >= 1 && passed === total, `${passed}/${total} passed${explain}`);
      assert.equal(r.code, 0, `the suite exited ${r.code}${explain}`);
      assert.ok(r.checks.length > 0, `no checks saved${explain}`);
      assert.deepEqual(
        r.checks.filter((c) => c.status === "FAILURE" || c.status === "WARNING").map((c) => c.id),
        [],
        "saved checks hold no failure or warning",
      );
      for (const c of r.checks) t.diagnostic(`${c.status} ${c.id}`);
      if (scenario === "server-sse-multiple-streams") {
        const accepts = r.checks.find((c) => c.id === "server-accepts-multiple-post-streams");
        assert.equal(accepts?.status, "SUCCESS", "three concurrent POSTs on one session all answered");
      }
      if (scenario === "dns-rebinding-protection") {
        for (const id of ["localhost-host-rebinding-rejected", "localhost-host-valid-accepted"]) {
          assert.equal(r.checks.find((c) => c.id === id)?.status, "SUCCESS", id);
        }
      }
    });
  }
});
