package templates

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/flowyprompt/flowyprompt/internal/fault"
)

// savingSource is a fakeSource that saves: it records what it was given.
type savingSource struct {
	fakeSource
	saved []string // name, data and message of each save
}

func (s *savingSource) SaveTemplate(_ context.Context, name string, data []byte, message string) (Saved, error) {
	s.saved = append(s.saved, name+"|"+string(data)+"|"+message)
	return Saved{Location: "/folder/" + name + ".json"}, nil
}

// TestCompositeSaveTemplate: a Composite saves NAMESPACE/NAME to the
// member the namespace names, as its bare NAME with the data unchanged; a
// member that cannot save is WRITE_DISABLED naming it, an unknown
// namespace or a bare name INVALID_ARGUMENT, each naming the members that
// can save.
func TestCompositeSaveTemplate(t *testing.T) {
	team, ops := &savingSource{}, &savingSource{}
	c, err := NewComposite([]Member{{"team", team}, {"examples", &fakeSource{}}, {"ops", ops}}, quiet)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Saves(); !slices.Equal(got, []string{"team", "ops"}) {
		t.Errorf("Saves() = %v, want [team ops]", got)
	}
	for _, tt := range []struct {
		name      string
		wantTeam  []string
		wantOps   []string
		wantCode  string
		wantInErr []string
	}{
		{name: "team/Greeting", wantTeam: []string{"Greeting|{}|why"}},
		{name: "ops/Greeting", wantOps: []string{"Greeting|{}|why"}},
		{name: "examples/Greeting", wantCode: fault.WriteDisabled, wantInErr: []string{"source examples", "team, ops"}},
		{name: "other/Greeting", wantCode: fault.InvalidArgument, wantInErr: []string{`"other"`, "team, examples, ops", "team, ops"}},
		{name: "Greeting", wantCode: fault.InvalidArgument, wantInErr: []string{"NAMESPACE/NAME", "team, ops"}},
		{name: "team/", wantCode: fault.InvalidArgument},
	} {
		t.Run(tt.name, func(t *testing.T) {
			team.saved, ops.saved = nil, nil
			saved, err := c.SaveTemplate(t.Context(), tt.name, []byte("{}"), "why")
			if tt.wantCode != "" {
				if fault.CodeOf(err) != tt.wantCode {
					t.Fatalf("err = %v, want %s", err, tt.wantCode)
				}
				var msg strings.Builder
				f := fault.As(err)
				msg.WriteString(f.What + " " + f.Why + " " + f.How)
				for _, w := range tt.wantInErr {
					if !strings.Contains(msg.String(), w) {
						t.Errorf("error %q does not name %q", msg.String(), w)
					}
				}
				if len(team.saved)+len(ops.saved) != 0 {
					t.Errorf("a refused save reached a member: team %v, ops %v", team.saved, ops.saved)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(team.saved, tt.wantTeam) || !slices.Equal(ops.saved, tt.wantOps) {
				t.Errorf("team saved %v, ops %v; want %v and %v", team.saved, ops.saved, tt.wantTeam, tt.wantOps)
			}
			if saved.Location != "/folder/Greeting.json" {
				t.Errorf("Location = %q, want the member's", saved.Location)
			}
		})
	}
	if err := c.CanSave("ops"); err != nil {
		t.Errorf("CanSave(ops) = %v", err)
	}
	if err := c.CanSave("examples"); fault.CodeOf(err) != fault.WriteDisabled {
		t.Errorf("CanSave(examples) = %v, want WRITE_DISABLED", err)
	}
}

// TestCompositeSavesNone: a Composite of read-only members saves nowhere,
// and says how to serve a source that can.
func TestCompositeSavesNone(t *testing.T) {
	c, err := NewComposite([]Member{{"examples", &fakeSource{}}}, quiet)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Saves(); len(got) != 0 {
		t.Errorf("Saves() = %v, want none", got)
	}
	err = c.CanSave("examples")
	if f := fault.As(err); f == nil || f.Code != fault.WriteDisabled || !strings.Contains(f.How, "--source") {
		t.Errorf("CanSave(examples) = %v, want WRITE_DISABLED saying to serve a --source that can", err)
	}
}
