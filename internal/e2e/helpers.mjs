// Shared helpers for the end-to-end tests: where the binary is, a hermetic
// environment for it, bounded waits, the HTTP server's start and stop,
// assertions on client results, a raw line-oriented MCP client, and an
// independent implementation of the documented prompt format so the tests
// check the server against the specification rather than against itself.
//
// This file is not a test file (node --test only picks up *.test.mjs here).

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, isAbsolute, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { createInterface } from "node:readline";

export const HERE = dirname(fileURLToPath(import.meta.url));
export const REPO = resolve(HERE, "..", "..");
export const EXAMPLES = join(REPO, "templates", "examples");

// FLOWYPROMPT_BIN must be absolute, because the clients spawn it from other
// working directories; the default is the lead's build output.
export const BIN = (() => {
  const env = process.env.FLOWYPROMPT_BIN;
  if (env) {
    if (!isAbsolute(env)) {
      throw new Error(`FLOWYPROMPT_BIN must be an absolute path, got ${env}`);
    }
    return env;
  }
  return resolve(HERE, "..", "..", "bin", "flowyprompt");
})();

if (!existsSync(BIN)) {
  // Fail loudly at load time rather than with a confusing spawn ENOENT in
  // every test.
  throw new Error(
    `flowyprompt binary not found at ${BIN}: build it with ` +
      "`go build -o bin/flowyprompt ./cmd/flowyprompt` or set FLOWYPROMPT_BIN",
  );
}

// Every wait in the suite is bounded by one of these.
export const STEP_MS = 10_000; // one request/response
export const WATCH_MS = 15_000; // a file-system change reaching the client
export const SUITE_MS = 90_000; // a whole describe block, hooks included

// The ten tools the server always lists (save is off unless enabled).
export const TOOL_NAMES = [
  "flowyprompt_list_templates",
  "flowyprompt_search_templates",
  "flowyprompt_get_template",
  "flowyprompt_render_template",
  "flowyprompt_validate_template",
  "flowyprompt_template_history",
  "flowyprompt_diff_template",
  "flowyprompt_refresh_templates",
  "flowyprompt_start_flow",
  "flowyprompt_next_flow_step",
];

/** A temporary directory removed by the returned cleanup function. */
/** The fake GitHub API's binary (cmd/fakegithub; make test-bins builds it). */
export const FAKE_GITHUB = process.env.FAKEGITHUB_BIN ?? resolve(REPO, "bin", "fakegithub");

/**
 * Starts the fake GitHub API with args and returns its process with what
 * its first line says (JSON: its API URL, control URL, repository...).
 */
export async function startFakeGitHub(args = []) {
  const proc = spawn(FAKE_GITHUB, args, { stdio: ["pipe", "pipe", "inherit"] });
  const line = await within(
    new Promise((res, rej) => {
      createInterface({ input: proc.stdout }).once("line", res);
      proc.once("exit", (code) => rej(new Error(`fakegithub exited ${code}`)));
    }),
    STEP_MS,
    "fakegithub start",
  );
  return { proc, ...JSON.parse(line) };
}

