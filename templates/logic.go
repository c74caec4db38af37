package templates

import (
	"fmt"
	"slices"
	"strings"

	"github.com/mbleigh/raymond"
	"github.com/mbleigh/raymond/ast"
	"github.com/mbleigh/raymond/lexer"
	"github.com/mbleigh/raymond/parser"
)

// A section with block or partial syntax ({{#if}}, {{#unless}},
// {{#each}}, {{else}}, {{> partial}}) is rendered by a Handlebars engine,
// raymond, the one Google's dotprompt uses; every other section keeps the
// compiled placeholders of placeholder.go, so the templates written before
// sections existed render byte for byte as they did. Which path a section
// takes is decided once, when it is compiled.
//
// Only a small, safe part of Handlebars is accepted, checked on the
// lexer's tokens before the parser sees them:
//
//	{{name}} {{{name}}} {{&name}}             a variable (no helpers, no literals)
//	{{#if name}} {{#unless name}}             with {{else}}, {{else if name}}
//	{{#each name}} … {{this}} {{@index}} … {{/each}}
//	{{@first}} {{@last}} {{@root.name}}      inside {{#each}}
//	{{> partial_name}}                        a library's partials/NAME.md
//	{{! comment }} {{~ … ~}} \{{              comments, white space control, escapes
//
// Everything else (helpers such as {{log}} or {{lookup}}, {{#with}},
// sub-expressions, hash arguments, block parameters, raw blocks, inverse
// sections, partial blocks, decorators) is a validation error, so no
// template runs code or reaches the engine's helpers. Checking tokens
// first also keeps a broken template from the parser: raymond's lexer runs
// on a goroutine that a failed parse leaves blocked for good, while a full
// scan (lexer.Collect) ends it.

// maxPartialDepth is how deep partials may include partials.
const maxPartialDepth = 8

// refKind is what a reference in a logic section does with its name.
type refKind uint8

const (
	refValue   refKind = iota // {{name}}: substitutes it
	refIf                     // {{#if name}} or {{else if name}}
	refUnless                 // {{#unless name}} or {{else unless name}}
	refEach                   // {{#each name}}
	refPartial                // {{> name}}
)

// logicRef is one name a logic section uses, where it uses it.
type logicRef struct {
	kind refKind
	// name is a variable's name, a partial's, or one of the loop's own:
	// "this", "@index", "@first", "@last".
	name string
	root bool // written @root.name
	loop int  // how many {{#each}} blocks enclose it
	pos  int  // byte offset of its opening braces
	text string
}

// logic is a section compiled for the engine.
type logic struct {
	source string
	tpl    *raymond.Template // with the partials it includes, once linked
	prog   *ast.Program      // for the bound on what it renders
	refs   []logicRef
	// partials are the partials it includes, with those they include, by
	// name; nil until the catalog links it (Build).
	partials map[string]*partial
}

// hasLogic reports whether content has block or partial syntax, which
// makes its section the engine's: "{{" (with "~" for white space control)
// before '#', '/', '>', '^' or "else".
func hasLogic(content string) bool {
	for i := 0; ; {
		j := strings.Index(content[i:], "{{")
		if j < 0 {
			return false
		}
		k := i + j + 2
		if k < len(content) && content[k] == '~' {
			k++
		}
		if k < len(content) {
			switch content[k] {
			case '#', '/', '>', '^':
				return true
			}
			if rest := strings.TrimLeft(content[k:], " \t\r\n"); strings.HasPrefix(rest, "else") &&
				(len(rest) == 4 || !isNameByte(rest[4])) {
				return true
			}
		}
		i = i + j + 2
	}
}

// logicError is a problem of a logic section at a byte offset.
type logicError struct {
	pos int
	msg string
}

