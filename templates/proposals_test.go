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

func (s *proposingSource) ProposedFile(_ context.Context, number int, p string) ([]byte, error) {
	s.asked = append(s.asked, p)
	data, ok := s.pulls[number][p]
	if !ok {
		return nil, &fault.Error{Code: fault.GitHubNotFound, What: "no such file in the pull request"}
	}
	return []byte(data), nil
}

// TestCompositeProposedFile: a Composite reads a pull request's file from
// the member its path's namespace names, with the namespace taken off; a
// member without pull requests, an unknown namespace and a bare path are
// VERSIONS_UNSUPPORTED, naming the member.
func TestCompositeProposedFile(t *testing.T) {
	team := &proposingSource{pulls: map[int]map[string]string{12: {"Greeting.json": "proposed"}}}
	c, err := NewComposite([]Member{{"team", team}, {"local", &fakeSource{}}}, quiet)
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.ProposedFile(t.Context(), 12, "team/Greeting.json")
	if err != nil || string(got) != "proposed" {
		t.Fatalf("team/Greeting.json in #12: %q, %v", got, err)
	}
	if len(team.asked) != 1 || team.asked[0] != "Greeting.json" {
		t.Errorf("the member was asked for %v, want [Greeting.json]", team.asked)
	}
	if _, err := c.ProposedFile(t.Context(), 13, "team/Greeting.json"); fault.CodeOf(err) != fault.GitHubNotFound {
		t.Errorf("a pull request the member lacks: %v, want its GITHUB_NOT_FOUND", err)
	}
	for _, tt := range []struct{ path, want string }{
		{"local/Greeting.json", "fake source local"},
		{"other/Greeting.json", "no source of this server"},
		{"team", "no source of this server"},
	} {
		_, err := c.ProposedFile(t.Context(), 12, tt.path)
		if fault.CodeOf(err) != fault.VersionsUnsupported || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "#12") {
			t.Errorf("%s: %v, want VERSIONS_UNSUPPORTED naming %q and #12", tt.path, err, tt.want)
		}
	}
}