export function tempDir(prefix = "flowyprompt-e2e-") {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/**
 * A hermetic environment for the server: only what a process needs to run,
 * a private cache directory, and none of the configuration (GITHUB_*,
 * TEMPLATES_DIR, ...) that the developer's shell may hold, so the server
 * serves the embedded examples unless a test says otherwise.
 */
export function serverEnv(cacheDir, extra = {}) {
  const env = {};
  for (const k of ["PATH", "HOME", "USER", "LOGNAME", "LANG", "TMPDIR"]) {
    if (process.env[k] !== undefined) env[k] = process.env[k];
  }
  env.XDG_CACHE_HOME = cacheDir;
  env.XDG_CONFIG_HOME = cacheDir;
  return { ...env, ...extra };
}

/** Rejects with a labelled error when p does not settle within ms. */
export function within(p, ms, label) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${label}`)), ms);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}

/**
 * Retries the async assertion fn until it passes, for at most ms; then
 * throws its last failure. For state that a notification announces but
 * that a straggling earlier notification could make us check too soon.
 */
export async function eventually(fn, ms = WATCH_MS, every = 100) {
  const deadline = Date.now() + ms;
  for (;;) {
    try {
      return await fn();
    } catch (err) {
      if (Date.now() >= deadline) throw err;
      await sleep(every);
    }
  }
}

/** Resolves after ms. */
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Resolves to the error p rejects with; fails when p resolves. */
export async function rejection(p, label) {
  try {
    const v = await p;
    assert.fail(`${label}: expected an error, got ${JSON.stringify(v).slice(0, 500)}`);
  } catch (err) {
    if (err instanceof assert.AssertionError) throw err;
    return err;
  }
}

/** Every page of a paginated list call, following nextCursor. */
export async function listAll(call, key) {
  const all = [];
  let cursor;
  for (let page = 0; page < 50; page++) {
    const res = await call(cursor === undefined ? {} : { cursor });
    all.push(...res[key]);
    cursor = res.nextCursor;
    if (!cursor) return all;
  }
  throw new Error(`${key}: more than 50 pages, the cursor does not advance`);
}

/**
 * Records the JSON-RPC messages a client transport sends and receives,
 * whatever the SDK, in { sent, received }: clients set the transport's
 * onmessage when they connect, so the tap wraps whatever they set. Call it
 * before connecting.
 */
export function tapTransport(transport) {
  const tap = { sent: [], received: [] };
  let handler;
  const tapped = (msg, extra) => {
    tap.received.push(msg);
    return handler(msg, extra);
  };
  Object.defineProperty(transport, "onmessage", {
    configurable: true,
    get: () => (handler ? tapped : undefined),
    set: (fn) => {
      handler = fn;
    },
  });
  const send = transport.send.bind(transport);
  transport.send = (msg, options) => {
    tap.sent.push(msg);
    return send(msg, options);
  };
  return tap;
}

/**
 * Asserts that the last request tap saw the client send asked for progress
 * and got it: two or more notifications/progress with its token, counting
 * up to their total. Counted on the wire: the SDKs drop progress that
 * arrives in the same read as the response (notification handlers run a
 * microtask later; typescript-sdk#2580), a race no server can avoid.
 * Returns the request's progress token.
 */
export function assertProgressOnWire(tap) {
  const request = tap.sent.findLast((m) => m.id !== undefined && m.method);
  const token = request?.params?._meta?.progressToken;
  assert.notEqual(token, undefined, `${request?.method} asked for progress`);
  const progress = tap.received
    .filter((m) => m.method === "notifications/progress" && m.params.progressToken === token)
    .map((m) => m.params);
  assert.ok(progress.length >= 2, `progress notifications: ${JSON.stringify(progress)}`);
  assert.equal(progress.at(-1).progress, progress.at(-1).total);
  for (let i = 1; i < progress.length; i++) assert.ok(progress[i].progress > progress[i - 1].progress);
  return token;
}

/** The text of a tool result's first content block, which must be text. */
export function firstText(res) {
  assert.ok(Array.isArray(res.content) && res.content.length > 0, "content is a non-empty array");
  assert.equal(res.content[0].type, "text");
  assert.equal(typeof res.content[0].text, "string");
  return res.content[0].text;
}

// How long the HTTP server may take to bind its port and say so.
const START_MS = 15_000;

/**
 * Starts `flowyprompt serve --transport http` on a free loopback port (it
 * binds port 0 and prints the URL it got) and resolves to
 * { base, child, exited, stderr(), stdout(), stop() }. stop() sends SIGTERM
 * and resolves to the exit { code, signal }; the stderr tail is kept for
 * failure messages, stdout whole, because over HTTP it must stay empty.
 */
export function startHTTP(extraArgs = [], extraEnv = {}) {
  const cache = tempDir("flowyprompt-e2e-http-");
  const child = spawn(BIN, ["serve", "--transport", "http", "--addr", "127.0.0.1:0", ...extraArgs], {
    env: serverEnv(cache.dir, extraEnv),
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stderr = "";
  let stdout = "";
  const exited = new Promise((res) => child.once("exit", (code, signal) => res({ code, signal })));
  child.stdout.setEncoding("utf8");
  child.stdout.on("data", (d) => {
    stdout += d;
  });
  const base = new Promise((res, rej) => {
    const timer = setTimeout(
      () => rej(new Error(`server did not print its URL within ${START_MS} ms:\n${stderr}`)),
      START_MS,
    );
    child.stderr.setEncoding("utf8");
    child.stderr.on("data", (d) => {
      stderr = (stderr + d).slice(-100_000);
      const m = /serving over HTTP on (http:\/\/127\.0\.0\.1:\d+)/.exec(stderr);
      if (m) {
        clearTimeout(timer);
        res(m[1]);
      }
    });
    exited.then(({ code, signal }) => {
      clearTimeout(timer);
      rej(new Error(`server exited (${code ?? signal}) before serving:\n${stderr}`));
    });
  });
  return base.then((url) => ({
    base: url,
    child,
    stderr: () => stderr,
    stdout: () => stdout,
    exited,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
      const res = await within(exited, STEP_MS, "server exit after SIGTERM").catch(async (err) => {
        child.kill("SIGKILL");
        throw err;
      });
      cache.cleanup();
      return res;
    },
  }));
}

/**
 * The prompts the built-in examples are served as, sorted: each JSON
 * template by its metadata.name, each file of another format by its base
 * name without the format's extension (dotprompt partials, _NAME.prompt,
 * are not prompts), and each flow of examples/flows as flow:NAME.
 */
export function examplePrompts() {
  const json = (dir) => readdirSync(dir).filter((f) => f.endsWith(".json"));
  const formats = readdirSync(EXAMPLES)
    .map((f) => /^([^_.][^.]*)\.(?:prompt\.ya?ml|prompt|prompty)$/.exec(f)?.[1])
    .filter(Boolean);
  const templates = [...json(EXAMPLES).map((f) => exampleTemplate(f.slice(0, -5)).metadata.name), ...formats];
  const flows = json(join(EXAMPLES, "flows")).map((f) => `flow:${JSON.parse(readFileSync(join(EXAMPLES, "flows", f), "utf8")).name}`);
  return [...templates, ...flows].sort();
}

/** Reads and parses one example template by file name (without .json). */
export function exampleTemplate(name) {
  return JSON.parse(readFileSync(join(EXAMPLES, `${name}.json`), "utf8"));
}

/**
 * The prompt text for template t with args, computed from TEMPLATES.md
 * ("Variables and rendering"), independently of the server's code:
 *
 *   # NAME\n\nDESCRIPTION\n\n**Version**: V\n[**Tags**: a, b\n]\n---\n\n
 *   SECTION\n\n---\n\nSECTION            (no separator after the last)
 *
 * sections sorted by order (stable; missing order = array index);
 * placeholders {{ name }} with whitespace trimmed and extra braces taken
 * (min of opening/closing); an empty or missing value takes the default,
 * else ""; single pass; the finished text is trimmed at its end, as the
 * seed's reference code does.
 */
export function expectedPrompt(t, args = {}) {
  const m = t.metadata;
  let out = `# ${m.name}\n\n${m.description}\n\n**Version**: ${m.version}\n`;
  if (Array.isArray(m.tags) && m.tags.length > 0) {
    out += `**Tags**: ${m.tags.join(", ")}\n`;
  }
  const values = {};
  for (const v of t.variables) {
    const given = args[v.name];
    if (given !== undefined && given !== "") values[v.name] = given;
    else if (v.required) throw new Error(`expectedPrompt: ${v.name} is required`);
    else values[v.name] = v.default ?? "";
  }
  const sections = t.results
    .map((r, i) => ({ r, key: r.order ?? i, i }))
    .sort((a, b) => a.key - b.key || a.i - b.i)
    .map(({ r }) => substitute(r.content, values));
  out += "\n---\n\n" + sections.join("\n\n---\n\n");
  return out.replace(/\s+$/u, "");
}

