package main

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// goal is a target set for flowyprompt: the ratio of the medians of one
// metric in one scenario to another server's (mcp-go's, unless base
// says), at least or at most want.
type goal struct {
	scenario string
	metric   string // mRPS or mCPUPerReq
	atMost   bool   // lower is better (CPU); else higher (req/s)
	want     float64
	// base is the server compared with, in baseScenario; "": mcp-go, in
	// the same scenario.
	base, baseScenario string
}

// goals are the targets flowyprompt is held to at its defaults. The floor
// serves Streamable HTTP alone, so the SSE row compares with its figure
// there.
var goals = []goal{
	{scenario: "stdio-get-32", metric: mRPS, want: 3},
	{scenario: "sse-get-50", metric: mRPS, want: 1.3},
	{scenario: "sse-get-50", metric: mCPUPerReq, atMost: true, want: 0.6},
	{scenario: "sse-get-50", metric: mCPUPerReq, atMost: true, want: 1.2, base: httpFloor, baseScenario: "http-get-50"},
	{scenario: "http-get-50", metric: mRPS, want: 1.3},
	{scenario: "http-get-50", metric: mCPUPerReq, atMost: true, want: 0.6},
	{scenario: "http-get-50", metric: mCPUPerReq, atMost: true, want: 1.2, base: httpFloor},
}

// against is the server and scenario g compares with.
func (g goal) against() (srv, sc string) {
	srv, sc = g.base, g.baseScenario
	if srv == "" {
		srv = baselineServer
	}
	if sc == "" {
		sc = g.scenario
	}
	return srv, sc
}

// goalsLead introduces the goals table.
const goalsLead = "Goals: each flowyprompt build's ratio of medians to mcp-go's, or to " + httpFloor +
	"'s (`net/http` alone, answering every POST with the same prompt and no MCP work), and whether it meets the target; " +
	flowyprompt + " runs at its defaults (the audit log on), " + flowypromptQuiet + " with `--log-level error`."

func (g goal) String() string {
	what, cmp := "req/s", "at least"
	if g.metric == mCPUPerReq {
		what = "server CPU per request"
	}
	if g.atMost {
		cmp = "at most"
	}
	srv, sc := g.against()
	of := srv + "'s"
	if sc != g.scenario {
		of += " over Streamable HTTP"
	}
	return fmt.Sprintf("%s %s %s× %s", what, cmp, strconv.FormatFloat(g.want, 'f', -1, 64), of)
}

// met says how a ratio of medians stands against the goal, judged as the
// report prints the ratio (to two decimals), so that "3.00×" never reads
// as missed.
func (g goal) met(r float64) string {
	r = math.Round(r*100) / 100
	ok := r >= g.want
	if g.atMost {
		ok = r <= g.want
	}
	if ok {
		return "met"
	}
	return "missed"
}

// goalsTable renders the goals of the scenarios in the report, with each
// flowyprompt build's ratio to mcp-go: "" when no goal's scenario ran.
func (r *report) goalsTable() string {
	var fps []string
	for _, s := range r.servers {
		if s == flowyprompt || strings.HasPrefix(s, flowyprompt+"-") {
			fps = append(fps, s)
		}
	}
	var b strings.Builder
	for _, g := range goals {
		i := slices.IndexFunc(r.scenarios, func(sc scenario) bool { return sc.id == g.scenario })
		if i < 0 || !r.ranAny(g.scenario) || len(fps) == 0 {
			continue
		}
		if b.Len() == 0 {
			b.WriteString(goalsLead + "\n\n| goal | " + strings.Join(fps, " | ") + " |\n|---|" + strings.Repeat("---|", len(fps)) + "\n")
		}
		fmt.Fprintf(&b, "| %s: %s |", r.scenarios[i].title, g)
		srv, sc := g.against()
		base := spreadOf(r.values(sc, srv, g.metric))
		for _, fp := range fps {
			s := spreadOf(r.values(g.scenario, fp, g.metric))
			if s.n == 0 || base.n == 0 || base.med == 0 {
				b.WriteString(" – |")
				continue
			}
			fmt.Fprintf(&b, " %s, %s |", ratio(s, base), g.met(s.med/base.med))
		}
		b.WriteString("\n")
	}
	return b.String()
}
