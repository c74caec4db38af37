// Shared helpers for the tests that run the official MCP conformance suite
// (conformance.test.mjs, conformance-all.test.mjs, conformance-next.test.mjs):
// its two pinned versions, the fixture server cmd/conformance-server, and
// the checks a run saves.
//
// Like cli-helpers.mjs, it does not import helpers.mjs, which insists on the
// flowyprompt binary at load time: the tests against the fixture server must
// load without it.
//
// Facts about the suite these helpers rely on (checked against 0.1.16 and
// 0.2.0-alpha.12):
// - The package's bin is dist/index.js; it needs Node 22, so it runs under
//   the Node 22 that the `node` npm package installs.
// - `-o DIR` writes each scenario's checks to
//   DIR/server-<scenario>-<ISO time>/checks.json, an array of
//   { id, name, status, errorMessage?, details? } where status is SUCCESS,
//   FAILURE, WARNING, SKIPPED or INFO.
// - It prints ANSI colours even into a pipe.
//
// This file is not a test file (node --test only picks up *.test.mjs here).

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, isAbsolute, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

import { NODE22, NODE22_WHAT, stripAnsi } from "./cli-helpers.mjs";

const HERE = dirname(fileURLToPath(import.meta.url));

/** The 2025-era suite, @modelcontextprotocol/conformance 0.1.16. */
export const CONFORMANCE = {
  what: "@modelcontextprotocol/conformance 0.1.16",
  entry: join(HERE, "node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js"),
};

/** The suite of revision 2026-07-28, 0.2.0-alpha.12, installed as conformance-next. */
export const CONFORMANCE_NEXT = {
  what: "@modelcontextprotocol/conformance 0.2.0-alpha.12 (conformance-next)",
  entry: join(HERE, "node_modules", "conformance-next", "dist", "index.js"),
};

/** The fixture server: FLOWYPROMPT_CONFORMANCE_BIN (absolute), or ../../bin/conformance-server. */
export const FIXTURE_BIN = (() => {
  const env = process.env.FLOWYPROMPT_CONFORMANCE_BIN;
  if (env && !isAbsolute(env)) {
    throw new Error(`FLOWYPROMPT_CONFORMANCE_BIN must be an absolute path, got ${env}`);
  }
  return env || resolve(HERE, "..", "..", "bin", "conformance-server");
})();

/** Checks that what a run needs is there, with a message that says how to get it. */
export function requireFiles(suite, { fixture = true } = {}) {
  const files = [
    [NODE22_WHAT, NODE22, "run `npm ci` in internal/e2e"],
    [suite.what, suite.entry, "run `npm ci` in internal/e2e"],
  ];
  if (fixture) {
    files.push(["conformance server binary", FIXTURE_BIN,
      "go build -o bin/conformance-server ./cmd/conformance-server, or set FLOWYPROMPT_CONFORMANCE_BIN"]);
  }
  for (const [what, path, how] of files) {
    assert.ok(existsSync(path), `${what} not found at ${path}: ${how}`);
  }
}

/**
 * Runs `conformance ARGS` of suite under Node 22, killing it after ms;
 * resolves to { code, output } with stdout and stderr merged and stripped of
 * colour. what names the run in the time-out error.
 */
export function runConformance(suite, args, ms, what) {
  return new Promise((res, rej) => {
    const child = spawn(NODE22, [suite.entry, ...args], {
      cwd: HERE,
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, NO_COLOR: "1" },
    });
    let output = "";
    child.stdout.setEncoding("utf8");
    child.stderr.setEncoding("utf8");
    child.stdout.on("data", (c) => (output += c));
    child.stderr.on("data", (c) => (output += c));
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      rej(new Error(`${what} did not finish within ${ms} ms:\n${stripAnsi(output)}`));
    }, ms);
    child.once("error", (err) => {
      clearTimeout(timer);
      rej(err);
    });
    child.once("close", (code) => {
      clearTimeout(timer);
      res({ code, output: stripAnsi(output) });
    });
  });
}

