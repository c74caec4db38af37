// Shared helpers for the tests that drive the Node 22 command-line clients
// from node_modules: the MCP Inspector CLI (inspector.test.mjs,
// http.inspector.test.mjs) and, through conformance-helpers.mjs, the
// conformance suite.
//
// It does not import helpers.mjs, which insists on the flowyprompt binary at
// load time: the conformance tests against cmd/conformance-server run
// another binary and must load without it.
//
// This file is not a test file (node --test only picks up *.test.mjs here).

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const HERE = dirname(fileURLToPath(import.meta.url));

// Both CLIs need Node >= 22, whatever node runs the tests: the `node` npm
// package installs one here.
export const NODE22 = join(HERE, "node_modules", "node", "bin", "node");
export const INSPECTOR = join(HERE, "node_modules", ".bin", "inspector");

// CLI_SUITE_MS bounds a describe block of Inspector CLI calls: each call
// starts a Node 22 process and the server, seconds apiece while make test's
// Go race tests hold the CPU (5 to 10 s each were seen), so a dozen of them
// outgrow the suites' usual 90 s.
export const CLI_SUITE_MS = 300_000;

export const NODE22_WHAT = "Node 22 (npm package node@22)";

/**
 * Throws at load time, with the way out, when one of the [what, path] files
 * is missing: clearer than the same spawn error in every test.
 */
export function requireInstalled(files) {
  for (const [what, path] of files) {
    if (!existsSync(path)) throw new Error(`${what} not found at ${path}: run \`npm ci\` in internal/e2e`);
  }
}

/** Removes ANSI colour codes, which the conformance suite prints even into a pipe. */
export const stripAnsi = (s) => s.replace(/\x1b\[[0-9;?]*[ -/]*[@-~]/g, "");

// One inspector run (a few seconds here).
const INSPECT_MS = 30_000;

/**
 * Runs `inspector --cli -q --format json ARGS` under Node 22 with stdin from
 * /dev/null, in and with HOME at home (a tempDir: the CLI keeps state under
 * HOME/.mcp-inspector and MCP_STORAGE_DIR); resolves to
 * { code, stdout, stderr, json } where json is the parsed stdout
 * (undefined when empty).
 */
export function inspect(home, args) {
  const argv = [INSPECTOR, "--cli", "-q", "--format", "json", ...args];
  return new Promise((resolve, reject) => {
    const child = execFile(
      NODE22,
      argv,
      {
        cwd: home.dir,
        env: {
          PATH: process.env.PATH,
          HOME: home.dir,
          MCP_STORAGE_DIR: join(home.dir, "storage"),
          NO_COLOR: "1",
        },
        timeout: INSPECT_MS,
        killSignal: "SIGKILL",
        maxBuffer: 16 << 20,
      },
      (err, stdout, stderr) => {
        if (err && err.killed) {
          reject(new Error(`inspector ${args.join(" ")} timed out after ${INSPECT_MS} ms\n${stderr}`));
          return;
        }
        const code = err ? err.code : 0;
        if (typeof code !== "number") {
          reject(err);
          return;
        }
        let json;
        if (stdout.trim() !== "") {
          try {
            json = JSON.parse(stdout);
          } catch (e) {
            reject(new Error(`stdout is not JSON (${e.message}): ${stdout.slice(0, 500)}`));
            return;
          }
        }
        resolve({ code, stdout, stderr, json });
      },
    );
    child.stdin?.end(); // stdin as /dev/null: nothing to read, ever
  });
}

/** The {"error": ...} envelope the inspector CLI prints on stderr. */
export function errorEnvelope(stderr) {
  const line = stderr.trim().split("\n").findLast((l) => l.startsWith("{"));
  assert.ok(line, `an error envelope on stderr: ${stderr}`);
  return JSON.parse(line).error;
}
