package github

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"

	gh "github.com/google/go-github/v66/github"
)

// pullRequest is what a proposal needs of a pull request.
type pullRequest struct {
	number  int
	url     string // its web page
	headSHA string // the commit its branch points at
	head    string // its branch
}

func toPull(p *gh.PullRequest) *pullRequest {
	return &pullRequest{number: p.GetNumber(), url: p.GetHTMLURL(), headSHA: strings.ToLower(p.GetHead().GetSHA()), head: p.GetHead().GetRef()}
}

// openPull returns the open pull request from branch, nil when there is
// none, in one request (pulls?head=OWNER:BRANCH&state=open).
func (c *Client) openPull(ctx context.Context, branch string) (*pullRequest, error) {
	o := op{what: "look for an open pull request from " + branch + " in " + c.repoName(), target: targetPropose, name: branch}
	list, resp, err := c.gh.PullRequests.List(ctx, c.owner, c.repo, &gh.PullRequestListOptions{State: "open", Head: c.owner + ":" + branch})
	if err := c.mapError(o, resp, err); err != nil {
		return nil, err
	}
	for _, p := range list {
		if p.GetHead().GetRef() == branch {
			return toPull(p), nil
		}
	}
	return nil, nil
}

// pull reads pull request number.
func (c *Client) pull(ctx context.Context, number int) (*pullRequest, error) {
	o := op{what: "read pull request #" + strconv.Itoa(number) + " of " + c.repoName(), target: targetPull, name: strconv.Itoa(number)}
	p, resp, err := c.gh.PullRequests.Get(ctx, c.owner, c.repo, number)
	if err := c.mapError(o, resp, err); err != nil {
		return nil, err
	}
	return toPull(p), nil
}

// startBranch points branch at commit sha: a new branch, or, when one of
// that name is left from an earlier proposal that is no longer open, that
// branch moved (forced) to sha. Its old commits stay reachable from the
// closed pull request that had them.
func (c *Client) startBranch(ctx context.Context, branch, sha string) error {
	o := op{what: "create branch " + branch + " in " + c.repoName(), target: targetPropose, name: branch}
	ref := &gh.Reference{Ref: gh.String("refs/heads/" + branch), Object: &gh.GitObject{SHA: gh.String(sha)}}
	_, resp, err := c.gh.Git.CreateRef(ctx, c.owner, c.repo, ref)
	var er *gh.ErrorResponse
	if resp != nil && resp.StatusCode == http.StatusUnprocessableEntity && errors.As(err, &er) && strings.Contains(er.Message, "already exists") {
		o.what = "move branch " + branch + " of " + c.repoName()
		_, resp, err = c.gh.Git.UpdateRef(ctx, c.owner, c.repo, ref, true)
	}
	return c.mapError(o, resp, err)
}

// createPull opens a pull request from branch into base.
func (c *Client) createPull(ctx context.Context, title, branch, base, body string) (*pullRequest, error) {
	o := op{what: "open a pull request from " + branch + " into " + base + " of " + c.repoName(), target: targetPropose, name: base}
	p, resp, err := c.gh.PullRequests.Create(ctx, c.owner, c.repo, &gh.NewPullRequest{
		Title: gh.String(title), Head: gh.String(branch), Base: gh.String(base), Body: gh.String(body)})
	if err := c.mapError(o, resp, err); err != nil {
		return nil, err
	}
	return toPull(p), nil
}

// editPull replaces pull request number's title and body.
func (c *Client) editPull(ctx context.Context, number int, title, body string) (*pullRequest, error) {
	o := op{what: "update pull request #" + strconv.Itoa(number) + " of " + c.repoName(), target: targetPropose, name: strconv.Itoa(number)}
	p, resp, err := c.gh.PullRequests.Edit(ctx, c.owner, c.repo, number, &gh.PullRequest{Title: gh.String(title), Body: gh.String(body)})
	if err := c.mapError(o, resp, err); err != nil {
		return nil, err
	}
	return toPull(p), nil
}