/** Calls fn(dir) with a fresh temporary directory, removed afterwards. */
export async function withOutDir(fn) {
  const dir = mkdtempSync(join(tmpdir(), "flowyprompt-conformance-"));
  try {
    return await fn(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The checks a run saved under outDir: [{ scenario, checks }], by scenario name. */
export function savedChecks(outDir) {
  const out = [];
  for (const dir of readdirSync(outDir).sort()) {
    const file = join(outDir, dir, "checks.json");
    if (!existsSync(file)) continue;
    const scenario = dir.replace(/^server-/, "").replace(/-\d{4}-\d\d-\d\dT.*$/, "");
    out.push({ scenario, checks: JSON.parse(readFileSync(file, "utf8")) });
  }
  return out;
}

/** Every check of results that is a FAILURE or a WARNING, flattened, for messages and assertions. */
export function badChecks(results) {
  const out = [];
  for (const { scenario, checks } of results) {
    for (const c of checks) {
      if (c.status === "FAILURE" || c.status === "WARNING") {
        out.push({ scenario, status: c.status, id: c.id, message: c.errorMessage ?? c.details?.message ?? "" });
      }
    }
  }
  return out;
}

// How long the fixture server may take to bind its port and say so.
const START_MS = 15_000;

/**
 * Starts the conformance server on a free loopback port (it binds port 0
 * and logs the address it got) and resolves to { url, stop, stderr() }.
 */
export function startFixture(args = []) {
  const child = spawn(FIXTURE_BIN, ["--addr", "127.0.0.1:0", "--watch-interval", "500ms", ...args], {
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  const exited = new Promise((res) => child.once("exit", (code, signal) => res({ code, signal })));
  const url = new Promise((res, rej) => {
    const timer = setTimeout(() => rej(new Error(`server did not log its address within ${START_MS} ms:\n${stderr}`)), START_MS);
    child.stderr.setEncoding("utf8");
    child.stderr.on("data", (chunk) => {
      stderr += chunk;
      const m = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(stderr);
      if (m) {
        clearTimeout(timer);
        res(m[1]);
      }
    });
    child.once("error", (err) => {
      clearTimeout(timer);
      rej(err);
    });
    exited.then(({ code, signal }) => {
      clearTimeout(timer);
      rej(new Error(`server exited (code ${code}, signal ${signal}) before listening:\n${stderr}`));
    });
  });
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return exited;
    child.kill("SIGTERM");
    const kill = setTimeout(() => child.kill("SIGKILL"), 10_000);
    const status = await exited;
    clearTimeout(kill);
    return status;
  };
  return { url, stop, stderr: () => stderr };
}

/**
 * Runs suite against a fresh fixture server started with serverArgs:
 * `conformance server --url URL/mcp ...cliArgs -o DIR`. Resolves to
 * { code, output, results, explain } once the server has exited 0 on
 * SIGTERM; results are savedChecks(DIR), explain the output and the server's
 * log for failure messages.
 */
export async function runOnFixture(suite, serverArgs, cliArgs, ms) {
  requireFiles(suite);
  return withOutDir(async (outDir) => {
    const server = startFixture(serverArgs);
    let run;
    try {
      const url = await server.url;
      run = await runConformance(suite, ["server", "--url", `${url}/mcp`, ...cliArgs, "-o", outDir], ms, suite.what);
    } finally {
      const status = await server.stop();
      if (run) {
        assert.equal(status.code, 0, `the server should exit 0 on SIGTERM (got ${JSON.stringify(status)}):\n${server.stderr()}`);
      }
    }
    const explain = `\n--- conformance output ---\n${run.output}\n--- server stderr ---\n${server.stderr()}`;
    return { ...run, results: savedChecks(outDir), explain };
  });
}

/**
 * What `conformance list --requirements REVISION` says of the server leg:
 * { scored: [scenario], notScored: Map(scenario -> reason) }, where the
 * reason is "extension", "pending", "added-after-release", ...
 */
export async function requirementSet(suite, revision) {
  const { code, output } = await runConformance(suite, ["list", "--requirements", revision], 30_000, `list --requirements ${revision}`);
  assert.equal(code, 0, `conformance list --requirements ${revision} exited ${code}:\n${output}`);
  const scored = [];
  const notScored = new Map();
  let section = "";
  let reason = "";
  for (const line of output.split("\n")) {
    if (/^\S/.test(line)) section = line;
    let m;
    if (section.startsWith("Server scenarios") && (m = /^ {2}- (\S+)$/.exec(line))) scored.push(m[1]);
    if (section.startsWith("Run and reported, but never scored")) {
      if ((m = /^ {2}(\S+) \(\d+\):$/.exec(line))) reason = m[1];
      if ((m = /^ {4}- (\S+) \[server\]$/.exec(line))) notScored.set(m[1], reason);
    }
  }
  assert.ok(scored.length > 0, `no server scenarios in:\n${output}`);
  return { scored, notScored };
}
