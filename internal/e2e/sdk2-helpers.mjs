// The TypeScript SDK's 2.x client (@modelcontextprotocol/client), which
// speaks revision 2026-07-28 (the "modern" era: no initialize, no session,
// every request carries its context in _meta) once told to: its dialect
// for the shared suites, and the sessions the modern tests open over stdio
// and over Streamable HTTP on /mcp.
//
// This file is not a test file (node --test only picks up *.test.mjs here).

import assert from "node:assert/strict";

import { Client, ProtocolError, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";

import { startHTTP, STEP_MS, tapTransport, within } from "./helpers.mjs";
import { stdioClient } from "./sdk-helpers.mjs";

export const MODERN = "2026-07-28";
export const LEGACY = "2025-11-25";

/** Negotiation that probes server/discover and accepts nothing but 2026-07-28. */
export const PIN_MODERN = { mode: { pin: MODERN } };

/**
 * The dialect (see SDK_V1 in sdk-helpers.mjs) of a 2.x client made with
 * clientOptions; by default it pins 2026-07-28, so it speaks the modern
 * era or fails to connect. Lists skip the client's response cache
 * (cacheMode bypass), which serves a list again for ttlMs without asking.
 */
export function sdk2(clientOptions = { versionNegotiation: PIN_MODERN }) {
  return {
    era: clientOptions.versionNegotiation?.mode === "legacy" ? "legacy" : "modern",
    ProtocolError,
    StdioClientTransport,
    client: (name, capabilities = {}) => new Client({ name, version: "0.0.0" }, { ...clientOptions, capabilities }),
    callTool: (client, params, options) => client.callTool(params, options),
    fresh: { cacheMode: "bypass" },
    on: (client, method, handler) => client.setNotificationHandler(method, handler),
    // The modern era's subscriptions: one stream, tagged notifications.
    listen: (client, filter) => client.listen(filter, { timeout: STEP_MS }),
  };
}

export const SDK_V2 = sdk2();

/**
 * Connects a 2.x client (sdk, SDK_V2 unless told) to `flowyprompt serve
 * [serverArgs]` over transport, "stdio" or "http" (Streamable HTTP on /mcp
 * of `serve --transport http`, started for this client alone). setup(client)
 * runs before the connect. Resolves to { client, transport, tap, errors,
 * server, stop() }: tap records the JSON-RPC messages (tapTransport), and on
 * HTTP tap.http every exchange ({ method, headers, status, responseHeaders });
 * errors collects what the client reported through onerror (a response it
 * could not use, a notification the server refused...); server is
 * startHTTP's, on HTTP. stop() ends the client and the server, and asserts
 * that the client reported no error and, on HTTP, that the server exited 0
 * and wrote nothing on stdout.
 */
export async function openModern(
  transport,
  { serverArgs = [], extraEnv = {}, name = "flowyprompt-e2e-sdk2", capabilities = {}, setup = () => {}, sdk = SDK_V2, connect = {} } = {},
) {
  const errors = [];
  let tap;
  const prepare = (client, t) => {
    tap = tapTransport(t);
    client.onerror = (err) => errors.push(err);
    setup(client);
  };
  const noErrors = () => assert.deepEqual(errors.map(String), [], "the client reported no error");
  if (transport === "stdio") {
    const s = await stdioClient({ args: ["serve", ...serverArgs], extraEnv, name, capabilities, sdk, connect, setup: prepare });
    return {
      client: s.client,
      transport: s.transport,
      tap,
      errors,
      async stop() {
        await s.close();
        noErrors();
      },
    };
  }
  const server = await startHTTP(serverArgs, extraEnv);
  try {
    const http = [];
    const t = new StreamableHTTPClientTransport(new URL(`${server.base}/mcp`), { fetch: recordingFetch(http) });
    const client = sdk.client(name, capabilities);
    prepare(client, t);
    tap.http = http;
    await within(client.connect(t, { timeout: STEP_MS, ...connect }), STEP_MS, "connect to /mcp");
    return {
      client,
      transport: t,
      tap,
      errors,
      server,
      async stop() {
        await within(client.close(), STEP_MS, "client.close").catch(() => {});
        const res = await server.stop();
        assert.deepEqual(res, { code: 0, signal: null }, `exit after SIGTERM; stderr:\n${server.stderr()}`);
        assert.equal(server.stdout(), "", "nothing on stdout over HTTP");
        noErrors();
      },
    };
  } catch (err) {
    await server.stop().catch(() => {});
    throw err;
  }
}

/** A fetch that records each exchange's method, headers and status in log. */
function recordingFetch(log) {
  return async (url, init = {}) => {
    const entry = { method: init.method ?? "GET", headers: Object.fromEntries(new Headers(init.headers)) };
    log.push(entry);
    const res = await fetch(url, init);
    entry.status = res.status;
    entry.responseHeaders = Object.fromEntries(res.headers);
    return res;
  };
}

/** The transports a modern client reaches the server on, for loops over suites. */
export const MODERN_TRANSPORTS = [
  { name: "stdio", kind: "stdio" },
  { name: "Streamable HTTP on /mcp", kind: "http" },
];
