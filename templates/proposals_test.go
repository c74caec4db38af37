package templates

import (
	"context"
	"strings"
	"testing"

	"github.com/flowyprompt/flowyprompt/internal/fault"
)

// proposingSource is a fakeSource with pull requests: files by number and
// path.
type proposingSource struct {
	fakeSource
	pulls map[int]map[string]string
	asked []string // the paths asked for, as the member sees them
}

func (s *proposingSource) ProposedFile(_ context.Context, number int, name string) ([]byte, string, error) {
	s.asked = append(s.asked, name)
	data, ok := s.pulls[number][name]
	if !ok {
		return nil, "", &fault.Error{Code: fault.GitHubNotFound, What: "no such template in the pull request"}
	}
	return []byte(data), name + ".json", nil
}

// TestCompositeProposedFile: a Composite reads a pull request's file from
// the member its path's namespace names, with the namespace taken off; a
// member without pull requests, an unknown namespace and a bare path are
// VERSIONS_UNSUPPORTED, naming the member.
func TestCompositeProposedFile(t *testing.T) {
	team := &proposingSource{pulls: map[int]map[string]string{12: {"Greeting": "proposed"}}}
	c, err := NewComposite([]Member{{"team", team}, {"local", &fakeSource{}}}, quiet)
	if err != nil {
		t.Fatal(err)
	}
	got, p, err := c.ProposedFile(t.Context(), 12, "team/Greeting")
	if err != nil || string(got) != "proposed" || p != "team/Greeting.json" {
		t.Fatalf("team/Greeting in #12: %q at %q, %v; want \"proposed\" at team/Greeting.json", got, p, err)
	}
	if len(team.asked) != 1 || team.asked[0] != "Greeting" {
		t.Errorf("the member was asked for %v, want [Greeting]", team.asked)
	}
	if _, _, err := c.ProposedFile(t.Context(), 13, "team/Greeting"); fault.CodeOf(err) != fault.GitHubNotFound {
		t.Errorf("a pull request the member lacks: %v, want its GITHUB_NOT_FOUND", err)
	}
	for _, tt := range []struct{ path, want string }{
		{"local/Greeting", "fake source local"},
		{"other/Greeting", "no source of this server"},
		{"team", "no source of this server"},
	} {
		_, _, err := c.ProposedFile(t.Context(), 12, tt.path)
		if fault.CodeOf(err) != fault.VersionsUnsupported || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "#12") {
			t.Errorf("%s: %v, want VERSIONS_UNSUPPORTED naming %q and #12", tt.path, err, tt.want)
		}
	}
}