function substitute(content, values) {
  // One pass with a global regular expression never rescans replaced text,
  // which is the single-pass rule.
  return content.replace(
    /(\{{2,})[ \t\r\n]*([A-Za-z0-9_]+)[ \t\r\n]*(\}{2,})/gu,
    (whole, open, name, close) => {
      if (!(name in values)) return whole;
      const take = Math.min(open.length, close.length);
      return open.slice(take) + values[name] + close.slice(take);
    },
  );
}

/**
 * A raw MCP client over a child process's stdin/stdout: it writes lines
 * exactly as given and collects every stdout line, so tests can send
 * malformed frames that no SDK would produce, and check that stdout holds
 * nothing but JSON.
 */
export class RawSession {
  /** extraEnv is added to serverEnv's hermetic environment. */
  constructor(args = ["serve"], extraEnv = {}) {
    this.cache = tempDir("flowyprompt-e2e-cache-");
    this.child = spawn(BIN, args, {
      env: serverEnv(this.cache.dir, extraEnv),
      stdio: ["pipe", "pipe", "pipe"],
    });
    this.lines = []; // every stdout line, parsed or not
    this.stderr = "";
    this.waiters = [];
    this.exited = new Promise((resolveExit) => {
      this.child.on("exit", (code, signal) => resolveExit({ code, signal }));
    });
    this.child.stderr.setEncoding("utf8");
    this.child.stderr.on("data", (d) => {
      // Keep the tail only: enough to diagnose a failure.
      this.stderr = (this.stderr + d).slice(-20_000);
    });
    // A write after the child died must fail the test, not the process.
    this.child.stdin.on("error", () => {});
    createInterface({ input: this.child.stdout }).on("line", (line) => {
      let msg;
      try {
        msg = JSON.parse(line);
      } catch {
        msg = undefined;
      }
      this.lines.push({ line, msg });
      this.waiters = this.waiters.filter((w) => !w(msg));
    });
  }

