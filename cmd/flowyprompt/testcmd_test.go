package main

import (
	"bytes"
	"encoding/xml"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// testedTemplate has two tests that hold and one that does not.
const testedTemplate = `{"metadata":{"name":"Greet","description":"Greets","version":"1.0.0"},
"variables":[{"name":"who","type":"string","description":"Who","required":true},
 {"name":"loud","type":"boolean","description":"Shout","default":false},
 {"name":"names","type":"array","description":"Others","default":[]}],
"results":[{"name":"s","content":"Hello {{who}}! loud={{loud}}\n{{names}}"}],
"tests":[
 {"name":"greets","arguments":{"who":"Ada"},"expect":{"contains":["Hello Ada!"],"notContains":["loud=true"]}},
 {"name":"typed values","arguments":{"who":"Ada","loud":true,"names":["Bo","Cy"]},"expect":{"contains":["loud=true\nBo\nCy"]}},
 {"name":"wrong","arguments":{"who":"Bob"},"expect":{"contains":["Hello Ada!"]}}
]}`

// junitReport is the part of a JUnit file CI systems count.
type junitReport struct {
	Tests    int `xml:"tests,attr"`
	Failures int `xml:"failures,attr"`
	Skipped  int `xml:"skipped,attr"`
	Suites   []struct {
		Name  string `xml:"name,attr"`
		Cases []struct {
			Name    string `xml:"name,attr"`
			Failure *struct {
				Message string `xml:"message,attr"`
			} `xml:"failure"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

// TestBinaryTest runs `flowyprompt test` as CI does, through the built
// binary: a failing test makes it exit 1, says which and why, counts, and
// writes a JUnit file with the same counts.
func TestBinaryTest(t *testing.T) {
	bin := binary(t)
	lib := t.TempDir()
	if err := os.WriteFile(filepath.Join(lib, "Greet.json"), []byte(testedTemplate), 0o644); err != nil {
		t.Fatal(err)
	}
	report := filepath.Join(t.TempDir(), "report.xml")
	cmd := exec.Command(bin, "test", "--templates", lib, "--junit", report)
	cmd.Env = serverEnv(t)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("err %v, want exit status 1\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	wantOut := "PASS Greet/greets\nPASS Greet/typed values\n" +
		"FAIL Greet/wrong: the text does not contain \"Hello Ada!\"\n" +
		"2 passed, 1 failed\n"
	if diff := cmp.Diff(wantOut, stdout.String()); diff != "" {
		t.Errorf("stdout (-want +got):\n%s", diff)
	}
	data, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	var rep junitReport
	if err := xml.Unmarshal(data, &rep); err != nil {
		t.Fatalf("the JUnit file does not parse: %v\n%s", err, data)
	}
	if rep.Tests != 3 || rep.Failures != 1 || rep.Skipped != 0 || len(rep.Suites) != 1 || rep.Suites[0].Name != "Greet" || len(rep.Suites[0].Cases) != 3 {
		t.Fatalf("JUnit counts: %+v", rep)
	}
	if f := rep.Suites[0].Cases[2].Failure; f == nil || f.Message != `the text does not contain "Hello Ada!"` {
		t.Errorf("the failing case: %+v", rep.Suites[0].Cases[2])
	}

	// The library fixed, it passes.
	fixed := strings.Replace(testedTemplate, `"arguments":{"who":"Bob"}`, `"arguments":{"who":"Ada"}`, 1)
	if err := os.WriteFile(filepath.Join(lib, "Greet.json"), []byte(fixed), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd = exec.Command(bin, "test", "--templates", lib)
	cmd.Env = serverEnv(t)
	out, err := cmd.Output()
	if err != nil || !strings.HasSuffix(string(out), "\n3 passed, 0 failed\n") {
		t.Errorf("fixed library: %v\n%s", err, out)
	}
}

// TestTestCommand: the library's invalid files fail too (their tests
// cannot run), validate reports a failing test at its pointer, and the
// built-in examples pass their own tests.
func TestTestCommand(t *testing.T) {
	dir := t.TempDir()
	badTest := strings.Replace(testedTemplate, `"arguments":{"who":"Bob"}`, `"arguments":{"whom":"Bob"}`, 1)
	for name, data := range map[string]string{"Greet.json": testedTemplate, "team/Broken.json": strings.Replace(badTest, "Greet", "Broken", 1)} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout []string
		stderr []string
	}{
		{name: "a library with an invalid file", args: []string{"test", "--templates", dir}, code: 1, stdout: []string{
			`FAIL team/Broken.json: not a valid template: /tests/2/arguments/whom: argument "whom" names no variable of the template (did you mean "who"?); its variables are who, loud, names`,
			"FAIL Greet/wrong: ", "2 passed, 2 failed\n"}},
		{name: "validate runs the tests", args: []string{"validate", filepath.Join(dir, "Greet.json")}, code: 1, stdout: []string{
			`error   /tests/2: test "wrong" fails: the text does not contain "Hello Ada!"`, "1 invalid"}},
		{name: "the examples", args: []string{"test"}, stdout: []string{"PASS Commit_Message/conventional by default", " passed, 0 failed, 2 not run\n"}},
		{name: "arguments", args: []string{"test", "extra"}, code: 2},
		{name: "help", args: []string{"test", "-h"}, stderr: []string{"Usage: flowyprompt test [--junit FILE] [flags]", "-junit FILE", "-templates"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, code := runCLI(t, nil, "", tt.args...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.code, stdout, stderr)
			}
			for _, s := range tt.stdout {
				if !strings.Contains(stdout, s) {
					t.Errorf("stdout lacks %q:\n%s", s, stdout)
				}
			}
			for _, s := range tt.stderr {
				if !strings.Contains(stderr, s) {
					t.Errorf("stderr lacks %q:\n%s", s, stderr)
				}
			}
		})
	}
}
