// Members sign in with the team's identity provider (docs/auth.md): a real
// OpenID Provider (cmd/testoidc, github.com/zitadel/oidc/v3's op package)
// in front of `flowyprompt serve --transport http --auth-issuer`, and real
// clients walking the MCP authorization flow. The TypeScript SDK's v2
// client (@modelcontextprotocol/client), given an OAuthClientProvider,
// reads the resource metadata named by the first 401, finds the provider,
// sends its user to the authorization endpoint with PKCE (S256) and the
// resource (RFC 8707), and trades the code for a JWT access token at the
// provider's token endpoint; the test is the user agent, following the
// provider's redirects (its test user signs in and consents at once) to
// the client's redirect URI. Then the client lists and renders prompts over
// /mcp in the 2025 era (a session) and in the 2026-07-28 era, and the 1.x
// SDK's SSEClientTransport does over /sse with the same token.
//
// The second block is the policy of docs/auth.md ("each member sees the
// libraries meant for them"): two members of different groups see
// different prompts/list and tools/list answers, and a list_changed for a
// source reaches only the members who can see it: its absence is proven
// by the list_changed of a later change that every member can see.

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { after, before, describe, it } from "node:test";

import { Client, StreamableHTTPClientTransport, UnauthorizedError } from "@modelcontextprotocol/client";
import { Client as ClientV1 } from "@modelcontextprotocol/sdk/client/index.js";
import { SSEClientTransport } from "@modelcontextprotocol/sdk/client/sse.js";
import { PromptListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";

import { writeTemplate } from "./folder-suite.mjs";
import {
  HERE,
  STEP_MS,
  SUITE_MS,
  TOOL_NAMES,
  WATCH_MS,
  examplePrompts,
  exampleTemplate,
  expectedPrompt,
  rejection,
  startHTTP,
  tempDir,
  within,
} from "./helpers.mjs";
import { LEGACY, MODERN, PIN_MODERN } from "./sdk2-helpers.mjs";

const opts = { timeout: STEP_MS };
const fresh = { ...opts, cacheMode: "bypass" };
const READ = "prompts:read";
const WRITE = "prompts:write";
const SAVE_TOOL = "flowyprompt_save_template";

const TESTOIDC_BIN = (() => {
  const bin = process.env.TESTOIDC_BIN ?? resolve(HERE, "..", "..", "bin", "testoidc");
  if (!existsSync(bin)) {
    throw new Error(`testoidc not found at ${bin}: build it with \`make test-bins\` or set TESTOIDC_BIN`);
  }
  return bin;
})();

// The members of the provider: alice of the SRE group may write, bob of
// the developers may read.
const USERS = [
  { sub: "alice", email: "alice@example.com", groups: ["sre"], scopes: [READ, WRITE] },
  { sub: "bob", email: "bob@example.com", groups: ["dev"], scopes: [READ] },
];

// The client's redirect URI: nothing listens there; the user agent (the
// test) stops at the redirect to it and hands the query to the client.
const REDIRECT = "http://127.0.0.1:43219/callback";

/**
 * Starts cmd/testoidc with users and resolves to { issuer, clientId,
 * stop() }: its first stdout line names them.
 */
async function startProvider(users) {
  const dir = tempDir("flowyprompt-e2e-oidc-");
  const file = join(dir.dir, "users.json");
  writeFileSync(file, JSON.stringify({ users }));
  const child = spawn(TESTOIDC_BIN, ["--users", file], { stdio: ["pipe", "pipe", "pipe"] });
  let stderr = "";
  child.stderr.setEncoding("utf8");
  child.stderr.on("data", (d) => {
    stderr = (stderr + d).slice(-20_000);
  });
  const exited = new Promise((res) => child.once("exit", (code, signal) => res({ code, signal })));
  const first = new Promise((res, rej) => {
    createInterface({ input: child.stdout }).once("line", res);
    exited.then(({ code, signal }) => rej(new Error(`testoidc exited (${code ?? signal}) before naming its issuer:\n${stderr}`)));
  });
  const line = await within(first, STEP_MS, "testoidc's issuer line");
  const { issuer, client_id: clientId } = JSON.parse(line);
  return {
    issuer,
    clientId,
    stderr: () => stderr,
    async stop() {
      child.stdin.end(); // it exits when stdin closes
      await within(exited, STEP_MS, "testoidc exit").catch(() => child.kill("SIGKILL"));
      dir.cleanup();
    },
  };
}

/** A free loopback port: the server's public URL must name its port before it starts. */
function freePort() {
  return new Promise((res, rej) => {
    const srv = createServer();
    srv.once("error", rej);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address();
      srv.close(() => res(port));
    });
  });
}

