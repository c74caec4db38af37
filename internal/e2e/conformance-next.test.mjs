// The official MCP conformance suite at its 0.2.0-alpha.12 release
// (installed as conformance-next), run by requirement set against
// cmd/conformance-server: `conformance server --url URL/mcp --requirements
// REVISION`, for the modern revision 2026-07-28 and for 2025-11-25.
//
// This file builds nothing: it runs FLOWYPROMPT_CONFORMANCE_BIN (see
// conformance-helpers.mjs).
//
// Facts about the suite these tests rely on (checked against 0.2.0-alpha.12):
// - `--requirements REVISION` runs, at that revision's wire, the server
//   scenarios the revision requires ("scored") and some it reports without
//   scoring; `conformance list --requirements REVISION` names both, each
//   unscored one with its reason (extension, pending, added-after-release).
//   The run exits 1 only when a scored scenario has a FAILURE check.
// - For 2026-07-28 the unscored ones are the ten tasks-* scenarios of the
//   tasks extension, which the fixture server does not implement, and three
//   pending ones (json-schema-2020-12, http-header-validation,
//   http-custom-header-server-validation), which it serves and which must
//   pass here.
// - Every scenario's checks are saved with -o (see conformance-helpers.mjs),
//   which is where each scenario's result is read from: the summary line
//   counts the unscored scenarios' checks too.

import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { badChecks, CONFORMANCE_NEXT, requirementSet, runOnFixture } from "./conformance-helpers.mjs";

const RUN_MS = 180_000; // one requirement set (about 3 s here)
const TEST_MS = RUN_MS + 45_000; // the run, listing the set, the server's start and stop

/** The number of checks with status. */
const count = (checks, status) => checks.filter((c) => c.status === status).length;

/**
 * Runs the requirement set revision against a fresh fixture server started
 * with serverArgs and checks that every scenario passes, with neither a
 * failed check nor a warning, except those of an extension; returns the
 * counts.
 */
async function conformRevision(t, revision, serverArgs = []) {
  const set = await requirementSet(CONFORMANCE_NEXT, revision);
  const result = await runOnFixture(CONFORMANCE_NEXT, serverArgs, ["--requirements", revision], RUN_MS);
  const { explain } = result;
  assert.equal(result.code, 0, `the suite exited ${result.code}${explain}`);
  assert.match(result.output, new RegExp(`Running requirements ${revision} \\(\\d+ scenarios\\)`), `a run of the requirement set${explain}`);

  const byScenario = new Map(result.results.map((r) => [r.scenario, r.checks]));
  const ran = [...byScenario.keys()].sort();
  assert.deepEqual(ran, [...set.scored, ...set.notScored.keys()].sort(), `the scenarios run are the set's${explain}`);

  // The fixture implements no extension; every other scenario must pass.
  const required = result.results.filter((r) => set.notScored.get(r.scenario) !== "extension");
  const counts = { scenarios: 0, failedScenarios: 0, passed: 0, failed: 0 };
  for (const scenario of set.scored) {
    const checks = byScenario.get(scenario);
    const failed = count(checks, "FAILURE");
    counts.scenarios++;
    counts.failedScenarios += failed > 0 ? 1 : 0;
    counts.passed += count(checks, "SUCCESS");
    counts.failed += failed;
  }
  assert.deepEqual(badChecks(required), [], `no failure and no warning outside the extensions${explain}`);
  for (const { scenario, checks } of required) {
    assert.ok(checks.some((c) => c.status === "SUCCESS"), `${scenario} passed no check${explain}`);
  }
  for (const [scenario, reason] of set.notScored) {
    const checks = byScenario.get(scenario);
    t.diagnostic(`not scored (${reason}): ${scenario}: ${count(checks, "SUCCESS")} passed, ${count(checks, "FAILURE")} failed`);
  }
  t.diagnostic(`scored: ${counts.scenarios - counts.failedScenarios}/${counts.scenarios} scenarios passed; ` +
    `checks: ${counts.passed} passed, ${counts.failed} failed`);
  return { set, counts, byScenario };
}

describe("conformance 0.2.0-alpha.12 by requirement set, against cmd/conformance-server", { timeout: 3 * TEST_MS }, () => {
  it("2026-07-28: every scored scenario and the pending ones pass, no check failed, no warning", { timeout: TEST_MS }, async (t) => {
    const { set, counts, byScenario } = await conformRevision(t, "2026-07-28");
    assert.equal(set.scored.length, 37, "the 2026-07-28 set scores 37 server scenarios");
    assert.equal(counts.failed, 0);
    for (const pending of ["json-schema-2020-12", "http-header-validation", "http-custom-header-server-validation"]) {
      assert.equal(set.notScored.get(pending), "pending", `${pending} is pending`);
    }
    assert.ok(counts.passed >= 121, `${counts.passed} scored checks passed, want at least 121`);
    // What the fixture's diagnostic tools make testable: none of these is
    // "Not testable" here (see conformance.test.mjs for flowyprompt).
    const stateless = byScenario.get("server-stateless");
    for (const id of [
      "sep-2575-server-rejects-undeclared-capability",
      "sep-2575-missing-capability-http-400",
      "sep-2575-http-server-no-independent-requests-on-stream",
      "sep-2575-server-no-log-without-loglevel",
      "sep-2575-server-sends-prompts-list-changed-on-subscription",
      "sep-2575-server-sends-tools-list-changed-on-subscription",
    ]) {
      assert.equal(stateless.find((c) => c.id === id)?.status, "SUCCESS", id);
    }
    assert.equal(byScenario.get("input-required-result-tampered-state").find((c) => c.id === "sep-2322-reject-tampered-state")?.status,
      "SUCCESS", "a tampered requestState is refused");
  });

  it("2026-07-28 when the transport picks JSON or a stream itself (--answers auto): the same", { timeout: TEST_MS }, async (t) => {
    // Errors and quick results come as JSON, progress and subscriptions as
    // streams; server-sse-multiple-streams then reports INFO, not SUCCESS,
    // for its stream check, hence one check fewer.
    const { counts } = await conformRevision(t, "2026-07-28", ["--answers", "auto"]);
    assert.equal(counts.failed, 0);
    assert.ok(counts.passed >= 120, `${counts.passed} scored checks passed, want at least 120`);
  });

  it("2025-11-25: every scenario passes, no check failed, no warning", { timeout: TEST_MS }, async (t) => {
    const { set, counts } = await conformRevision(t, "2025-11-25");
    assert.equal(set.scored.length, 30, "the 2025-11-25 set scores 30 server scenarios");
    assert.equal(counts.failed, 0);
    assert.ok(counts.passed >= 70, `${counts.passed} scored checks passed, want at least 70`);
  });
});