// compileLogic compiles content for the engine. Its errors are ordered by
// position; the logic is nil when there are any.
func compileLogic(content string) (*logic, []logicError) {
	refs, errs := scanLogic(content)
	if len(errs) > 0 {
		return nil, errs
	}
	prog, err := parser.Parse(content)
	if err != nil {
		// The scan accepted it: a grammar gap between the scan and the
		// parser, which the fuzz test looks for.
		return nil, []logicError{{0, "cannot be parsed: " + oneLine(err.Error())}}
	}
	tpl, err := raymond.Parse(content)
	if err != nil {
		return nil, []logicError{{0, "cannot be parsed: " + oneLine(err.Error())}}
	}
	return &logic{source: content, tpl: tpl, prog: prog, refs: refs}, nil
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// block is an open block during the scan.
type block struct {
	name  string // if, unless, each
	pos   int
	text  string
	elsed bool // a plain {{else}} was seen: nothing may follow it
	// failed is set for a block whose opening tag was refused: its
	// closing tag is still its own.
	failed bool
}

// scanLogic checks content's tokens against the accepted grammar and
// collects the names it uses.
func scanLogic(content string) ([]logicRef, []logicError) {
	toks := lexer.Collect(content)
	if last := toks[len(toks)-1]; last.Kind == lexer.TokenError {
		// The lexer stops at its first error, the one to fix, which it
		// finds at the end of the tag it was reading: point at the tag.
		pos := last.Pos
		for j := len(toks) - 2; j >= 0; j-- {
			if k := toks[j].Kind; k == lexer.TokenContent || k == lexer.TokenClose || k == lexer.TokenCloseUnescaped {
				break
			}
			pos = toks[j].Pos
		}
		return nil, []logicError{{pos, fmt.Sprintf("%s: %s", truncate(content[pos:last.Pos], 60), last.Val)}}
	}
	var (
		refs  []logicRef
		errs  []logicError
		stack []block
		loop  int
	)
	fail := func(pos int, format string, args ...any) {
		errs = append(errs, logicError{pos, fmt.Sprintf(format, args...)})
	}
	// tagText is the tag starting at token i as written, for messages.
	tagText := func(i int) string {
		start := toks[i].Pos
		for j := i + 1; j < len(toks); j++ {
			switch toks[j].Kind {
			case lexer.TokenClose, lexer.TokenCloseUnescaped:
				return content[start : toks[j].Pos+len(toks[j].Val)]
			case lexer.TokenEOF, lexer.TokenError, lexer.TokenContent:
				return truncate(content[start:toks[j].Pos], 60)
			}
		}
		return truncate(content[start:], 60)
	}
	// path reads a variable path at i: name, @root.name, this, ., or a
	// loop's @index, @first, @last. It returns the name and the index
	// after it, or ok false.
	path := func(i int) (name string, root bool, next int, ok bool) {
		if i >= len(toks) {
			return "", false, i, false
		}
		switch t := toks[i]; {
		case t.Kind == lexer.TokenID && (t.Val == "this" || t.Val == "."):
			return "this", false, i + 1, true
		case t.Kind == lexer.TokenID && engineHelpers[t.Val]:
			// The engine would call the helper of that name.
			return "", false, i, false
		case t.Kind == lexer.TokenID && isVariableName(t.Val):
			return t.Val, false, i + 1, true
		case t.Kind == lexer.TokenData && i+1 < len(toks) && toks[i+1].Kind == lexer.TokenID:
			switch id := toks[i+1].Val; id {
			case "index", "first", "last":
				return "@" + id, false, i + 2, true
			case "root":
				if i+3 < len(toks) && toks[i+2].Kind == lexer.TokenSep && toks[i+3].Kind == lexer.TokenID && isVariableName(toks[i+3].Val) {
					return toks[i+3].Val, true, i + 4, true
				}
			}
		}
		return "", false, i, false
	}
	closes := func(i int, kind lexer.TokenKind) bool {
		return i < len(toks) && toks[i].Kind == kind
	}
	unsupported := func(i int) {
		if i+1 < len(toks) && toks[i+1].Kind == lexer.TokenID && engineHelpers[toks[i+1].Val] && toks[i].Kind != lexer.TokenOpenBlock {
			fail(toks[i].Pos, "%s: %q is the name of a Handlebars helper, and helpers are not available: "+
				"a variable of that name cannot be used in a section with logic, so rename it", tagText(i), toks[i+1].Val)
			return
		}
		fail(toks[i].Pos, "%s is not supported: a template may use {{name}}, {{#if name}}, {{#unless name}}, {{else}}, "+
			"{{#each name}} with {{this}} and {{@index}}, and {{> partial}}; helpers, literals and other Handlebars features are not available",
			tagText(i))
	}
	// skip moves past the rest of a tag that failed, so one mistake is
	// reported once.
	skip := func(i int) int {
		for i < len(toks) && toks[i].Kind != lexer.TokenClose && toks[i].Kind != lexer.TokenCloseUnescaped &&
			toks[i].Kind != lexer.TokenEOF && toks[i].Kind != lexer.TokenError {
			i++
		}
		if i < len(toks) && (toks[i].Kind == lexer.TokenClose || toks[i].Kind == lexer.TokenCloseUnescaped) {
			i++
		}
		return i
	}

	for i := 0; i < len(toks); {
		t := toks[i]
		switch t.Kind {
		case lexer.TokenEOF:
			for _, b := range stack {
				fail(b.pos, "%s is never closed: add {{/%s}} where the block ends", b.text, strings.TrimSuffix(b.name, "/else"))
			}
			slices.SortStableFunc(errs, func(a, b logicError) int { return a.pos - b.pos })
			return refs, errs
		case lexer.TokenContent, lexer.TokenComment:
			i++
		case lexer.TokenOpen, lexer.TokenOpenUnescaped:
			closer := lexer.TokenClose
			if t.Kind == lexer.TokenOpenUnescaped {
				closer = lexer.TokenCloseUnescaped
			}
			name, root, next, ok := path(i + 1)
			if !ok || !closes(next, closer) {
				unsupported(i)
				i = skip(i + 1)
				continue
			}
			refs = append(refs, logicRef{kind: refValue, name: name, root: root, loop: loop, pos: t.Pos, text: tagText(i)})
			i = next + 1
		case lexer.TokenOpenBlock, lexer.TokenOpenInverseChain:
			chain := t.Kind == lexer.TokenOpenInverseChain
			if !closes(i+1, lexer.TokenID) {
				unsupported(i)
				i = skip(i + 1)
				continue
			}
			helper := toks[i+1].Val
			kind, known := blockKinds[helper]
			if !known || (chain && kind == refEach) {
				unsupported(i)
				if !chain {
					stack = append(stack, block{name: helper, pos: t.Pos, text: tagText(i), failed: true})
				}
				i = skip(i + 1)
				continue
			}
			name, root, next, ok := path(i + 2)
			if !ok || !closes(next, lexer.TokenClose) {
				if ok && closes(next, lexer.TokenOpenBlockParams) {
					fail(t.Pos, "%s: block parameters (as |x|) are not supported: use {{this}} and {{@index}} inside {{#each}}", tagText(i))
				} else {
					fail(t.Pos, "%s: a block takes one variable, as in {{#%s name}}", tagText(i), helper)
				}
				if !chain {
					stack = append(stack, block{name: helper, pos: t.Pos, text: tagText(i), failed: true})
				}
				i = skip(i + 1)
				continue
			}
			text := tagText(i)
			if chain {
				switch {
				case len(stack) == 0:
					fail(t.Pos, "%s is outside any block: it belongs between {{#if name}} and {{/if}}", text)
				case stack[len(stack)-1].elsed:
					fail(t.Pos, "%s comes after {{else}}: the plain {{else}} must be the last branch", text)
				case stack[len(stack)-1].name == "each":
					fail(t.Pos, "%s: {{#each}} takes a plain {{else}} (for an empty list), not a chained one", text)
				}
			} else {
				stack = append(stack, block{name: helper, pos: t.Pos, text: text})
			}
			// A chain's branch is as deep in loops as its block.
			refs = append(refs, logicRef{kind: kind, name: name, root: root, loop: loop, pos: t.Pos, text: text})
			if kind == refEach {
				loop++
			}
			i = next + 1
		case lexer.TokenInverse:
			if len(stack) == 0 {
				fail(t.Pos, "%s is outside any block: it belongs between {{#if name}} and {{/if}}", t.Val)
			} else if b := &stack[len(stack)-1]; b.elsed {
				fail(t.Pos, "a second {{else}} in %s: a block has one", b.text)
			} else {
				b.elsed = true
				if b.name == "each" && !b.failed {
					// The empty list's branch is outside the loop.
					loop--
					b.name = "each/else"
				}
			}
			i++
		case lexer.TokenOpenEndBlock:
			if !closes(i+1, lexer.TokenID) || !closes(i+2, lexer.TokenClose) {
				unsupported(i)
				i = skip(i + 1)
				continue
			}
			name := toks[i+1].Val
			text := tagText(i)
			switch {
			case len(stack) == 0:
				fail(t.Pos, "%s closes no block: remove it, or open the block with {{#%s name}}", text, name)
			case strings.TrimSuffix(stack[len(stack)-1].name, "/else") != name:
				b := stack[len(stack)-1]
				line, col := lineColumn(content, b.pos)
				fail(t.Pos, "%s closes %s (line %d, column %d), which needs {{/%s}} first", text, b.text, line, col,
					strings.TrimSuffix(b.name, "/else"))
			default:
				if b := stack[len(stack)-1]; b.name == "each" && !b.failed {
					loop--
				}
				stack = stack[:len(stack)-1]
			}
			i += 3
		case lexer.TokenOpenPartial:
			if !closes(i+1, lexer.TokenID) || !closes(i+2, lexer.TokenClose) || !isPartialName(toks[i+1].Val) {
				fail(t.Pos, "%s: a partial is included by its name alone, as in {{> house_style}} for partials/house_style.md", tagText(i))
				i = skip(i + 1)
				continue
			}
			refs = append(refs, logicRef{kind: refPartial, name: toks[i+1].Val, loop: loop, pos: t.Pos, text: tagText(i)})
			i += 3
		case lexer.TokenOpenInverse:
			// {{^name}}: Mustache's inverted section.
			unsupported(i)
			if closes(i+1, lexer.TokenID) {
				stack = append(stack, block{name: toks[i+1].Val, pos: t.Pos, text: tagText(i), failed: true})
			}
			i = skip(i + 1)
		default:
			unsupported(i)
			i = skip(i + 1)
		}
	}
	return refs, errs
}

// blockKinds are the blocks a template may open.
var blockKinds = map[string]refKind{"if": refIf, "unless": refUnless, "each": refEach}

// engineHelpers are the helpers raymond registers for every template:
// {{log}} would write to the process's log, and a variable of one of
// these names would call the helper instead of being looked up.
var engineHelpers = map[string]bool{"if": true, "unless": true, "with": true, "each": true, "log": true, "lookup": true, "equal": true}

// isVariableName reports whether s is a variable name: letters, digits
// and '_' (the schema's pattern).
func isVariableName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isNameByte(s[i]) {
			return false
		}
	}
	return true
}

