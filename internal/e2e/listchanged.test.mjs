// A template folder served with --templates, watched for changes: the SDK
// client must hear prompts and tools list_changed when a file appears,
// changes or goes, and a half-written file must never hide the others (the
// steps live in folder-suite.mjs, shared with the 2026-07-28 client in
// modern.sdk2.test.mjs); and TEMPLATES_DIR names the folder too.

import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";

import { BETA, folderSuite, writeTemplate } from "./folder-suite.mjs";
import { RawSession, SUITE_MS, tempDir } from "./helpers.mjs";
import { stdioFolder } from "./sdk-helpers.mjs";

folderSuite("template folder over stdio with the SDK client", stdioFolder("flowyprompt-e2e-watch"));

describe("TEMPLATES_DIR instead of --templates", { timeout: SUITE_MS }, () => {
  let s;
  let folder;
  before(() => {
    folder = tempDir("flowyprompt-e2e-templates-");
    writeTemplate(folder.dir, BETA);
  });
  after(async () => {
    await s?.kill();
    folder?.cleanup();
  });

  it("serves the folder named by the environment", async () => {
    s = new RawSession(["serve"], { TEMPLATES_DIR: folder.dir });
    await s.initialize();
    const res = await s.request(1, "prompts/list");
    assert.deepEqual(res.result.prompts.map((p) => p.name), ["Beta_Check"]);
  });
});