/**
 * Starts `serve --transport http` as an OAuth resource server of issuer,
 * its public URL its own loopback address, and waits until it has read the
 * issuer's metadata (before that, a token gets 503).
 */
async function startResourceServer(issuer, extraArgs = []) {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const server = await startHTTP(["--addr", `127.0.0.1:${port}`, "--public-url", base, "--auth-issuer", issuer, ...extraArgs]);
  assert.equal(server.base, base);
  await within(
    new Promise((res) => {
      const seen = () => /authorization server reached/.test(server.stderr());
      if (seen()) return res();
      const on = () => {
        if (seen()) {
          server.child.stderr.off("data", on);
          res();
        }
      };
      server.child.stderr.on("data", on);
    }),
    STEP_MS,
    `the server reaching the issuer; stderr:\n${server.stderr()}`,
  );
  return server;
}

/**
 * The user agent: follows the provider's redirects from the authorization
 * URL (the login signs in the user login_hint names) up to the redirect to
 * the client, and returns that redirect's query.
 */
async function browse(authorizationUrl) {
  let url = new URL(authorizationUrl);
  for (let hop = 0; hop < 10; hop++) {
    const res = await fetch(url, { redirect: "manual" });
    const location = res.headers.get("location");
    await res.text();
    assert.ok(res.status >= 300 && res.status < 400 && location, `${url.pathname}: ${res.status}, not a redirect`);
    url = new URL(location, url);
    if (url.origin + url.pathname === REDIRECT) return url.searchParams;
  }
  throw new Error("more than 10 redirects before the client's redirect URI");
}

/**
 * The client's side of OAuth (the SDK's OAuthClientProvider): a
 * pre-registered public client of the provider, in memory. Its user agent
 * is browse(), with the member to sign in as login_hint.
 */