// lineColumn converts a byte offset of content into a 1-based line and
// column (in characters).
func lineColumn(content string, pos int) (line, col int) {
	return position([]byte(content), int64(pos))
}

// checkRefs checks the names a section or a partial uses against the
// variables of the template it renders in.
func checkRefs(refs []logicRef, vars []Variable) []logicError {
	var errs []logicError
	fail := func(r logicRef, format string, args ...any) {
		errs = append(errs, logicError{r.pos, fmt.Sprintf(format, args...)})
	}
	for _, r := range refs {
		if r.kind == refPartial {
			if r.loop > 0 {
				fail(r, "%s is inside {{#each}}, where the partial would see the list's item rather than the template's variables: "+
					"include it outside the loop", r.text)
			}
			continue
		}
		if strings.HasPrefix(r.name, "@") || r.name == "this" {
			if r.loop == 0 {
				fail(r, "%s is only meaningful inside {{#each name}}…{{/each}}, where it is the item (this) or its position", r.text)
			}
			if r.kind == refEach {
				fail(r, "%s: {{#each}} goes over a list variable, and a list's items are strings", r.text)
			}
			continue
		}
		if r.loop > 0 && !r.root {
			fail(r, "%s is inside {{#each}}, where %q would name a field of the item: write @root.%s for the template's variable",
				r.text, r.name, r.name)
			continue
		}
		i := searchVariables(vars, r.name)
		switch {
		case i < 0 && r.kind == refValue && !r.root:
			// A placeholder without a variable, as in a plain section:
			// a warning, and it stays as written unless an argument
			// names it.
		case i < 0:
			fail(r, "%s names no variable: define %q in variables, or correct the name", r.text, r.name)
		case r.kind == refEach && vars[i].Type != TypeArray:
			fail(r, "%s goes over %q, which is not a list: give the variable \"type\": \"array\"", r.text, r.name)
		case r.kind == refValue && vars[i].Type == TypeArray:
			fail(r, "%s is a list: write {{#each %s}}…{{this}}…{{/each}} to place its items", r.text, r.name)
		}
	}
	return errs
}

