// The MCP Inspector's command-line mode (@modelcontextprotocol/inspector
// 2.x, `inspector --cli`) against `flowyprompt serve --transport http`,
// over both transports: the URL ending in /mcp selects Streamable HTTP,
// the one ending in /sse the legacy SSE transport.
//
// The CLI facts this relies on are those of inspector.test.mjs (Node 22
// from the `node` npm package, -q, --format json, exit 5 for a tool error,
// the {"error": ...} envelope on stderr); in addition, for a URL target:
// - the transport is chosen from the URL's path (/mcp → http, /sse → sse);
// - --header "Name: value" adds an HTTP header to every request (how a
//   bearer token is sent on /mcp); on /sse the token rides in the URL.

import assert from "node:assert/strict";
import { execFile, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";

import { BIN, HERE, STEP_MS, exampleTemplate, expectedPrompt, serverEnv, tempDir, within } from "./helpers.mjs";

const NODE22 = join(HERE, "node_modules", "node", "bin", "node");
const INSPECTOR = join(HERE, "node_modules", ".bin", "inspector");
const RUN_MS = 30_000;
const START_MS = 15_000;
const SUITE_MS = 300_000;

for (const [what, path] of [["Node 22 (npm package node@22)", NODE22], ["MCP Inspector", INSPECTOR]]) {
  if (!existsSync(path)) {
    throw new Error(`${what} not found at ${path}: run \`npm ci\` in internal/e2e`);
  }
}

/** Starts the HTTP server on a free port; resolves to { base, stop(), stderr() }. */
function startHTTP(extraEnv = {}) {
  const cache = tempDir("flowyprompt-e2e-http-");
  const child = spawn(BIN, ["serve", "--transport", "http", "--addr", "127.0.0.1:0"], {
    env: serverEnv(cache.dir, extraEnv),
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  const exited = new Promise((res) => child.once("exit", (code, signal) => res({ code, signal })));
  return new Promise((res, rej) => {
    const timer = setTimeout(() => rej(new Error(`server did not start within ${START_MS} ms:\n${stderr}`)), START_MS);
    child.stderr.setEncoding("utf8");
    child.stderr.on("data", (d) => {
      stderr = (stderr + d).slice(-50_000);
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

let home;
before(() => {
  home = tempDir("flowyprompt-e2e-inspector-http-");
});
after(() => home?.cleanup());

/**
 * Runs `inspector --cli -q --format json URL ARGS` with stdin from
 * /dev/null; resolves to { code, stdout, stderr, json }.
 */
function inspect(url, args) {
  const argv = [INSPECTOR, "--cli", "-q", "--format", "json", url, ...args];
  return new Promise((resolve, reject) => {
    const child = execFile(
      NODE22,
      argv,
      {
        cwd: home.dir,
        env: { PATH: process.env.PATH, HOME: home.dir, MCP_STORAGE_DIR: join(home.dir, "storage"), NO_COLOR: "1" },
        timeout: RUN_MS,
        killSignal: "SIGKILL",
        maxBuffer: 16 << 20,
      },
      (err, stdout, stderr) => {
        if (err && err.killed) {
          reject(new Error(`inspector ${url} ${args.join(" ")} timed out after ${RUN_MS} ms\n${stderr}`));
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
    child.stdin?.end();
  });
}

/** The {"error": ...} envelope the CLI prints on stderr. */
function errorEnvelope(stderr) {
  const line = stderr.trim().split("\n").findLast((l) => l.startsWith("{"));
  assert.ok(line, `an error envelope on stderr: ${stderr}`);
  return JSON.parse(line).error;
}

const code = 'def add(a, b):\n    return a - b  # "quoted" {{code}}';

describe("MCP Inspector CLI over HTTP", { timeout: SUITE_MS }, () => {
  let server;
  before(async () => {
    server = await startHTTP();
  });
  after(async () => {
    const res = await server?.stop();
    assert.deepEqual(res, { code: 0, signal: null }, server?.stderr());
  });

  for (const path of ["/mcp", "/sse"]) {
    describe(`target ${path}`, () => {
      const url = () => `${server.base}${path}`;

      it("prompts/list lists the examples", async () => {
        const r = await inspect(url(), ["--method", "prompts/list"]);
        assert.equal(r.code, 0, r.stderr);
        const names = r.json.result.prompts.map((p) => p.name);
        for (const n of ["Code_Review", "Commit_Message", "Brand_Positioning_Strategy"]) {
          assert.ok(names.includes(n), `${n} listed`);
        }
      });

      it("prompts/get renders with --prompt-args", async () => {
        const args = { diff: "-a = 1\n+a = 2", why: "the = sign splits only once" };
        const r = await inspect(url(), [
          "--method",
          "prompts/get",
          "--prompt-name",
          "Commit_Message",
          "--prompt-args",
          ...Object.entries(args).map(([k, v]) => `${k}=${v}`),
        ]);
        assert.equal(r.code, 0, r.stderr);
        assert.equal(r.json.result.messages[0].content.text, expectedPrompt(exampleTemplate("Commit_Message"), args));
      });

      it("prompts/get of an unknown prompt fails with a non-zero exit", async () => {
        const r = await inspect(url(), ["--method", "prompts/get", "--prompt-name", "Code_Reveiw"]);
        assert.notEqual(r.code, 0);
        assert.match(errorEnvelope(r.stderr).message, /Code_Reveiw/);
      });

      it("tools/list lists the six tools with portable schemas (--strict)", async () => {
        const r = await inspect(url(), ["--method", "tools/list", "--strict"]);
        assert.equal(r.code, 0, r.stderr);
        assert.equal(r.json.result.tools.length, 6);
      });

      it("tools/call render returns the rendered prompt", async () => {
        const r = await inspect(url(), [
          "--method",
          "tools/call",
          "--tool-name",
          "flowyprompt_render_template",
          "--tool-args-json",
          JSON.stringify({ name: "Code_Review", arguments: { code, language: "Python" } }),
        ]);
        assert.equal(r.code, 0, r.stderr);
        const want = expectedPrompt(exampleTemplate("Code_Review"), { code, language: "Python" });
        assert.ok(r.json.result.content[0].text.includes(want));
      });

      it("tools/call with missing arguments is a tool error (exit 5)", async () => {
        const r = await inspect(url(), [
          "--method",
          "tools/call",
          "--tool-name",
          "flowyprompt_render_template",
          "--tool-arg",
          "name=Code_Review",
          "arguments={}",
        ]);
        assert.equal(r.code, 5, r.stderr);
        assert.match(r.json.result.content[0].text, /MISSING_REQUIRED_VARIABLE/);
      });

      it("tools/call search in Korean", async () => {
        const r = await inspect(url(), [
          "--method",
          "tools/call",
          "--tool-name",
          "flowyprompt_search_templates",
          "--tool-arg",
          "query=브랜드",
        ]);
        assert.equal(r.code, 0, r.stderr);
        assert.match(r.json.result.content[0].text, /Brand_Positioning_Strategy/);
      });
    });
  }
});

describe("MCP Inspector CLI over HTTP with an access token", { timeout: SUITE_MS }, () => {
  const token = "inspector-e2e-token";
  let server;
  before(async () => {
    server = await startHTTP({ MCP_AUTH_TOKEN: token });
  });
  after(async () => {
    assert.deepEqual(await server?.stop(), { code: 0, signal: null });
  });

  it("/mcp without the token fails", async () => {
    const r = await inspect(`${server.base}/mcp`, ["--method", "tools/list"]);
    assert.notEqual(r.code, 0);
  });

  it("/mcp with --header Authorization works", async () => {
    const r = await inspect(`${server.base}/mcp`, ["--method", "tools/list", "--header", `Authorization: Bearer ${token}`]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.json.result.tools.length, 6);
  });

  it("/sse with ?token= works", async () => {
    const r = await inspect(`${server.base}/sse?token=${token}`, ["--method", "prompts/list", "--transport", "sse"]);
    assert.equal(r.code, 0, r.stderr);
    assert.ok(r.json.result.prompts.length >= 10);
  });
});