class SignIn {
  constructor(clientId, member) {
    this.clientId = clientId;
    this.member = member;
    this.callbacks = []; // the query of each redirect to the client
  }
  get redirectUrl() {
    return REDIRECT;
  }
  get clientMetadata() {
    return {
      client_name: "flowyprompt e2e",
      redirect_uris: [REDIRECT],
      grant_types: ["authorization_code"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
    };
  }
  clientInformation() {
    return { client_id: this.clientId };
  }
  tokens() {
    return this.saved;
  }
  saveTokens(tokens) {
    this.saved = tokens;
  }
  saveCodeVerifier(v) {
    this.verifier = v;
  }
  codeVerifier() {
    return this.verifier;
  }
  discoveryState() {
    return this.discovery;
  }
  saveDiscoveryState(s) {
    this.discovery = s;
  }
  async redirectToAuthorization(url) {
    this.authorizationUrl = new URL(url);
    const signIn = new URL(url);
    signIn.searchParams.set("login_hint", this.member);
    this.callbacks.push(await browse(signIn));
  }
}

/** A fetch that records each exchange: method, URL, request headers and body, status, response headers. */
function recordingFetch(log) {
  return async (url, init = {}) => {
    const entry = {
      method: init.method ?? "GET",
      url: new URL(String(url)),
      headers: Object.fromEntries(new Headers(init.headers)),
      body: init.body instanceof URLSearchParams ? new URLSearchParams(init.body) : init.body,
    };
    log.push(entry);
    const res = await fetch(url, init);
    entry.status = res.status;
    entry.responseHeaders = Object.fromEntries(res.headers);
    return res;
  };
}

/** The claims of a JWT, read (not verified: the server verifies). */
function claimsOf(jwt) {
  const parts = jwt.split(".");
  assert.equal(parts.length, 3, "the access token is a JWT");
  return JSON.parse(Buffer.from(parts[1], "base64url").toString("utf8"));
}

/**
 * Signs member in through the v2 client's OAuth flow on base/mcp and
 * resolves to { client, transport, signIn, wire }: the first connect is
 * refused (401) and sends the member to the provider; finishAuth trades
 * the code for a token; the second connect uses it. clientOptions pick
 * the era; wire records every HTTP exchange of the client.
 */
async function signInV2(base, clientId, member, clientOptions = {}) {
  const signIn = new SignIn(clientId, member);
  const wire = [];
  const url = new URL(`${base}/mcp`);
  const make = () => new StreamableHTTPClientTransport(url, { authProvider: signIn, fetch: recordingFetch(wire) });
  const first = make();
  const err = await rejection(
    new Client({ name: "flowyprompt-e2e-oauth", version: "0.0.0" }, clientOptions).connect(first, opts),
    "connect before signing in",
  );
  assert.ok(err instanceof UnauthorizedError, `the first connect asks for authorization: ${err}`);
  assert.equal(signIn.callbacks.length, 1, "the client sent its user to the provider once");
  const callback = signIn.callbacks[0];
  assert.ok(callback.get("code"), `the provider sent a code: ${callback}`);
  await within(first.finishAuth(callback), STEP_MS, "finishAuth");
  assert.ok(signIn.tokens()?.access_token, "the client holds an access token");
  const transport = make();
  const client = new Client({ name: "flowyprompt-e2e-oauth", version: "0.0.0" }, clientOptions);
  await within(client.connect(transport, opts), STEP_MS, "connect with the token");
  return { client, transport, signIn, wire };
}

const challengeOf = (base) => `Bearer resource_metadata="${base}/.well-known/oauth-protected-resource/mcp"`;

describe("OAuth sign-in: the v2 client authorises with PKCE at a real OpenID Provider", { timeout: SUITE_MS }, () => {
  let provider;
  let server;
  const clients = [];

  before(async () => {
    provider = await startProvider(USERS);
    server = await startResourceServer(provider.issuer);
  });

  after(async () => {
    for (const c of clients) await within(c.close(), STEP_MS, "client.close").catch(() => {});
    const res = await server?.stop();
    await provider?.stop();
    if (server) {
      assert.deepEqual(res, { code: 0, signal: null }, `exit after SIGTERM; stderr:\n${server.stderr()}`);
      assert.equal(server.stdout(), "", "nothing on stdout over HTTP");
    }
  });

  it("without a token: 401 naming the resource metadata, which names the provider", async () => {
    const res = await fetch(`${server.base}/mcp`, {
      method: "POST",
      headers: { "Content-Type": "application/json", Accept: "application/json, text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" }),
    });
    assert.equal(res.status, 401);
    assert.equal(res.headers.get("www-authenticate"), challengeOf(server.base));
    await res.text();
    const md = await (await fetch(`${server.base}/.well-known/oauth-protected-resource/mcp`)).json();
    assert.equal(md.resource, `${server.base}/mcp`);
    assert.deepEqual(md.authorization_servers, [provider.issuer]);
    assert.deepEqual(md.scopes_supported, [READ, WRITE]);
  });

  it("2025 era over /mcp: discovery from the 401, PKCE, a JWT for the resource, then a session that lists and renders", async () => {
    const s = await signInV2(server.base, provider.clientId, "alice");
    clients.push(s.client);
    const { client, transport, signIn, wire } = s;
    assert.equal(client.getNegotiatedProtocolVersion(), LEGACY);
    assert.match(transport.sessionId ?? "", /^[0-9a-f]{32}$/, "a 2025 session");

    // The flow, as the wire shows it.
    const [refused] = wire;
    assert.equal(refused.url.pathname, "/mcp");
    assert.equal(refused.headers.authorization, undefined, "the first request carries no token");
    assert.equal(refused.status, 401);
    assert.equal(refused.responseHeaders["www-authenticate"], challengeOf(server.base));
    assert.ok(
      wire.some((e) => e.url.href === `${server.base}/.well-known/oauth-protected-resource/mcp` && e.status === 200),
      "the client read the resource metadata the 401 named",
    );
    const authz = signIn.authorizationUrl;
    assert.equal(authz.origin, provider.issuer);
    assert.equal(authz.searchParams.get("code_challenge_method"), "S256");
    assert.ok(authz.searchParams.get("code_challenge"), "a PKCE challenge");
    assert.equal(authz.searchParams.get("resource"), `${server.base}/mcp`, "the resource asked for (RFC 8707)");
    assert.deepEqual(authz.searchParams.get("scope").split(" ").sort(), [READ, WRITE], "the scopes the metadata lists");
    const token = wire.find((e) => e.method === "POST" && e.url.origin === provider.issuer);
    assert.ok(token, "the code went to the provider's token endpoint");
    assert.equal(token.status, 200);
    assert.equal(token.body.get("grant_type"), "authorization_code");
    assert.equal(token.body.get("code_verifier"), signIn.codeVerifier(), "the PKCE verifier");
    assert.equal(token.body.get("resource"), `${server.base}/mcp`, "the resource, again at the token endpoint");

    // The provider's JWT: the resource is its audience.
    const jwt = signIn.tokens().access_token;
    const claims = claimsOf(jwt);
    assert.equal(claims.iss, provider.issuer);
    assert.equal(claims.sub, "alice");
    assert.equal(claims.email, "alice@example.com");
    assert.deepEqual(claims.groups, ["sre"]);
    assert.ok([claims.aud].flat().includes(`${server.base}/mcp`), `aud ${JSON.stringify(claims.aud)}`);
    assert.deepEqual(claims.scope.split(" ").sort(), [READ, WRITE]);

    // Every request after the sign-in carries it.
    const mcp = wire.filter((e) => e.url.href === `${server.base}/mcp`).slice(1);
    assert.ok(mcp.length > 0);
    for (const e of mcp) assert.equal(e.headers.authorization, `Bearer ${jwt}`, `${e.method} /mcp carries the token`);

    const { prompts } = await client.listPrompts({}, opts);
    assert.deepEqual(prompts.map((p) => p.name).sort(), examplePrompts());
    const args = { diff: "-a\n+b" };
    const got = await client.getPrompt({ name: "Commit_Message", arguments: args }, opts);
    assert.equal(got.messages[0].content.text, expectedPrompt(exampleTemplate("Commit_Message"), args));

    // The session is the member's: without the token it is refused.
    const res = await fetch(`${server.base}/mcp`, {
      method: "POST",
      headers: {
        "Content-Type": "application/json",
        Accept: "application/json, text/event-stream",
        "Mcp-Session-Id": transport.sessionId,
        "MCP-Protocol-Version": LEGACY,
      },
      body: JSON.stringify({ jsonrpc: "2.0", id: 9, method: "prompts/list" }),
    });
    assert.equal(res.status, 401);
    assert.equal(res.headers.get("www-authenticate"), challengeOf(server.base));
    await res.text();
  });

  it("2026-07-28 over /mcp: the same flow, then no session and every request with the token", async () => {
    const { client, transport, signIn, wire } = await signInV2(server.base, provider.clientId, "bob", { versionNegotiation: PIN_MODERN });
    clients.push(client);
    assert.equal(client.getNegotiatedProtocolVersion(), MODERN);
    assert.equal(transport.sessionId, undefined, "no session in the 2026 era");
    const claims = claimsOf(signIn.tokens().access_token);
    assert.equal(claims.sub, "bob");
    assert.deepEqual(claims.scope.split(" "), [READ], "bob is granted only prompts:read");

    const { prompts } = await client.listPrompts({}, fresh);
    assert.deepEqual(prompts.map((p) => p.name).sort(), examplePrompts());
    const args = { diff: "-x\n+y" };
    const got = await client.getPrompt({ name: "Commit_Message", arguments: args }, opts);
    assert.equal(got.messages[0].content.text, expectedPrompt(exampleTemplate("Commit_Message"), args));
    const after401 = wire.filter((e) => e.url.href === `${server.base}/mcp`).slice(1);
    assert.ok(after401.length >= 3, `requests after the sign-in: ${after401.length}`);
    for (const e of after401) assert.equal(e.headers.authorization, `Bearer ${signIn.tokens().access_token}`);
  });

  it("a 2025 session answers its member only: another member's token on it gets 404", async () => {
    const a = await signInV2(server.base, provider.clientId, "alice");
    clients.push(a.client);
    const b = await signInV2(server.base, provider.clientId, "bob", { versionNegotiation: PIN_MODERN });
    clients.push(b.client);
    const ask = (token) =>
      fetch(`${server.base}/mcp`, {
        method: "POST",
        headers: {
          "Content-Type": "application/json",
          Accept: "application/json, text/event-stream",
          Authorization: `Bearer ${token}`,
          "Mcp-Session-Id": a.transport.sessionId,
          "MCP-Protocol-Version": LEGACY,
        },
        body: JSON.stringify({ jsonrpc: "2.0", id: 7, method: "ping" }),
      });
    const theirs = await ask(b.signIn.tokens().access_token);
    assert.equal(theirs.status, 404, "bob's token on alice's session");
    assert.equal((await theirs.json()).error?.data?.code, "SESSION_NOT_FOUND");
    const hers = await ask(a.signIn.tokens().access_token);
    assert.equal(hers.status, 200, "alice's token on her session");
    await hers.text();
  });

  it("/sse: the 1.x SDK's SSEClientTransport with the member's token lists and renders; without it, 401", async () => {
    // alice's token, from a sign-in of her own.
    const { client: v2, signIn } = await signInV2(server.base, provider.clientId, "alice");
    clients.push(v2);
    const wire = [];
    const t = new SSEClientTransport(new URL(`${server.base}/sse`), { authProvider: signIn, fetch: recordingFetch(wire) });
    const client = new ClientV1({ name: "flowyprompt-e2e-sse", version: "0.0.0" }, { capabilities: {} });
    clients.push(client);
    await within(client.connect(t, opts), STEP_MS, "connect over /sse");
    const { prompts } = await client.listPrompts({}, opts);
    assert.deepEqual(prompts.map((p) => p.name).sort(), examplePrompts());
    const args = { diff: "-s\n+t" };
    const got = await client.getPrompt({ name: "Commit_Message", arguments: args }, opts);
    assert.equal(got.messages[0].content.text, expectedPrompt(exampleTemplate("Commit_Message"), args));
    const posts = wire.filter((e) => e.method === "POST" && e.url.pathname === "/sse/message");
    assert.ok(posts.length >= 3, `posts to /sse/message: ${posts.length}`);
    for (const e of posts) assert.equal(e.headers.authorization, `Bearer ${signIn.tokens().access_token}`);

    const res = await fetch(`${server.base}/sse`, { headers: { Accept: "text/event-stream" } });
    assert.equal(res.status, 401);
    assert.equal(res.headers.get("www-authenticate"), challengeOf(server.base));
    await res.text();
  });
});