// logicProblems compiles content and checks it against vars, as Problems
// at pointer with the line and column of each.
func logicProblems(content string, vars []Variable, pointer string) []Problem {
	// The names are checked even when the syntax is wrong somewhere: the
	// whole story at once.
	refs, errs := scanLogic(content)
	if len(errs) == 0 {
		_, errs = compileLogic(content)
	}
	errs = append(errs, checkRefs(refs, vars)...)
	out := make([]Problem, 0, len(errs))
	for _, e := range errs {
		line, col := lineColumn(content, e.pos)
		out = append(out, Problem{Pointer: pointer, Message: fmt.Sprintf("line %d, column %d: %s", line, col, e.msg)})
	}
	return out
}

// logicNames returns the variable names a logic section uses, and among
// them those written as plain placeholders outside any loop (which, like
// a plain section's, may name no variable), each in order of first use,
// as far as the section can be read.
// loopNames returns the names content's {{#each}} blocks loop over: a file
// that declares no inputs (.prompt.yml) makes them lists.
func loopNames(content string) []string {
	refs, _ := scanLogic(content)
	var out nameSet
	for _, r := range refs {
		if r.kind == refEach && !strings.HasPrefix(r.name, "@") && r.name != "this" {
			out.add(r.name)
		}
	}
	return out.list
}

func logicNames(content string) (used, plain []string) {
	refs, _ := scanLogic(content)
	var u, p nameSet
	for _, r := range refs {
		if r.kind == refPartial || r.name == "this" || strings.HasPrefix(r.name, "@") {
			continue
		}
		u.add(r.name)
		if r.kind == refValue && !r.root && r.loop == 0 {
			p.add(r.name)
		}
	}
	return u.list, p.list
}
