// The Claude Desktop bundle (make bundle), installed the way Claude
// Desktop installs one: unpacked with the MCPB library's own unpack, its
// mcp_config resolved for this platform and a user's settings by the same
// library's getMcpConfigForManifest, the resolved command started with the
// resolved environment under the SDK's stdio client. The bundle under test
// is FLOWYPROMPT_BUNDLE (make e2e builds bin/flowyprompt-host.mcpb: the
// real manifest and layout with only this machine's binary); the manifest
// is also held to `mcpb validate`.

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { existsSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { isAbsolute, join, resolve, sep } from "node:path";
import { after, before, describe, it } from "node:test";
import { promisify } from "node:util";

import { getMcpConfigForManifest, unpackExtension } from "@anthropic-ai/mcpb";

import { stdioClient } from "./sdk-helpers.mjs";
import { examplePrompts, HERE, listAll, REPO, STEP_MS, SUITE_MS, tempDir, TOOL_NAMES } from "./helpers.mjs";

const BUNDLE = process.env.FLOWYPROMPT_BUNDLE ?? resolve(REPO, "bin", "flowyprompt-host.mcpb");
if (!isAbsolute(BUNDLE) || !existsSync(BUNDLE)) {
  throw new Error(`bundle not found at ${BUNDLE}: build it with \`make bundle-host\` or set FLOWYPROMPT_BUNDLE to an absolute path`);
}
const MCPB_CLI = join(HERE, "node_modules", "@anthropic-ai", "mcpb", "dist", "cli", "cli.js");

// The prompts the built-in examples are served as.
const EXAMPLE_NAMES = examplePrompts();

const SETTINGS = ["templates_dir", "github_repo_url", "github_token", "github_ref"];

describe("Claude Desktop bundle (flowyprompt.mcpb)", { timeout: SUITE_MS }, () => {
  const unpacked = tempDir("flowyprompt-e2e-bundle-");
  const dir = join(unpacked.dir, "flowyprompt");
  let manifest;
  const warnings = [];

  before(async () => {
    assert.equal(await unpackExtension({ mcpbPath: BUNDLE, outputDir: dir, silent: true }), true, "unpackExtension");
    manifest = JSON.parse(readFileSync(join(dir, "manifest.json"), "utf8"));
  });
  after(() => unpacked.cleanup());

  /** What the host would start for userConfig: mcp_config resolved by the MCPB library. */
  async function resolveConfig(userConfig) {
    const config = await getMcpConfigForManifest({
      manifest,
      extensionPath: dir,
      systemDirs: { HOME: homedir(), DESKTOP: join(homedir(), "Desktop"), DOCUMENTS: join(homedir(), "Documents"), DOWNLOADS: join(homedir(), "Downloads") },
      userConfig,
      pathSeparator: sep,
      logger: { log() {}, warn: (...a) => warnings.push(a.join(" ")), error: (...a) => warnings.push(a.join(" ")) },
    });
    assert.ok(config, `no mcp_config for ${JSON.stringify(userConfig)} (warnings: ${warnings.join("; ")})`);
    return config;
  }

  /** An SDK client over stdio to the resolved command, with the resolved environment. */
  function start(config, extraEnv = {}) {
    return stdioClient({ command: config.command, args: config.args, extraEnv: { ...config.env, ...extraEnv }, name: "flowyprompt-e2e-bundle" });
  }

  it("passes mcpb validate with no error, and only the icon's note", async () => {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [MCPB_CLI, "validate", join(dir, "manifest.json")], { timeout: STEP_MS });
    assert.match(stdout, /^Manifest schema validation passes!$/m);
    assert.doesNotMatch(stdout + stderr, /ERROR|failed/i);
    const notes = stdout.split("\n").filter((l) => l.trim().startsWith("- "));
    assert.deepEqual(notes, ["  - Icon validation passed. Recommended size is 512×512 pixels for best display in Claude Desktop."]);
  });

  it("declares a binary server with four optional settings mapped to the server's variables", () => {
    assert.equal(manifest.manifest_version, "0.3");
    assert.match(manifest.version, /^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$/);
    assert.equal(manifest.server.type, "binary");
    assert.deepEqual(manifest.server.mcp_config.args, ["serve"]);
    assert.deepEqual(manifest.server.mcp_config.env, {
      TEMPLATES_DIR: "${user_config.templates_dir}",
      GITHUB_REPO_URL: "${user_config.github_repo_url}",
      GITHUB_PAT: "${user_config.github_token}",
      GITHUB_REF: "${user_config.github_ref}",
    });
    assert.deepEqual(Object.keys(manifest.user_config), SETTINGS);
    for (const key of SETTINGS) assert.equal(manifest.user_config[key].required, false, key);
    assert.equal(manifest.user_config.templates_dir.type, "directory");
    assert.equal(manifest.user_config.github_token.sensitive, true);
    assert.deepEqual(manifest.compatibility.platforms, ["darwin", "win32", "linux"]);
    assert.equal(manifest.license, "MIT");
    // The icon is a 512×512 PNG (its IHDR chunk).
    const png = readFileSync(join(dir, manifest.icon));
    assert.equal(png.readUInt32BE(16), 512);
    assert.equal(png.readUInt32BE(20), 512);
  });

  it("resolves to an executable in the bundle, the desktop build, that prints its version and commit", async () => {
    const config = await resolveConfig({});
    assert.ok(config.command.startsWith(dir + "/server/"), config.command);
    assert.ok(statSync(config.command).mode & 0o111, `${config.command} is not executable`);
    const { stdout } = await promisify(execFile)(config.command, ["version"], { timeout: STEP_MS });
    assert.match(stdout, new RegExp(`^flowyprompt \\S+ \\(desktop build, commit [0-9a-f]{12}(-dirty)?, go1\\.\\d+[^,]*, ${process.platform}/\\S+\\)\\n$`));
  });

  it("with a templates folder chosen, serves that folder", async () => {
    const prompts = tempDir("flowyprompt-e2e-bundle-templates-");
    writeFileSync(
      join(prompts.dir, "Hello.json"),
      JSON.stringify({
        metadata: { name: "Hello", description: "Greets", version: "1.0.0" },
        variables: [{ name: "who", type: "string", description: "Who", required: true }],
        results: [{ name: "G", content: "Hello {{who}}!" }],
      }),
    );
    const config = await resolveConfig({ templates_dir: prompts.dir });
    assert.equal(config.env.TEMPLATES_DIR, prompts.dir);
    // Left empty, the other settings reach the server as the host leaves them.
    assert.equal(config.env.GITHUB_PAT, "${user_config.github_token}");
    const s = await start(config);
    try {
      const list = await listAll((p) => s.client.listPrompts(p, { timeout: STEP_MS }), "prompts");
      assert.deepEqual(list.map((p) => p.name), ["Hello"]);
      const got = await s.client.getPrompt({ name: "Hello", arguments: { who: "Ada" } }, { timeout: STEP_MS });
      assert.match(got.messages[0].content.text, /Hello Ada!/);
    } finally {
      await s.close();
      prompts.cleanup();
    }
  });

  it("with nothing filled in, serves the built-in examples and lists the manifest's tools", async () => {
    const config = await resolveConfig({});
    // Claude Desktop leaves a placeholder without a value unreplaced.
    for (const v of Object.values(config.env)) assert.match(v, /^\$\{user_config\.[a-z_]+\}$/);
    const s = await start(config, { LOG_LEVEL: "debug" });
    try {
      const list = await listAll((p) => s.client.listPrompts(p, { timeout: STEP_MS }), "prompts");
      assert.deepEqual(list.map((p) => p.name).sort(), EXAMPLE_NAMES);
      assert.ok(EXAMPLE_NAMES.includes("Code_Review"));
      const tools = await listAll((p) => s.client.listTools(p, { timeout: STEP_MS }), "tools");
      assert.deepEqual(tools.map((t) => t.name).sort(), [...TOOL_NAMES].sort());
      // tools_generated: false promises the manifest lists every tool.
      assert.equal(manifest.tools_generated, false);
      assert.deepEqual(manifest.tools.map((t) => t.name).sort(), [...TOOL_NAMES].sort());
    } finally {
      await s.close();
    }
    for (const name of ["TEMPLATES_DIR", "GITHUB_REPO_URL", "GITHUB_PAT", "GITHUB_REF"]) {
      assert.match(s.stderr(), new RegExp(`ignored an unreplaced settings placeholder: the setting is unset" variable=${name}\\n`));
    }
    assert.doesNotMatch(s.stderr(), /level=(WARN|ERROR)/);
  });

  it("with the settings cleared to empty strings, serves the built-in examples", async () => {
    const config = await resolveConfig(Object.fromEntries(SETTINGS.map((k) => [k, ""])));
    assert.deepEqual(Object.values(config.env), ["", "", "", ""]);
    const s = await start(config);
    try {
      const list = await listAll((p) => s.client.listPrompts(p, { timeout: STEP_MS }), "prompts");
      assert.deepEqual(list.map((p) => p.name).sort(), EXAMPLE_NAMES);
    } finally {
      await s.close();
    }
  });
});
