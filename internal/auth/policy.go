package auth

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/flowyprompt/flowyprompt/internal/label"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// MatchAny is the match of a rule every member meets.
const MatchAny = "*"

// Policy says which sources each member may read and write (--auth-policy):
// a rule matches a member whose Groups (the values of the token's Claim)
// hold its Match, or every member for MatchAny; a member may read the
// union of the sources their read rules name, and write those their write
// rules name. A nil *Policy is no policy: every member reads everything
// (writing then needs the scope alone).
type Policy struct {
	Claim string `json:"claim"`
	Read  []Rule `json:"read"`
	Write []Rule `json:"write"`
}

// Rule is one rule of a Policy.
type Rule struct {
	Match   string   `json:"match"`
	Sources []string `json:"sources"`
	// Label, in a read rule, is the label the member is served when a
	// request names none ("": the server's --label or default).
	Label string `json:"label,omitempty"`
}

// Reads returns the sources m may read, sorted and once each; none for a
// nil member (no identity: nothing to match).
func (p *Policy) Reads(m *Member) []string {
	var out []string
	for _, r := range p.Read {
		if r.matches(m) {
			out = append(out, r.Sources...)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Label returns the label of the first read rule that matches m and names
// one, or "" when none does: the label m is served by default.
func (p *Policy) Label(m *Member) string {
	for _, r := range p.Read {
		if r.Label != "" && r.matches(m) {
			return r.Label
		}
	}
	return ""
}

// Writes reports whether m may write to source.
func (p *Policy) Writes(m *Member, source string) bool {
	for _, r := range p.Write {
		if r.matches(m) && slices.Contains(r.Sources, source) {
			return true
		}
	}
	return false
}

func (r Rule) matches(m *Member) bool {
	if m == nil {
		return false
	}
	return r.Match == MatchAny || slices.Contains(m.Groups, r.Match)
}

// maxPolicyBytes bounds a policy file: a policy of thousands of rules is
// a few hundred KiB.
const maxPolicyBytes = 1 << 20

// ParsePolicy reads a policy file's contents, checked against sources,
// the namespaces the server serves. Its error names file, the JSON
// pointer of what is wrong, and how to fix it.
func ParsePolicy(file string, data []byte, sources []string) (*Policy, error) {
	bad := func(ptr, what, how string) error {
		if ptr == "" {
			ptr = "(document)"
		}
		return fmt.Errorf("policy file %s: at %s: %s; %s", file, ptr, what, how)
	}
	if len(data) > maxPolicyBytes {
		return nil, bad("", fmt.Sprintf("%d bytes, more than %d", len(data), maxPolicyBytes), "a policy is a few rules: check the file given to --auth-policy")
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, bad("", "not a JSON object: "+jsonProblem(data, err),
			`write it as {"claim": "groups", "read": [{"match": "*", "sources": ["team"]}], "write": []}`)
	}
	p := &Policy{}
	for _, key := range slices.Sorted(maps.Keys(top)) {
		raw := top[key]
		switch key {
		case "claim":
			if json.Unmarshal(raw, &p.Claim) != nil || strings.TrimSpace(p.Claim) == "" {
				return nil, bad("/claim", "want the name of a token claim, a non-empty string",
					`name the claim that holds the member's groups, e.g. "claim": "groups" (or "roles", "sub", "email")`)
			}
		case "read", "write":
			rules, err := parseRules(raw, "/"+key, key == "read", sources, bad)
			if err != nil {
				return nil, err
			}
			if key == "read" {
				p.Read = rules
			} else {
				p.Write = rules
			}
		default:
			return nil, bad("/"+escapePointer(key), fmt.Sprintf("unknown member %q", key), `a policy has "claim", "read" and "write" only`)
		}
	}
	if p.Claim == "" {
		return nil, bad("/claim", "missing", `name the claim that holds the member's groups, e.g. "claim": "groups"`)
	}
	return p, nil
}

func parseRules(raw json.RawMessage, ptr string, read bool, sources []string, bad func(ptr, what, how string) error) ([]Rule, error) {
	var list []map[string]json.RawMessage
	if json.Unmarshal(raw, &list) != nil {
		return nil, bad(ptr, "want a list of rules", `write e.g. [{"match": "sre", "sources": ["ops"]}]`)
	}
	out := make([]Rule, 0, len(list))
	for i, obj := range list {
		at := ptr + "/" + strconv.Itoa(i)
		var r Rule
		for _, key := range slices.Sorted(maps.Keys(obj)) {
			v := obj[key]
			switch key {
			case "match":
				if json.Unmarshal(v, &r.Match) != nil || r.Match == "" {
					return nil, bad(at+"/match", "want a value of the claim, a non-empty string",
						`write the group (or sub, or email) the rule is for, or "*" for every member`)
				}
			case "sources":
				if json.Unmarshal(v, &r.Sources) != nil || len(r.Sources) == 0 {
					return nil, bad(at+"/sources", "want a non-empty list of source names", `write e.g. "sources": ["team"]`)
				}
			case "label":
				if !read {
					return nil, bad(at+"/label", "a write rule names no label",
						`a label says what a member reads: move "label" to a read rule, or remove it`)
				}
				if json.Unmarshal(v, &r.Label) != nil || label.Valid(r.Label) != nil {
					return nil, bad(at+"/label", "want a label's name",
						`write one of the labels the sources name (labels=… on a --source), e.g. "label": "staging"`)
				}
			default:
				return nil, bad(at+"/"+escapePointer(key), fmt.Sprintf("unknown member %q", key), `a rule has "match", "sources" and, in a read rule, "label" only`)
			}
		}
		if r.Match == "" {
			return nil, bad(at+"/match", "missing", `write the group the rule is for, or "*" for every member`)
		}
		if r.Sources == nil {
			return nil, bad(at+"/sources", "missing", `write the sources the rule opens, e.g. "sources": ["team"]`)
		}
		for j, s := range r.Sources {
			if !slices.Contains(sources, s) {
				return nil, bad(at+"/sources/"+strconv.Itoa(j), fmt.Sprintf("unknown source %q", s),
					"the sources this server serves are "+strings.Join(sources, ", ")+
						" (a --source's name=; default for the one source of --templates or --github-repo; examples for the built-in examples)")
			}
		}
		out = append(out, r)
	}
	return out, nil
}

// jsonProblem describes a JSON decoding error, with the line and column of
// a syntax error.
func jsonProblem(data []byte, err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		line := 1 + bytes.Count(data[:se.Offset], []byte("\n"))
		col := int(se.Offset) - bytes.LastIndexByte(data[:se.Offset], '\n') - 1
		return fmt.Sprintf("line %d, column %d: %v", line, col, se)
	}
	return err.Error()
}

// escapePointer escapes a key for a JSON pointer (RFC 6901).
func escapePointer(key string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(key)
}
