package templates

import (
	"reflect"
	"strings"
	"testing"
)

func searchTemplate(t *testing.T, doc string) *Template {
	t.Helper()
	tpl, _, err := Parse([]byte(doc), ParseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tpl
}

func TestSearchWords(t *testing.T) {
	t.Parallel()
	got := SearchWords("  Commit\tMESSAGE 이메일을 ")
	if want := []string{"commit", "message", "이메일을"}; !reflect.DeepEqual(got, want) {
		t.Errorf("SearchWords = %q, want %q", got, want)
	}
}

// TestRank pins the weights: a whole name 100 on top of a name match 40,
// a whole tag 25 (10 for part of one), the description 15, the category 8,
// each section or message 3 plus its occurrences up to 5, each variable 2;
// a Korean word found only without its last syllables weighs 0.7 of that.
func TestRank(t *testing.T) {
	t.Parallel()
	email := searchTemplate(t, `{"metadata":{"name":"Korean_Business_Email","description":"비즈니스 이메일 작성","version":"1.0.0",
		"category":"writing","tags":["email","korean"]},
		"variables":[{"name":"recipient","type":"string","description":"받는 사람"}],
		"results":[{"name":"Body","content":"정중한 이메일을 작성합니다. Write the email to {{recipient}}."}]}`)
	review := searchTemplate(t, `{"metadata":{"name":"Code_Review","description":"Review code for bugs","version":"1.0.0",
		"category":"engineering","tags":["review","code-quality"]},
		"variables":[{"name":"code","type":"string","description":"The code to review","required":true}],
		"results":[{"name":"Ask","content":"Review this code: {{code}}. Look for bugs, then bugs again, bugs bugs bugs bugs."}]}`)
	chat := searchTemplate(t, `{"metadata":{"name":"Chat","description":"A conversation","version":"1.0.0"},
		"variables":[],"messages":[{"role":"user","content":"Say hello to the team"}]}`)
	tests := []struct {
		name  string
		t     *Template
		query string
		want  Match
	}{
		{"the whole name", review, "code_review",
			Match{Score: 100 + 40, Fields: []string{"name"}}},
		{"a name with spaces for underscores", review, "code review",
			// "code": name 40, part of a tag 10, description 15, section 3+2, variable 2;
			// "review": name 40, tag 25, description 15, section 3+1, variable 2
			Match{Score: 40 + 10 + 15 + 5 + 2 + 40 + 25 + 15 + 4 + 2, Fields: []string{"content", "description", "name", "tags", "variables"},
				Snippet: "Review this code: {{code}}. Look for bugs, then bugs again, bugs bugs bugs bugs."}},
		{"occurrences count up to five", review, "bugs",
			Match{Score: 15 + 3 + 5, Fields: []string{"content", "description"}, Snippet: "Review this code: {{code}}. Look for bugs, then bugs again, bugs bugs bugs bugs."}},
		{"the category", review, "engineering", Match{Score: 8, Fields: []string{"category"}}},
		{"every word must match", review, "code banana", Match{}},
		{"a Korean particle falls away", email, "이메일을",
			// 이메일을 is in the section as written: no stemming needed.
			Match{Score: 3 + 1, Fields: []string{"content"}, Snippet: "정중한 이메일을 작성합니다. Write the email to {{recipient}}."}},
		{"a Korean ending falls away, weighing less", email, "작성해줘",
			// 작성해줘 matches nothing; 작성해 nothing; 작성: description 15, section 3+1.
			Match{Score: stemmed(15 + 3 + 1), Fields: []string{"content", "description"}, Snippet: "정중한 이메일을 작성합니다. Write the email to {{recipient}}."}},
		{"no shorter than two syllables", email, "작",
			Match{Score: 15 + 3 + 1, Fields: []string{"content", "description"}, Snippet: "정중한 이메일을 작성합니다. Write the email to {{recipient}}."}},
		{"a Korean word with nothing left to drop", email, "회의", Match{}},
		{"a compound found by its first part", email, "메일함", Match{Score: stemmed(15 + 3 + 1), Fields: []string{"content", "description"},
			Snippet: "정중한 이메일을 작성합니다. Write the email to {{recipient}}."}},
		{"a variable's description", email, "받는", Match{Score: 2, Fields: []string{"variables"}}},
		{"a conversation's messages are content", chat, "hello",
			Match{Score: 3 + 1, Fields: []string{"content"}, Snippet: "Say hello to the team"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Rank(tt.t, SearchWords(tt.query))
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Rank(%q) = %+v, want %+v", tt.query, got, tt.want)
			}
		})
	}
}

func TestRankSnippet(t *testing.T) {
	t.Parallel()
	long := "Intro. " + strings.Repeat("filler words here ", 10) + "the NEEDLE sits here " + strings.Repeat("and more text after it ", 10)
	tpl := searchTemplate(t, `{"metadata":{"name":"Long","description":"d","version":"1.0.0"},"variables":[],
		"results":[{"name":"S","content":"`+long+`"}]}`)
	got := Rank(tpl, []string{"needle"}).Snippet
	// 60 characters before the word, 100 after it.
	want := "…e filler words here filler words here filler words here the NEEDLE sits here and more text after it and more text after it and more text after it and more text after…"
	if got != want {
		t.Errorf("snippet\n got %q\nwant %q", got, want)
	}
}

// stemmed is what a word's score becomes when it matched only without
// its last syllables (computed at run time, as Rank does).
func stemmed(score float64) float64 { return score * 0.7 }
