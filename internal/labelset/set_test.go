package labelset_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/flowyprompt/flowyprompt/internal/labelset"
	"github.com/flowyprompt/flowyprompt/templates"
)

// TestSet: a label's library is opened on first use, once however many
// ask at once; a failed opening is tried again by the next call; Opened
// hears of each library once, the default's among them.
func TestSet(t *testing.T) {
	def := templates.NewLibrary(templates.Embedded(), nil)
	var opens atomic.Int32
	release := make(chan struct{})
	fail := true
	var failMu sync.Mutex
	set := labelset.NewSet([]string{"production", "staging", "canary"}, def, func(ctx context.Context, name string) (*templates.Library, error) {
		opens.Add(1)
		if name == "canary" {
			failMu.Lock()
			defer failMu.Unlock()
			if fail {
				fail = false
				return nil, errors.New("ref canary not found")
			}
		} else {
			<-release
		}
		lib := templates.NewLibrary(templates.Embedded(), nil)
		return lib, lib.Load(ctx)
	}, nil)
	defer set.Close()

	heard := map[string]int{}
	var heardMu sync.Mutex
	stop := set.Opened(func(name string, _ *templates.Library) {
		heardMu.Lock()
		heard[name]++
		heardMu.Unlock()
	})
	defer stop()

	if lib, err := set.Library(context.Background(), "production"); err != nil || lib != def {
		t.Fatalf("default: %v, %v", lib, err)
	}
	const callers = 8
	libs := make([]*templates.Library, callers)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() {
			lib, err := set.Library(context.Background(), "staging")
			if err != nil {
				t.Error(err)
			}
			libs[i] = lib
		})
	}
	close(release)
	wg.Wait()
	for _, lib := range libs {
		if lib == nil || lib != libs[0] || lib == def {
			t.Fatalf("callers got different libraries: %v", libs)
		}
	}
	if _, err := set.Library(context.Background(), "canary"); err == nil || err.Error() != "ref canary not found" {
		t.Errorf("first canary: %v", err)
	}
	if _, err := set.Library(context.Background(), "canary"); err != nil {
		t.Errorf("canary again: %v", err)
	}
	if _, err := set.Library(context.Background(), "nightly"); err == nil {
		t.Error("an unknown label was opened")
	}
	if n := opens.Load(); n != 3 {
		t.Errorf("opened %d times, want 3 (staging once, canary twice)", n)
	}
	heardMu.Lock()
	defer heardMu.Unlock()
	if heard["production"] != 1 || heard["staging"] != 1 || heard["canary"] != 1 || len(heard) != 3 {
		t.Errorf("Opened heard %v, want each label once", heard)
	}
}

// TestSetClosed: a set that is closed opens nothing more.
func TestSetClosed(t *testing.T) {
	def := templates.NewLibrary(templates.Embedded(), nil)
	set := labelset.NewSet([]string{"production", "staging"}, def, func(context.Context, string) (*templates.Library, error) {
		t.Error("opened after Close")
		return nil, errors.New("no")
	}, nil)
	set.Close()
	if _, err := set.Library(context.Background(), "staging"); err == nil {
		t.Error("a closed set opened a library")
	}
}