/** Counts one client's prompts list_changed, each with whether the team folder had changed when it came. */
class Changes {
  constructor() {
    this.seen = []; // { afterTeam }
    this.teamChanged = false;
    this.waiters = [];
  }
  bump() {
    this.seen.push({ afterTeam: this.teamChanged });
    this.waiters = this.waiters.filter((w) => !w());
  }
  /** Waits until more than n have come. */
  more(n, label) {
    if (this.seen.length > n) return Promise.resolve();
    return within(
      new Promise((res) => {
        this.waiters.push(() => {
          if (this.seen.length > n) {
            res();
            return true;
          }
          return false;
        });
      }),
      WATCH_MS,
      label,
    );
  }
}

function template(name, text) {
  return {
    metadata: {
      name,
      description: `${name} is a template written by the sign-in test.`,
      version: "1.0.0",
      author: "e2e",
      tags: ["e2e"],
      category: "Testing",
      lastUpdated: "2026-01-01T00:00:00Z",
    },
    variables: [],
    results: [{ name: "Text", content: text, format: "text" }],
  };
}

// The policy file (serve --auth-policy, docs/auth.md): the SRE group reads
// the ops and team sources, everyone else team alone; the SRE group may
// write to team.
describe("OAuth sign-in with --auth-policy: each member sees the libraries meant for them", { timeout: SUITE_MS }, () => {
  let provider;
  let server;
  let team;
  let ops;
  let policyDir;
  const clients = [];
  const subs = [];

  before(async () => {
    team = tempDir("flowyprompt-e2e-team-");
    ops = tempDir("flowyprompt-e2e-ops-");
    writeTemplate(team.dir, template("Team_Guide", "How the team works."));
    writeTemplate(ops.dir, template("Ops_Runbook", "What to do when the pager rings."));
    policyDir = tempDir("flowyprompt-e2e-policy-");
    const policy = join(policyDir.dir, "policy.json");
    writeFileSync(
      policy,
      JSON.stringify({
        claim: "groups",
        read: [
          { match: "sre", sources: ["ops", "team"] },
          { match: "*", sources: ["team"] },
        ],
        write: [{ match: "sre", sources: ["team"] }],
      }),
    );
    provider = await startProvider(USERS);
    server = await startResourceServer(provider.issuer, [
      "--source",
      `name=team,dir=${team.dir}`,
      "--source",
      `name=ops,dir=${ops.dir}`,
      "--auth-policy",
      policy,
      "--allow-write",
    ]);
  });

  after(async () => {
    for (const s of subs) await s.close().catch(() => {});
    for (const c of clients) await within(c.close(), STEP_MS, "client.close").catch(() => {});
    const res = await server?.stop();
    await provider?.stop();
    for (const d of [team, ops, policyDir]) d?.cleanup();
    if (server) assert.deepEqual(res, { code: 0, signal: null }, `exit after SIGTERM; stderr:\n${server.stderr()}`);
  });

  it("alice (sre) and bob (dev) see different prompts and tools; list_changed of ops reaches alice only", async () => {
    const alice = new Changes();
    const bob = new Changes();
    const alice26 = new Changes();
    const bob26 = new Changes();

    // Transports carrying a member's token, already got.
    const mcp = (signIn) => new StreamableHTTPClientTransport(new URL(`${server.base}/mcp`), { authProvider: signIn });
    const sse = (signIn) => new SSEClientTransport(new URL(`${server.base}/sse`), { authProvider: signIn });

    // alice: a 2025 session on /mcp (the v2 client), and a 2026 listener.
    const a = await signInV2(server.base, provider.clientId, "alice");
    clients.push(a.client);
    a.client.setNotificationHandler("notifications/prompts/list_changed", () => alice.bump());
    const a26 = new Client({ name: "flowyprompt-e2e-alice-2026", version: "0.0.0" }, { versionNegotiation: PIN_MODERN });
    clients.push(a26);
    a26.setNotificationHandler("notifications/prompts/list_changed", () => alice26.bump());
    await within(a26.connect(mcp(a.signIn), opts), STEP_MS, "alice 2026");
    subs.push(await a26.listen({ promptsListChanged: true }, opts));

    // bob: signs in on /mcp, then a 2025 session on /sse (the 1.x SDK),
    // whose one stream carries answers and notifications in order, and a
    // 2026 listener.
    const b = await signInV2(server.base, provider.clientId, "bob");
    clients.push(b.client);
    const bSSE = new ClientV1({ name: "flowyprompt-e2e-bob-sse", version: "0.0.0" }, { capabilities: {} });
    clients.push(bSSE);
    bSSE.setNotificationHandler(PromptListChangedNotificationSchema, () => bob.bump());
    await within(bSSE.connect(sse(b.signIn), opts), STEP_MS, "bob /sse");
    const b26 = new Client({ name: "flowyprompt-e2e-bob-2026", version: "0.0.0" }, { versionNegotiation: PIN_MODERN });
    clients.push(b26);
    b26.setNotificationHandler("notifications/prompts/list_changed", () => bob26.bump());
    await within(b26.connect(mcp(b.signIn), opts), STEP_MS, "bob 2026");
    subs.push(await b26.listen({ promptsListChanged: true }, opts));

    // What each sees.
    const names = async (c, o = opts) => (await c.listPrompts({}, o)).prompts.map((p) => p.name).sort();
    const aliceSees = await names(a.client);
    const bobSees = await names(bSSE);
    assert.ok(aliceSees.includes("ops/Ops_Runbook") && aliceSees.includes("team/Team_Guide"), `alice sees ops and team: ${aliceSees}`);
    assert.ok(bobSees.includes("team/Team_Guide"), `bob sees team: ${bobSees}`);
    assert.ok(!bobSees.some((n) => n.includes("Ops_Runbook")), `bob sees nothing of ops: ${bobSees}`);
    assert.deepEqual(await names(b26, fresh), bobSees, "bob sees the same in the 2026 era");
    assert.deepEqual(await names(a26, fresh), aliceSees, "alice sees the same in the 2026 era");
    // What bob may not see is refused as what does not exist.
    const hidden = await rejection(bSSE.getPrompt({ name: "ops/Ops_Runbook" }, opts), "bob gets ops/Ops_Runbook");
    const missing = await rejection(bSSE.getPrompt({ name: "ops/No_Such_Template" }, opts), "bob gets a missing template");
    assert.equal(hidden.code, missing.code, `${hidden.message} / ${missing.message}`);
    assert.equal(hidden.data?.code, missing.data?.code);

    const tools = async (c) => (await c.listTools({}, opts)).tools.map((t) => t.name).sort();
    const aliceTools = await tools(a.client);
    const bobTools = await tools(bSSE);
    assert.ok(aliceTools.includes(SAVE_TOOL), `alice (prompts:write, a write rule) sees the save tool: ${aliceTools}`);
    assert.deepEqual(bobTools, [...TOOL_NAMES].sort(), "bob (prompts:read) does not");
    assert.notDeepEqual(aliceTools, bobTools);

    // A change in ops's folder reaches alice, on both eras' channels.
    const before = { alice: alice.seen.length, alice26: alice26.seen.length, bob: bob.seen.length, bob26: bob26.seen.length };
    writeTemplate(ops.dir, template("Ops_Second", "The second runbook."));
    await alice.more(before.alice, "alice's list_changed for ops (2025 session)");
    await alice26.more(before.alice26, "alice's list_changed for ops (2026 listener)");
    assert.ok((await names(a.client)).includes("ops/Ops_Second"));
    // Whatever bob's /sse stream was sent before this answer has come.
    await bSSE.ping(opts);

    // Then one in team's folder: bob's first list_changed since must be
    // that one, on each channel.
    for (const c of [alice, alice26, bob, bob26]) c.teamChanged = true;
    writeTemplate(team.dir, template("Team_Second", "The second guide."));
    await bob.more(before.bob, "bob's list_changed for team (/sse session)");
    await bob26.more(before.bob26, "bob's list_changed for team (2026 listener)");
    assert.ok(bob.seen.slice(before.bob).every((s) => s.afterTeam), "no list_changed for ops reached bob's session");
    assert.ok(bob26.seen.slice(before.bob26).every((s) => s.afterTeam), "no list_changed for ops reached bob's listener");
    assert.ok((await names(bSSE)).includes("team/Team_Second"));
    assert.ok(!(await names(bSSE)).some((n) => n.includes("Ops_")), "bob still sees nothing of ops");
    await alice.more(before.alice + 1, "alice's list_changed for team");
  });
});
