package github

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/flowyprompt/flowyprompt/internal/fault"
	"github.com/flowyprompt/flowyprompt/templates"
)

// Report is what `flowyprompt check` prints about the GitHub source.
type Report struct {
	Repository    string        `json:"repository"` // web URL, never with credentials
	APIURL        string        `json:"apiUrl"`
	Authenticated bool          `json:"authenticated"`
	Ref           string        `json:"ref"`              // as configured; "" is the default branch
	Branch        string        `json:"branch,omitempty"` // the default branch's name, when Ref is "" and GitHub answered
	Commit        string        `json:"commit,omitempty"`
	Path          string        `json:"path"`
	Valid         int           `json:"valid"`
	Flows         []string      `json:"flows"` // the valid flows' names
	Invalid       []InvalidFile `json:"invalid"`
	// MissingResources are files templates list in their resources that
	// the commit does not have (or that cannot be served): the templates
	// are served without them.
	MissingResources []MissingResource    `json:"missingResources"`
	Stale            *templates.Staleness `json:"stale,omitempty"`
	RateLimit        *RateLimit           `json:"rateLimit,omitempty"`
	Error            string               `json:"error,omitempty"` // why revalidation failed
	Fix              string               `json:"fix,omitempty"`   // how to fix that
}

// InvalidFile is a template file left out of the catalog.
type InvalidFile struct {
	Path   string `json:"path"`
	Code   string `json:"code"`
	Reason string `json:"reason"`
}

// MissingResource is a listed resource file the source cannot serve.
type MissingResource struct {
	Path    string `json:"path"`    // the template file
	Pointer string `json:"pointer"` // the entry, /resources/N
	Code    string `json:"code"`
	Reason  string `json:"reason"`
}

// Check revalidates now and reports the repository, the ref and its commit,
// how many templates are valid, which are not and why, and the rate limit.
// When revalidation fails, the report says what is known (a cached catalog,
// marked stale) and the error is returned with it.
//
// Check always asks GitHub, even when serving would not: a source pinned to
// a commit whose catalog is on disk revalidates nothing, and a check that
// passed on the cache alone would hide a revoked token or an unreachable
// API. So it reads the rate limit, which needs only a reachable API and a
// valid token (or none), and, when Refresh asked GitHub nothing (pinned,
// with a catalog already held), resolves the commit, which proves the
// repository and the commit are visible. Either failing fails the check.
// When Refresh already failed to reach GitHub, the rate limit is not asked
// for: it would only wait for the same network again.
func (s *Source) Check(ctx context.Context) (*Report, error) {
	r := &Report{
		Repository:       s.cfg.webURL,
		APIURL:           s.cfg.apiURL,
		Authenticated:    s.cfg.token != "",
		Ref:              s.cfg.ref,
		Path:             s.cfg.path,
		Flows:            []string{},
		Invalid:          []InvalidFile{},
		MissingResources: []MissingResource{},
	}
	s.mu.Lock()
	// Refresh of a pinned source holding a catalog returns it as it is;
	// without one, it loads it, listing the commit's tree (or, with the
	// listing on disk, fetching the missing blobs from the repository).
	asksNothing := s.pinned && s.current != nil
	s.mu.Unlock()
	cat, err := s.Refresh(ctx)
	if cat != nil {
		r.Commit = cat.Info().Revision
		r.Valid = cat.Len()
		for _, fe := range cat.Flows() {
			r.Flows = append(r.Flows, fe.Flow.Name)
		}
		r.Stale = cat.Stale()
		for _, inv := range cat.Invalid() {
			r.Invalid = append(r.Invalid, InvalidFile{Path: inv.Path, Code: fault.CodeOf(inv.Err), Reason: inv.Err.Error()})
		}
	}
	if cat != nil && err == nil {
		// From the commit's tree index: no file is downloaded.
		for _, e := range cat.Templates() {
			for i, res := range e.Template.Resources {
				if strings.Contains(res, "://") {
					continue
				}
				if cerr := s.CheckResource(ctx, res); cerr != nil {
					r.MissingResources = append(r.MissingResources, MissingResource{Path: e.Path, Pointer: fmt.Sprintf("/resources/%d", i),
						Code: fault.CodeOf(cerr), Reason: cerr.Error()})
				}
			}
		}
	}
	if err == nil && s.cfg.ref == "" {
		// The source follows HEAD and never needs the default branch's
		// name; the report names it, at one request of check's own.
		r.Branch, err = s.client.DefaultBranch(ctx)
	}
	if fault.CodeOf(err) != fault.NetworkError {
		// The rate_limit endpoint is never answered from go-github's
		// memory and does not count against the limit.
		rl, rlErr := s.client.RateLimit(ctx)
		if rlErr == nil {
			r.RateLimit = &rl
		}
		if err == nil {
			err = rlErr
		}
	}
	if err == nil && asksNothing {
		_, _, _, err = s.client.ResolveRef(ctx, s.cfg.ref, "")
	}
	if err != nil {
		r.Error = err.Error()
		if f := fault.As(err); f != nil {
			r.Fix = f.How
		}
	}
	return r, err
}

// String renders the report for a terminal.
func (r *Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "repository: %s", r.Repository)
	if r.APIURL != DefaultAPIURL {
		fmt.Fprintf(&b, " (API %s)", r.APIURL)
	}
	auth := "anonymous"
	if r.Authenticated {
		auth = "with token"
	}
	fmt.Fprintf(&b, ", %s\n", auth)
	ref := r.Ref
	if ref == "" {
		ref = "default branch"
		if r.Branch != "" {
			ref += " " + r.Branch
		}
	}
	commit := r.Commit
	if commit == "" {
		commit = "unknown"
	}
	fmt.Fprintf(&b, "ref:        %s -> %s\n", ref, commit)
	folder := r.Path
	if folder == "" {
		folder = "(repository root)"
	}
	fmt.Fprintf(&b, "folder:     %s\n", folder)
	fmt.Fprintf(&b, "templates:  %d valid, %d invalid\n", r.Valid, len(r.Invalid))
	for _, inv := range r.Invalid {
		fmt.Fprintf(&b, "  - %s [%s]: %s\n", inv.Path, inv.Code, inv.Reason)
	}
	if len(r.Flows) > 0 {
		fmt.Fprintf(&b, "flows:      %d valid: %s\n", len(r.Flows), strings.Join(r.Flows, ", "))
	}
	if len(r.MissingResources) > 0 {
		fmt.Fprintf(&b, "resources:  %d listed file(s) cannot be served (the templates are served without them)\n", len(r.MissingResources))
		for _, m := range r.MissingResources {
			fmt.Fprintf(&b, "  - %s: %s [%s]: %s\n", m.Path, m.Pointer, m.Code, m.Reason)
		}
	}
	if r.RateLimit != nil {
		fmt.Fprintf(&b, "rate limit: %d of %d requests left, resets %s\n",
			r.RateLimit.Remaining, r.RateLimit.Limit, r.RateLimit.Reset.UTC().Format(time.RFC3339))
	}
	if r.Stale != nil {
		fmt.Fprintf(&b, "stale:      serving cached templates since %s (%s)\n", r.Stale.Since.UTC().Format(time.RFC3339), r.Stale.Code)
	}
	if r.Error != "" {
		fmt.Fprintf(&b, "error:      %s\n", r.Error)
	}
	if r.Fix != "" {
		fmt.Fprintf(&b, "fix:        %s\n", r.Fix)
	}
	return b.String()
}
