package arch_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// dir returns the directory of the module's package pkg.
func dir(t *testing.T, pkg string) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", "{{.Dir}}", module+"/"+pkg).Output()
	if err != nil {
		t.Fatalf("go list %s: %v", pkg, err)
	}
	return strings.TrimSpace(string(out))
}

// sources parses pkg's files, tests left out, by file name.
func sources(t *testing.T, pkg string) (*token.FileSet, map[string]*ast.File) {
	t.Helper()
	d := dir(t, pkg)
	names, err := filepath.Glob(filepath.Join(d, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	files := make(map[string]*ast.File)
	for _, n := range names {
		if strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, n, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files[filepath.Base(n)] = f
	}
	return fset, files
}

// TestPipelineFiles: mcp's files are named by the stage of the pipeline
// they hold, so that a request can be followed file by file: transport.go
// (the contract), decode.go, session.go (the 2025 era's layer),
// dispatch.go (the one lifecycle), encode.go, outbox.go; and the files
// the stages replaced are gone.
func TestPipelineFiles(t *testing.T) {
	tests := []struct {
		pkg       string
		want, not []string
	}{
		{"mcp", []string{"transport.go", "decode.go", "session.go", "dispatch.go", "encode.go", "outbox.go"},
			[]string{"modern.go", "wire.go", "scan.go", "fastjson.go", "fastparams.go"}},
		// A POST /mcp: post.go reads and decodes it, answer.go answers it,
		// whatever its era.
		{"transport/streamable", []string{"streamable.go", "post.go", "answer.go", "route.go", "session.go", "headers.go"},
			[]string{"modern.go"}},
	}
	for _, tc := range tests {
		d := dir(t, tc.pkg)
		for _, f := range tc.want {
			if _, err := os.Stat(filepath.Join(d, f)); err != nil {
				t.Errorf("%s/%s: %v", tc.pkg, f, err)
			}
		}
		for _, f := range tc.not {
			if _, err := os.Stat(filepath.Join(d, f)); err == nil {
				t.Errorf("%s/%s exists: its code belongs to a stage's file", tc.pkg, f)
			}
		}
	}
}

// TestOneLifecycle: a request is admitted, given its deadline and run in
// one place, dispatch.go, whatever its era: no other file of mcp sets a
// request's deadline, counts a request in, or starts one.
func TestOneLifecycle(t *testing.T) {
	_, files := sources(t, "mcp")
	only := map[string]string{
		"RequestTimeout": "dispatch.go", // the request's deadline
		"admit":          "dispatch.go", // the engine's count of running requests
		"goRun":          "dispatch.go", // a goroutine for a request
		"start":          "",            // the lifecycle, called by the session and Exchange.Run
	}
	for name, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			want, watched := only[sel.Sel.Name]
			if x, ok := sel.X.(*ast.SelectorExpr); sel.Sel.Name == "RequestTimeout" && (!ok || x.Sel.Name != "opts") {
				watched = false // fault.RequestTimeout, the error's code
			}
			switch {
			case !watched || name == want:
			case sel.Sel.Name == "RequestTimeout" && name == "engine.go":
				// Where the option is declared and given its default.
			case sel.Sel.Name == "start" && (name == "session.go" || name == "dispatch.go"):
			default:
				t.Errorf("mcp/%s uses %s: the request lifecycle lives in dispatch.go alone", name, sel.Sel.Name)
			}
			return true
		})
	}
}

// TestInboundContractOnTypes: what a transport hands the engine is
// declared in transport.go beside what it gets back, and carries no
// transport's flags: HTTP concerns come back as typed errors.
func TestInboundContractOnTypes(t *testing.T) {
	_, files := sources(t, "mcp")
	declared := map[string]string{}
	fields := map[string][]string{}
	for name, f := range files {
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.TYPE {
				continue
			}
			for _, s := range g.Specs {
				ts := s.(*ast.TypeSpec)
				declared[ts.Name.Name] = name
				if st, ok := ts.Type.(*ast.StructType); ok {
					for _, fl := range st.Fields.List {
						for _, n := range fl.Names {
							fields[ts.Name.Name] = append(fields[ts.Name.Name], n.Name)
						}
					}
				}
			}
		}
	}
	for _, typ := range []string{"Sink", "Route", "Outgoing", "Kind", "Inbound", "FrameError", "Exchange"} {
		if declared[typ] != "transport.go" {
			t.Errorf("type %s is declared in %q, want transport.go", typ, declared[typ])
		}
	}
	if f, ok := declared["Delivery"]; ok {
		t.Errorf("type Delivery (%s) is back: a transport passes its Route, and gets typed errors back", f)
	}
	if got := fields["Outgoing"]; !slices.Equal(got, []string{"Kind", "Data", "Err"}) {
		t.Errorf("Outgoing has fields %v, want Kind, Data, Err: a transport's status comes from Err through ErrorObjectFor", got)
	}
}

// TestCoreKnowsNoHTTP: mcp speaks JSON-RPC, not HTTP: a status code is
// the transport's, computed from the typed errors mcp returns; and the
// transports do not reach into each other.
func TestCoreKnowsNoHTTP(t *testing.T) {
	rules := []struct {
		pkg       string
		forbidden []string
	}{
		{"mcp", []string{"net/http", "net"}},
		{"transport/stdio", []string{module + "/transport/sse", module + "/transport/streamable", "net/http"}},
		{"transport/sse", []string{module + "/transport/streamable", module + "/transport/stdio"}},
		{"transport/streamable", []string{module + "/transport/sse", module + "/transport/stdio"}},
	}
	for _, r := range rules {
		for _, imp := range imports(t, r.pkg) {
			if slices.Contains(r.forbidden, imp) {
				t.Errorf("%s imports %s", r.pkg, imp)
			}
		}
	}
}
