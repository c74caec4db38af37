package templates

import (
	"errors"
	"testing"
)

func TestRelPath(t *testing.T) {
	tests := []struct {
		in      string
		want    string
		wantErr error
	}{
		{in: "guide.md", want: "guide.md"},
		{in: "docs/guide.md", want: "docs/guide.md"},
		{in: "./docs//guide.md", want: "docs/guide.md"},
		{in: `docs\guide.md`, want: "docs/guide.md"},
		{in: "docs/../guide.md", want: "guide.md"},
		{in: "", wantErr: ErrPathEmpty},
		{in: ".", wantErr: ErrPathEmpty},
		{in: "docs/..", wantErr: ErrPathEmpty},
		{in: "/etc/passwd", wantErr: ErrPathOutside},
		{in: `\etc\passwd`, wantErr: ErrPathOutside},
		{in: "/..", wantErr: ErrPathOutside},
		{in: "..", wantErr: ErrPathOutside},
		{in: "../up.md", wantErr: ErrPathOutside},
		{in: `..\up.md`, wantErr: ErrPathOutside},
		{in: "docs/../../up.md", wantErr: ErrPathOutside},
		{in: "..foo/x.md", wantErr: ErrPathHidden, want: "..foo/x.md"}, // a folder named "..foo" is inside, but hidden
		{in: ".env", wantErr: ErrPathHidden, want: ".env"},
		{in: "docs/.git/config", wantErr: ErrPathHidden, want: "docs/.git/config"},
		{in: ".github/prompts", wantErr: ErrPathHidden, want: ".github/prompts"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := RelPath(tt.in)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
				t.Fatalf("RelPath(%q) error = %v, want %v", tt.in, err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("RelPath(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestHidden(t *testing.T) {
	for p, want := range map[string]bool{
		"a.json": false, "team/a.json": false, "a.b/c.json": false,
		".a.json": true, "team/.drafts/a.json": true, ".git": true, "x/.": true,
	} {
		if got := Hidden(p); got != want {
			t.Errorf("Hidden(%q) = %v, want %v", p, got, want)
		}
	}
}
