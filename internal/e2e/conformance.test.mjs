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
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";

import { BIN, HERE, STEP_MS, serverEnv, tempDir, within } from "./helpers.mjs";

const NODE22 = join(HERE, "node_modules", "node", "bin", "node");
const SUITE = join(HERE, "node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js");
const START_MS = 15_000;
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

for (const [what, path] of [["Node 22 (npm package node@22)", NODE22], ["@modelcontextprotocol/conformance", SUITE]]) {
  if (!existsSync(path)) throw new Error(`${what} not found at ${path}: run \`npm ci\` in internal/e2e`);
}

const stripAnsi = (s) => s.replace(/\x1b\[[0-9;?]*[ -/]*[@-~]/g, "");

/** Starts the HTTP server on a free loopback port; resolves to { base, stop(), stderr() }. */
function startHTTP() {
  const cache = tempDir("flowyprompt-e2e-conformance-");
  const child = spawn(BIN, ["serve", "--transport", "http", "--addr", "127.0.0.1:0"], {
    env: serverEnv(cache.dir),
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  const exited = new Promise((res) => child.once("exit", (code, signal) => res({ code, signal })));
  return new Promise((res, rej) => {
    const timer = setTimeout(() => rej(new Error(`server did not start within ${START_MS} ms:\n${stderr}`)), START_MS);
    child.stderr.setEncoding("utf8");
    child.stderr.on("data", (d) => {
      stderr = (stderr + d).slice(-100_000);
      const m = /serving over HTTP on (http:\/\/127\.0\.0\.1:\d+)/.exec(stderr);
      if (m) {
        clearTimeout(timer);
        res({
          base: m[1],
          stderr: () => stderr,
          async stop() {
            if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
            const r = await within(exited, STEP_MS, "server exit").catch((err) => {
              child.kill("SIGKILL");
              throw err;
            });
            cache.cleanup();
            return r;
          },
        });
      }
    });
    exited.then(({ code, signal }) => {
      clearTimeout(timer);
      rej(new Error(`server exited (${code ?? signal}) before serving:\n${stderr}`));
    });
  });
}

/** Runs one scenario; resolves to { code, output, checks }. */
function runScenario(url, scenario) {
  const outDir = mkdtempSync(join(tmpdir(), "flowyprompt-conformance-"));
  const argv = [SUITE, "server", "--url", url, "--scenario", scenario, "-o", outDir];
  return new Promise((res, rej) => {
    const child = spawn(NODE22, argv, { cwd: HERE, stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, NO_COLOR: "1" } });
    let output = "";
    child.stdout.setEncoding("utf8");
    child.stderr.setEncoding("utf8");
    child.stdout.on("data", (c) => (output += c));
    child.stderr.on("data", (c) => (output += c));
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      rej(new Error(`${scenario} did not finish within ${RUN_MS} ms:\n${stripAnsi(output)}`));
    }, RUN_MS);
    child.once("error", (err) => {
      clearTimeout(timer);
      rej(err);
    });
    child.once("close", (code) => {
      clearTimeout(timer);
      const checks = [];
      for (const dir of readdirSync(outDir)) {
        const file = join(outDir, dir, "checks.json");
        if (existsSync(file)) checks.push(...JSON.parse(readFileSync(file, "utf8")));
      }
      rmSync(outDir, { recursive: true, force: true });
      res({ code, output: stripAnsi(output), checks });
    });
  });
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