  /** Writes one line (a string is sent verbatim, anything else as JSON). */
  send(frame) {
    const line = typeof frame === "string" ? frame : JSON.stringify(frame);
    this.child.stdin.write(line + "\n");
  }

  /** Waits for the first message (seen so far or later) matching pred. */
  next(pred, label, ms = STEP_MS) {
    const seen = this.lines.find((l) => l.msg !== undefined && pred(l.msg));
    if (seen) return Promise.resolve(seen.msg);
    return within(
      new Promise((res) => {
        this.waiters.push((msg) => {
          if (msg !== undefined && pred(msg)) {
            res(msg);
            return true;
          }
          return false;
        });
      }),
      ms,
      `${label}; stderr tail:\n${this.stderr}`,
    );
  }

  /** Waits for the i-th stdout line (0-based), parsed or not. */
  lineAt(i, label, ms = STEP_MS) {
    if (this.lines.length > i) return Promise.resolve(this.lines[i]);
    return within(
      new Promise((res) => {
        this.waiters.push(() => {
          if (this.lines.length > i) {
            res(this.lines[i]);
            return true;
          }
          return false;
        });
      }),
      ms,
      `${label}; stderr tail:\n${this.stderr}`,
    );
  }

  /**
   * Waits for the response whose id is idJSON (JSON text) and returns it
   * with its raw line, so a caller can check the id's digits on the wire:
   * JavaScript numbers cannot tell 2^53 from 2^53+1.
   */
  response(idJSON, label) {
    const want = JSON.stringify(JSON.parse(idJSON));
    return this.next(
      (m) => "id" in m && !("method" in m) && JSON.stringify(m.id) === want,
      label ?? `response to id ${idJSON}`,
    ).then((msg) => {
      const raw = this.lines.find((l) => l.msg === msg).line;
      return { msg, raw };
    });
  }

  /** Sends a request and waits for its response. */
  async request(id, method, params) {
    const frame = { jsonrpc: "2.0", id, method };
    if (params !== undefined) frame.params = params;
    this.send(frame);
    return (await this.response(JSON.stringify(id), `${method} (id ${JSON.stringify(id)})`)).msg;
  }

  /** initialize + notifications/initialized. */
  async initialize(protocolVersion = "2025-11-25", id = "init") {
    const res = await this.request(id, "initialize", {
      protocolVersion,
      capabilities: {},
      clientInfo: { name: "flowyprompt-e2e-raw", version: "0.0.0" },
    });
    this.send({ jsonrpc: "2.0", method: "notifications/initialized" });
    return res;
  }

  /** Ends the child for good (used by after hooks). */
  async kill() {
    if (this.child.exitCode === null && this.child.signalCode === null) {
      this.child.kill("SIGKILL");
      await within(this.exited, STEP_MS, "child exit after SIGKILL").catch(() => {});
    }
    this.cache.cleanup();
  }
}
