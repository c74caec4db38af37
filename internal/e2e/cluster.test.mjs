// Three replicas of the built binary joined through NATS, behind a
// round-robin proxy that knows nothing of sessions, serving one GitHub
// library (cmd/testcluster: a real embedded NATS server, the fake GitHub
// API, the replicas as processes, the proxy). Real SDK clients of both
// eras check, end to end, what docs/scale-out.md promises:
//
//   - the cluster's GitHub cost: one cold start's worth for all replicas,
//     then about one conditional request per TTL for the whole cluster;
//   - every answer right although most requests of a session reach a
//     replica that does not hold it (they are forwarded through NATS);
//   - an upstream change reaches every replica's clients (list_changed on
//     2025 streams, legacy SSE and 2026 subscriptions/listen), and every
//     replica serves the new text;
//   - a dead replica's sessions answer 404 through the others while new
//     sessions and every 2026 request keep working;
//   - without NATS each replica keeps serving what it can alone, and rejoins
//     when NATS is back.
//
// The steps run in order on one cluster (node:test runs a describe's tests
// one after another) and every wait is bounded.

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { createInterface } from "node:readline";
import { after, before, describe, it } from "node:test";

import { Client as ClientV1 } from "@modelcontextprotocol/sdk/client/index.js";
import { SSEClientTransport } from "@modelcontextprotocol/sdk/client/sse.js";
import { StreamableHTTPClientTransport as StreamableV1 } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { PromptListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { StreamableHTTPClientTransport as StreamableV2 } from "@modelcontextprotocol/client";

import { BIN, eventually, expectedPrompt, rejection, REPO, sleep, STEP_MS, within } from "./helpers.mjs";
import { SDK_V2 } from "./sdk2-helpers.mjs";

const CLUSTER_BIN = process.env.TESTCLUSTER_BIN ?? resolve(REPO, "bin", "testcluster");
if (!existsSync(CLUSTER_BIN)) {
  throw new Error(`testcluster not found at ${CLUSTER_BIN}: run make test-bins or set TESTCLUSTER_BIN`);
}

const REPLICAS = 3;
const TEMPLATES = 150;
const TTL_MS = 3000;
const TOKEN = "ghp_clusterSecretTokenThatMustNeverLeak0123";
const opts = { timeout: STEP_MS };
const fresh = { ...opts, ...SDK_V2.fresh };

// The library the fake GitHub holds (fakegithub.GenerateLibrary): template
// i is Generated_%03d with one required variable and one section.
const nameOf = (i) => `Generated_${String(i).padStart(3, "0")}`;
function generated(i, content = `Write about {{subject}} (template ${i}).`, version = "1.0.0") {
  const name = nameOf(i);
  return {
    metadata: {
      name,
      description: `Generated template ${name}`,
      version,
      author: "fakegithub",
      tags: ["generated"],
      category: "Testing",
    },
    variables: [{ name: "subject", type: "string", description: "What to write about", required: true }],
    results: [{ name: "Task", content, format: "markdown" }],
  };
}
const LIBRARY = new Map(Array.from({ length: TEMPLATES }, (_, i) => [nameOf(i), generated(i)]));

/** Starts testcluster and resolves to its addresses, process and exit. */
async function startCluster() {
  const proc = spawn(
    CLUSTER_BIN,
    ["-bin", BIN, "-replicas", String(REPLICAS), "-templates", String(TEMPLATES), "-cache-ttl", `${TTL_MS}ms`, "-token", TOKEN],
    { stdio: ["pipe", "pipe", "pipe"] },
  );
  let stderr = "";
  proc.stderr.setEncoding("utf8");
  proc.stderr.on("data", (d) => (stderr = (stderr + d).slice(-20_000)));
  const exited = new Promise((res) => proc.once("exit", (code, signal) => res({ code, signal })));
  const line = await within(
    new Promise((res, rej) => {
      createInterface({ input: proc.stdout }).once("line", res);
      exited.then(({ code, signal }) => rej(new Error(`testcluster exited (${code ?? signal}):\n${stderr}`)));
    }),
    30_000,
    "testcluster start",
  );
  return { proc, exited, stderr: () => stderr, ...JSON.parse(line) };
}

async function ctl(cluster, method, path, body) {
  const res = await within(fetch(cluster.control + path, { method, body }), STEP_MS, `${method} ${path}`);
  const text = await res.text();
  assert.equal(res.status, 200, `${method} ${path}: ${text}`);
  return res.headers.get("content-type")?.startsWith("application/json") ? JSON.parse(text) : text;
}

const health = async (cluster) => (await ctl(cluster, "GET", "/health")).replicas;

/**
 * A raw 2025-era request naming session sid, on /mcp or /sse/message (by
 * the session's transport), to base: resolves to { status, body }.
 */
async function rawSessionRequest(base, era, sid) {
  const ping = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" });
  const headers = { "Content-Type": "application/json", Accept: "application/json, text/event-stream" };
  const url =
    era === "2025 /sse"
      ? `${base}/sse/message?session_id=${encodeURIComponent(sid)}`
      : `${base}/mcp`;
  if (era !== "2025 /sse") Object.assign(headers, { "Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-11-25" });
  const res = await within(fetch(url, { method: "POST", headers, body: ping }), STEP_MS, `POST ${url}`);
  return { status: res.status, body: await res.text() };
}

/** A 2025-era client over Streamable HTTP (/mcp) of the 1.x SDK. */
async function legacyMCP(base, name, onListChanged) {
  const transport = new StreamableV1(new URL(`${base}/mcp`));
  const client = new ClientV1({ name, version: "0.0.0" });
  client.onerror = () => {}; // a replica killed on purpose makes streams fail
  if (onListChanged) client.setNotificationHandler(PromptListChangedNotificationSchema, onListChanged);
  await within(client.connect(transport, opts), STEP_MS, `${name}: connect to ${base}/mcp`);
  return { name, era: "2025 /mcp", client, transport, sid: () => transport.sessionId };
}

/** A 2025-era client over the legacy SSE transport (/sse) of the 1.x SDK. */
async function legacySSE(base, name, onListChanged) {
  const transport = new SSEClientTransport(new URL(`${base}/sse`));
  const client = new ClientV1({ name, version: "0.0.0" });
  client.onerror = () => {};
  if (onListChanged) client.setNotificationHandler(PromptListChangedNotificationSchema, onListChanged);
  await within(client.connect(transport, opts), STEP_MS, `${name}: connect to ${base}/sse`);
  // The session id is in the endpoint the server announced; the SDK keeps
  // it to itself.
  return { name, era: "2025 /sse", client, sid: () => transport._endpoint?.searchParams.get("session_id") };
}

/** A 2026-07-28 client (2.x SDK): no session, every request stands alone. */
async function modern(base, name, onListChanged) {
  const client = SDK_V2.client(name);
  client.onerror = () => {};
  if (onListChanged) client.setNotificationHandler("notifications/prompts/list_changed", onListChanged);
  await within(client.connect(new StreamableV2(new URL(`${base}/mcp`)), opts), STEP_MS, `${name}: connect to ${base}/mcp`);
  return { name, era: "2026", modern: true, client, sid: () => undefined };
}

const closeAll = (clients) =>
  Promise.all(clients.map((c) => within(c.client.close(), STEP_MS, `${c.name}: close`).catch(() => {})));

// One operation of the mix, checked against the library; resolves to the
// number of requests it made.
async function operation(c, i) {
  const k = (i * 37 + c.name.length) % TEMPLATES;
  const name = nameOf(k);
  const subject = `topic ${i}`;
  const call = (params) => (c.modern ? c.client.callTool(params, opts) : c.client.callTool(params, undefined, opts));
  switch (i % 5) {
    case 0: {
      // Every page of prompts/list, cursors included: they are opaque
      // to the client and must work on whichever replica gets them.
      const names = [];
      let cursor;
      let pages = 0;
      do {
        const res = await c.client.listPrompts(cursor ? { cursor } : {}, fresh);
        names.push(...res.prompts.map((p) => p.name));
        cursor = res.nextCursor;
        pages++;
      } while (cursor && pages < 50);
      assert.deepEqual(names.sort(), [...LIBRARY.keys()].sort(), `${c.name}: prompts/list`);
      return pages;
    }
    case 1: {
      const res = await c.client.getPrompt({ name, arguments: { subject } }, opts);
      assert.equal(res.messages[0].content.text, expectedPrompt(LIBRARY.get(name), { subject }), `${c.name}: prompts/get ${name}`);
      return 1;
    }
    case 2: {
      const res = await call({ name: "flowyprompt_render_template", arguments: { name, arguments: { subject } } });
      assert.notEqual(res.isError, true, `${c.name}: render ${name}: ${JSON.stringify(res).slice(0, 300)}`);
      assert.equal(res.structuredContent.text, expectedPrompt(LIBRARY.get(name), { subject }), `${c.name}: render ${name}`);
      return 1;
    }
    case 3: {
      const res = await call({ name: "flowyprompt_get_template", arguments: { name } });
      assert.notEqual(res.isError, true, `${c.name}: get_template ${name}: ${JSON.stringify(res).slice(0, 300)}`);
      assert.equal(res.structuredContent.metadata.name, name);
      assert.equal(res.structuredContent.metadata.description, LIBRARY.get(name).metadata.description);
      return 1;
    }
    default: {
      const res = await call({ name: "flowyprompt_list_templates", arguments: { limit: 20 } });
      assert.notEqual(res.isError, true, `${c.name}: list_templates: ${JSON.stringify(res).slice(0, 300)}`);
      assert.equal(res.structuredContent.total, TEMPLATES);
      assert.equal(res.structuredContent.templates.length, 20);
      for (const t of res.structuredContent.templates) assert.ok(LIBRARY.has(t.name), `${t.name} is in the library`);
      return 1;
    }
  }
}

describe("three replicas behind a round-robin proxy, joined through NATS", { timeout: 120_000 }, () => {
  let cluster;
  let ready; // GitHub's counts once every replica had loaded the library
  const direct = []; // listeners connected to one replica each
  const viaProxy = []; // the mix's clients
  const heard = new Map(); // listener name → list_changed count
  const hear = (name) => {
    heard.set(name, 0);
    return () => heard.set(name, heard.get(name) + 1);
  };

  before(async () => {
    cluster = await startCluster();
    // A replica prints its URL before the library has loaded; the cold
    // start is over when every one serves all the templates.
    await eventually(
      async () => {
        for (const [id, h] of Object.entries(await health(cluster))) {
          assert.equal(h.healthz?.templates, TEMPLATES, `${id}: ${JSON.stringify(h).slice(0, 400)}`);
        }
      },
      20_000,
      50,
    );
    ready = await ctl(cluster, "GET", "/github/requests");
  });

  after(async () => {
    await closeAll([...viaProxy, ...direct]);
    if (cluster) {
      cluster.proc.stdin.end(); // testcluster exits when stdin closes, ending its children
      const exit = await within(cluster.exited, 15_000, "testcluster exit").catch(() => {
        cluster.proc.kill("SIGKILL");
      });
      assert.deepEqual(exit, { code: 0, signal: null }, `testcluster exit; stderr:\n${cluster.stderr()}`);
    }
  });

  it("cold-starts the three replicas with at most 154 GitHub requests in total", () => {
    console.log(`# cold start of ${REPLICAS} replicas: ${JSON.stringify(ready)}`);
    // One library's worth (a commit, a tree, 150 blobs) and 2 to spare:
    // the replicas that did not fetch it got it from the shared catalog.
    assert.ok(ready.total <= TEMPLATES + 2 + 2, `GitHub requests for the cold start: ${JSON.stringify(ready)}`);
    // Since the archive download (a cold start of one replica is a few
    // requests whatever the library's size), the bound above holds for
    // replicas that did not share anything: the content itself must have
    // been downloaded once for the cluster, as one archive or as blobs.
    const archives = ready.byRoute["GET /repos/{owner}/{repo}/tarball/{ref...}"] ?? 0;
    assert.ok(archives <= 1, `archive downloads: ${JSON.stringify(ready)}`);
    assert.ok(ready.tree <= 1, `tree listings: ${JSON.stringify(ready)}`);
    assert.ok(ready.blob <= TEMPLATES && (archives === 0 || ready.blob === 0), `blob downloads: ${JSON.stringify(ready)}`);
    for (const r of cluster.replicas) assert.match(r.url, /^http:\/\/127\.0\.0\.1:\d+$/);
  });

  it("answers a few hundred mixed requests right through the proxy, most of a session's crossing replicas; GitHub sees about one request per TTL", async () => {
    await ctl(cluster, "POST", "/github/reset");
    await ctl(cluster, "POST", "/stats/reset");
    const started = Date.now();
    const p = cluster.proxy;
    viaProxy.push(await modern(p, "mix-2026-1"), await modern(p, "mix-2026-2"));
    // Opening a session takes three requests either way (initialize,
    // initialized, the GET stream), as many as there are replicas: one
    // 2026 request after each shifts the round robin, so the sessions
    // spread over the replicas instead of all landing on one.
    for (const [open, name] of [
      [legacyMCP, "mix-mcp-1"],
      [legacySSE, "mix-sse-1"],
      [legacyMCP, "mix-mcp-2"],
      [legacySSE, "mix-sse-2"],
      [legacyMCP, "mix-mcp-3"],
    ]) {
      // They hear list_changed later: on a stream whose GET reached a
      // replica that forwarded it to the session's.
      viaProxy.push(await open(p, name, hear(name)));
      await operation(viaProxy[0], 1);
    }
    const OPS = 45; // per client
    const made = await Promise.all(
      viaProxy.map(async (c) => {
        let n = 0;
        for (let i = 0; i < OPS; i++) n += await operation(c, i);
        return n;
      }),
    );
    const requests = made.reduce((a, b) => a + b, 0);
    assert.ok(requests >= 300, `requests made: ${requests}`);

    const stats = await ctl(cluster, "GET", "/stats");
    // Round robin over three sends two of three session requests to a
    // replica that does not hold the session; each was forwarded.
    assert.ok(stats.session >= 200, `session requests through the proxy: ${JSON.stringify(stats)}`);
    assert.ok(stats.crossed >= stats.session / 2, `crossed: ${JSON.stringify(stats)}`);
    for (const [id, s] of Object.entries(stats.replicas)) assert.ok(s.requests > 50, `${id} got its share: ${JSON.stringify(stats)}`);
    const owners = await ctl(cluster, "GET", "/sessions");
    const legacy = viaProxy.filter((c) => !c.modern);
    for (const c of legacy) assert.ok(owners[c.sid()], `${c.name}: the proxy saw its session open`);
    const holders = new Set(legacy.map((c) => owners[c.sid()]));
    assert.ok(holders.size >= 2, `the sessions are spread over the replicas: ${JSON.stringify(owners)}`);
    // Every 2025 session lives on exactly one replica.
    const sessions = Object.values(await health(cluster)).reduce((a, h) => a + h.healthz.sessions.total, 0);
    assert.equal(sessions, legacy.length, "sessions held across the replicas");
    console.log(`# mix: ${requests} requests by ${viaProxy.length} clients; proxy: ${JSON.stringify(stats)}`);

    // Steady state: nothing changed upstream, so each TTL costs the
    // cluster one conditional request (304), whichever replica makes it.
    const window = 4 * TTL_MS;
    await sleep(Math.max(0, started + window - Date.now()));
    const gh = await ctl(cluster, "GET", "/github/requests");
    const elapsed = Date.now() - started;
    const ttls = Math.round(elapsed / TTL_MS);
    console.log(`# steady state: ${gh.total} GitHub requests in ${elapsed} ms (${ttls} TTLs): ${JSON.stringify(gh)}`);
    assert.ok(gh.total >= 1, `revalidation happens: ${JSON.stringify(gh)}`);
    assert.ok(gh.total <= ttls + 2, `at most one request per TTL for the cluster, +2: ${JSON.stringify(gh)}`);
    assert.equal(gh.byStatus["304"] ?? 0, gh.total, `all conditional and unchanged: ${JSON.stringify(gh)}`);
  });

  it("announces an upstream change to listeners on every replica, each of which then serves the new text", async () => {
    const subs = [];
    for (const r of cluster.replicas) {
      direct.push(await legacyMCP(r.url, `${r.id}-mcp`, hear(`${r.id}-mcp`)));
      direct.push(await legacySSE(r.url, `${r.id}-sse`, hear(`${r.id}-sse`)));
      const m = await modern(r.url, `${r.id}-2026`, hear(`${r.id}-2026`));
      direct.push(m);
      subs.push(await m.client.listen({ promptsListChanged: true }, opts));
    }
    const k = 7;
    const edited = generated(k, "EDITED upstream: {{subject}} now reads differently.", "2.0.0");
    await ctl(cluster, "POST", "/github/reset");
    await ctl(cluster, "POST", `/github/files?path=templates/${nameOf(k)}.json`, JSON.stringify(edited, null, 2));
    const committed = Date.now();
    // A change is seen at the next revalidation (within a TTL) and then
    // spreads: every listener hears it within two TTLs and a margin.
    await eventually(
      () => {
        const silent = [...heard].filter(([, n]) => n === 0).map(([name]) => name);
        assert.deepEqual(silent, [], "listeners that heard no list_changed");
      },
      2 * TTL_MS + 5000,
      50,
    );
    console.log(`# list_changed reached all ${heard.size} listeners ${Date.now() - committed} ms after the commit`);
    for (const c of direct) {
      const res = await c.client.getPrompt({ name: nameOf(k), arguments: { subject: "tea" } }, opts);
      assert.equal(res.messages[0].content.text, expectedPrompt(edited, { subject: "tea" }), `${c.name} serves the new text`);
    }
    LIBRARY.set(nameOf(k), edited);
    await Promise.all(subs.map((s) => s.close()));
    // The change was fetched once for the cluster (the new tree and the
    // one changed file), not by each replica.
    const gh = await ctl(cluster, "GET", "/github/requests");
    console.log(`# GitHub requests from the commit to every replica serving it: ${JSON.stringify(gh)}`);
    assert.ok(gh.tree <= 1 && gh.blob <= 1, `the change's tree and file fetched once: ${JSON.stringify(gh)}`);
    assert.equal(gh.byRoute["GET /repos/{owner}/{repo}/tarball/{ref...}"] ?? 0, 0, "no archive for one file");
  });

  it("when a replica dies, its sessions answer 404 through the others; new sessions and 2026 requests succeed", async () => {
    const owners = await ctl(cluster, "GET", "/sessions");
    const legacy = viaProxy.filter((c) => !c.modern);
    const held = new Map(legacy.map((c) => [c, owners[c.sid()]]));
    // The victim: the replica holding the most of the mix's sessions.
    const count = {};
    for (const id of held.values()) count[id] = (count[id] ?? 0) + 1;
    const victim = Object.entries(count).sort((a, b) => b[1] - a[1])[0][0];
    await ctl(cluster, "POST", `/replicas/${victim}/kill`);
    const killed = Date.now();

    // Every 2026 request issued after the kill succeeds: the proxy tries
    // another replica when the dead one refuses the connection.
    const modernClients = viaProxy.filter((c) => c.modern);
    const after = await Promise.all(
      Array.from({ length: 30 }, async (_, i) => {
        const c = modernClients[i % modernClients.length];
        const name = nameOf(i);
        const res = await c.client.getPrompt({ name, arguments: { subject: "after" } }, opts);
        assert.equal(res.messages[0].content.text, expectedPrompt(LIBRARY.get(name), { subject: "after" }));
      }),
    );
    assert.equal(after.length, 30);

    for (const [c, owner] of held) {
      const name = nameOf(1);
      if (owner === victim) {
        // On the wire: whichever live replica the proxy picks answers 404.
        for (let i = 0; i < REPLICAS; i++) {
          const t0 = Date.now();
          const raw = await rawSessionRequest(cluster.proxy, c.era, c.sid());
          assert.equal(raw.status, 404, `${c.name} (${c.era}) on dead ${victim}: ${raw.body}`);
          assert.match(raw.body, /SESSION_NOT_FOUND/);
          assert.ok(Date.now() - t0 < 2000, `${c.name}: the 404 took ${Date.now() - t0} ms`);
        }
        const t0 = Date.now();
        const err = await rejection(c.client.getPrompt({ name, arguments: { subject: "x" } }, opts), `${c.name} on dead ${victim}`);
        // Promptly: the other replicas know no one holds the session.
        assert.ok(Date.now() - t0 < 5000, `${c.name}: the error took ${Date.now() - t0} ms`);
        if (c.era === "2025 /mcp") assert.match(String(err), /404|session/i, `${c.name}: ${err}`);
      } else {
        const res = await c.client.getPrompt({ name, arguments: { subject: "x" } }, opts);
        assert.equal(res.messages[0].content.text, expectedPrompt(LIBRARY.get(name), { subject: "x" }), `${c.name} on live ${owner}`);
      }
    }
    // New sessions through the proxy work, on the replicas left.
    const fresh1 = await legacyMCP(cluster.proxy, "after-kill-mcp");
    const fresh2 = await legacySSE(cluster.proxy, "after-kill-sse");
    viaProxy.push(fresh1, fresh2);
    for (const c of [fresh1, fresh2]) {
      for (let i = 0; i < 6; i++) await operation(c, i);
    }
    const stats = await ctl(cluster, "GET", "/stats");
    console.log(`# killed ${victim} (${[...held.values()].filter((o) => o === victim).length} sessions) ${Date.now() - killed} ms ago; proxy: ${JSON.stringify(stats)}`);

    // It comes back under the same id and rejoins.
    await ctl(cluster, "POST", `/replicas/${victim}/start`);
    await eventually(async () => {
      const h = (await health(cluster))[victim];
      assert.equal(h.healthz?.templates, TEMPLATES, JSON.stringify(h).slice(0, 300));
      assert.equal(h.healthz.cluster.connected, true);
      assert.equal(h.healthz.cluster.replicas.length, REPLICAS, JSON.stringify(h.healthz.cluster));
    }, 15_000);
    // The direct listeners on the victim went with it.
    const gone = direct.filter((c) => c.name.startsWith(`${victim}-`));
    await closeAll(gone);
    for (const c of gone) direct.splice(direct.indexOf(c), 1);
  });

  it("keeps serving while NATS is down, and rejoins when it is back", async () => {
    await ctl(cluster, "POST", "/nats/stop");
    await eventually(async () => {
      for (const [id, h] of Object.entries(await health(cluster))) {
        assert.equal(h.healthz?.cluster.connected, false, `${id}: ${JSON.stringify(h.healthz?.cluster)}`);
        assert.equal(h.healthz.status, "degraded", id);
      }
    }, 10_000);
    // Sessions each replica holds itself, reached directly.
    for (const c of direct) {
      const name = nameOf(3);
      const res = await c.client.getPrompt({ name, arguments: { subject: "alone" } }, opts);
      assert.equal(res.messages[0].content.text, expectedPrompt(LIBRARY.get(name), { subject: "alone" }), `${c.name} without NATS`);
    }
    // A session held elsewhere cannot be reached: 404 at once, saying why.
    const held = direct.find((c) => c.era === "2025 /mcp");
    const other = cluster.replicas.find((r) => !held.name.startsWith(`${r.id}-`));
    const t0 = Date.now();
    const raw = await rawSessionRequest(other.url, held.era, held.sid());
    assert.equal(raw.status, 404, raw.body);
    assert.match(raw.body, /link to the cluster is down/);
    assert.ok(Date.now() - t0 < 2000, `the 404 took ${Date.now() - t0} ms`);
    // 2026 requests need nothing shared: through the proxy, to any replica.
    const m = viaProxy.find((c) => c.modern);
    for (let i = 0; i < 12; i++) {
      const name = nameOf(100 + i);
      const res = await m.client.getPrompt({ name, arguments: { subject: "alone" } }, opts);
      assert.equal(res.messages[0].content.text, expectedPrompt(LIBRARY.get(name), { subject: "alone" }));
    }

    await ctl(cluster, "POST", "/nats/start");
    const back = Date.now();
    await eventually(async () => {
      for (const [id, h] of Object.entries(await health(cluster))) {
        assert.equal(h.healthz?.cluster.connected, true, `${id}: ${JSON.stringify(h.healthz?.cluster)}`);
        assert.equal(h.healthz.cluster.replicas.length, REPLICAS, `${id} sees the others`);
      }
    }, 15_000);
    console.log(`# all replicas reconnected ${Date.now() - back} ms after NATS came back`);
  });

  it("ends a session with DELETE through the proxy, whichever replica the DELETE reaches", async () => {
    const c = viaProxy.find((c) => c.era === "2025 /mcp" && c.name.startsWith("after-kill"));
    const sid = c.sid();
    const owner = (await ctl(cluster, "GET", "/sessions"))[sid];
    const before = (await health(cluster))[owner].healthz.sessions.mcp;
    // Three DELETEs would be one per replica; one is enough to reach
    // another replica two times in three.
    await within(c.transport.terminateSession(), STEP_MS, "DELETE /mcp");
    await eventually(async () => assert.equal((await health(cluster))[owner].healthz.sessions.mcp, before - 1, `sessions on ${owner}`), 5000);
    const err = await rejection(c.client.getPrompt({ name: nameOf(2), arguments: { subject: "x" } }, opts), "a request in the ended session");
    assert.match(String(err), /404|session/i);
    viaProxy.splice(viaProxy.indexOf(c), 1);
  });

  it("continues a flow on whichever replica each step reaches: the handle carries the flow, sealed with the shared key", async () => {
    // Three generated templates, chained; committed upstream like any change.
    const flow = {
      name: "chain",
      description: "Three generated templates in a row",
      arguments: [{ name: "subject", description: "What to write about", required: true }],
      steps: [
        { name: "one", template: nameOf(0), variables: { subject: "{{subject}}" } },
        { name: "two", template: nameOf(1), variables: { subject: "{{steps.one.output}}" } },
        { name: "three", template: nameOf(2), variables: { subject: "{{steps.two.output}} and {{subject}}" } },
      ],
    };
    await ctl(cluster, "POST", "/github/files?path=templates/flows/chain.json", JSON.stringify(flow));
    const each = [];
    for (const r of cluster.replicas) each.push(await modern(r.url, `${r.id}-flow`));
    viaProxy.push(...each);
    await eventually(
      async () => {
        for (const c of each) {
          const res = await c.client.callTool({ name: "flowyprompt_start_flow", arguments: {} }, opts);
          assert.equal(res.structuredContent.count, 1, `${c.name} lists the flow`);
        }
      },
      2 * TTL_MS + 5000,
      100,
    );
    const c = await modern(cluster.proxy, "flow-walker");
    viaProxy.push(c);
    await ctl(cluster, "POST", "/stats/reset");
    const call = async (name, args) => {
      const res = await c.client.callTool({ name, arguments: args }, opts);
      assert.notEqual(res.isError, true, res.content?.[0]?.text);
      return res.structuredContent;
    };
    let sc = await call("flowyprompt_start_flow", { name: "chain", arguments: { subject: "tea" } });
    assert.equal(sc.step, 1);
    assert.ok(sc.prompt.includes("Write about tea (template 0)."), sc.prompt);
    sc = await call("flowyprompt_next_flow_step", { handle: sc.handle, output: "ONE-OUT" });
    assert.equal(sc.step, 2);
    assert.ok(sc.prompt.includes("ONE-OUT"), sc.prompt);
    sc = await call("flowyprompt_next_flow_step", { handle: sc.handle, output: "TWO-OUT" });
    assert.equal(sc.step, 3);
    assert.ok(sc.prompt.includes("TWO-OUT and tea"), sc.prompt);
    sc = await call("flowyprompt_next_flow_step", { handle: sc.handle, output: "THREE-OUT" });
    assert.equal(sc.done, true);
    // Round robin: the four steps were answered by more than one replica.
    const stats = await ctl(cluster, "GET", "/stats");
    const served = Object.entries(stats.replicas).filter(([, s]) => s.requests > 0);
    assert.ok(served.length >= 2, `the walk's requests reached ${served.length} replica(s): ${JSON.stringify(stats)}`);
  });

  it("never shows the GitHub token in a replica's log", async () => {
    for (const r of cluster.replicas) {
      const log = await ctl(cluster, "GET", `/replicas/${r.id}/log`);
      assert.ok(log.length > 0, `${r.id} logged something`);
      assert.ok(!log.includes(TOKEN), `token in ${r.id}'s log`);
    }
    assert.ok(!cluster.stderr().includes(TOKEN), "token in testcluster's output");
  });
});
