package arch_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// appDir is internal/app, from this package's folder.
const appDir = "../app"

// maxAppFileLines is the most lines a file of internal/app holds, tests
// left out: past it, a file holds more than one idea.
const maxAppFileLines = 500

// parseApp parses internal/app's own files, tests left out, by file name.
func parseApp(t *testing.T) (*token.FileSet, map[string]*ast.File) {
	t.Helper()
	fset := token.NewFileSet()
	names, err := filepath.Glob(filepath.Join(appDir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]*ast.File{}
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		files[filepath.Base(name)] = f
	}
	return fset, files
}

// TestAppToolLayout: a newcomer finds each tool from its name alone. The
// handler of every tool registered with toolFromFiles (its name a string
// literal or constant, its handler a method of App) is declared in
// tool_NAME.go, NAME being the tool's name without "flowyprompt_", and
// every tool_*.go file holds a registered tool's handler.
func TestAppToolLayout(t *testing.T) {
	_, files := parseApp(t)
	consts := map[string]string{}
	methods := map[string]string{} // App's methods: the file declaring each
	for name, f := range files {
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.GenDecl:
				for _, s := range d.Specs {
					if vs, ok := s.(*ast.ValueSpec); ok && d.Tok == token.CONST {
						for i, id := range vs.Names {
							if i < len(vs.Values) {
								if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
									consts[id.Name], _ = strconv.Unquote(lit.Value)
								}
							}
						}
					}
				}
			case *ast.FuncDecl:
				if d.Recv != nil && receiverIs(d.Recv, "App") {
					methods[d.Name.Name] = name
				}
			}
		}
	}
	registered := map[string]string{} // tool name: its handler
	for file, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) < 2 {
				return true
			}
			fn, ok := call.Fun.(*ast.Ident)
			if !ok || fn.Name != "toolFromFiles" && fn.Name != "newTool" {
				return true
			}
			if _, method := call.Args[len(call.Args)-1].(*ast.SelectorExpr); fn.Name == "newTool" && !method {
				// toolFromFiles' own call, passing on its handler.
				return true
			}
			var name string
			switch a := call.Args[0].(type) {
			case *ast.BasicLit:
				name, _ = strconv.Unquote(a.Value)
			case *ast.Ident:
				name = consts[a.Name]
			}
			handler, ok := call.Args[len(call.Args)-1].(*ast.SelectorExpr)
			if name == "" || !ok {
				t.Errorf("%s: a toolFromFiles call whose name is not a string constant, or whose handler is not a method of App", file)
				return true
			}
			registered[name] = handler.Sel.Name
			return true
		})
	}
	if len(registered) < 10 {
		t.Fatalf("found %d registered tools (%v); the test no longer sees how tools are registered", len(registered), registered)
	}
	want := map[string]bool{}
	for name, handler := range registered {
		file := "tool_" + strings.TrimPrefix(name, "flowyprompt_") + ".go"
		want[file] = true
		if got := methods[handler]; got != file {
			t.Errorf("tool %s: its handler App.%s is in %q, want %s", name, handler, got, file)
		}
	}
	for file := range files {
		if strings.HasPrefix(file, "tool_") && !want[file] {
			t.Errorf("%s is named like a tool's file, but no registered tool's handler is there", file)
		}
	}
}

func receiverIs(recv *ast.FieldList, name string) bool {
	typ := recv.List[0].Type
	if star, ok := typ.(*ast.StarExpr); ok {
		typ = star.X
	}
	id, ok := typ.(*ast.Ident)
	return ok && id.Name == name
}

// TestAppFileSize: no file of internal/app outgrows maxAppFileLines.
func TestAppFileSize(t *testing.T) {
	_, files := parseApp(t)
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		data, err := os.ReadFile(filepath.Join(appDir, name))
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(string(data), "\n"); n > maxAppFileLines {
			t.Errorf("internal/app/%s has %d lines, more than %d: split it by idea (a tool's handler goes in its tool_NAME.go)", name, n, maxAppFileLines)
		}
	}
}

// TestOneCursorCodec: the packages that serve lists a page at a time
// (internal/app, mcp) leave their cursors to internal/cursor: none of
// their files writes base64url, the cursors' encoding, of its own.
func TestOneCursorCodec(t *testing.T) {
	for _, dir := range []string{appDir, "../../mcp"} {
		names, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range names {
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			data, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(data), "base64.RawURLEncoding") || strings.Contains(string(data), "base64.URLEncoding") {
				t.Errorf("%s encodes base64url itself: cursors are internal/cursor's (Encode, Page.Encode)", name)
			}
		}
	}
}
