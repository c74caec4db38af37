// Package github serves a team's prompt templates from a GitHub repository:
// a thin client over go-github (Client) and a templates.Source with a
// revalidating, persistent cache (Source).
//
// # Configuration
//
//	GITHUB_REPO_URL        https://github.com/OWNER/REPO (or OWNER/REPO; Enterprise: https://HOST/OWNER/REPO)
//	GITHUB_PAT             token; optional for public repositories
//	GITHUB_REF             branch, tag or full commit SHA; default: the repository's default branch
//	GITHUB_TEMPLATES_PATH  folder of *.json templates (subfolders included); default templates
//	GITHUB_API_URL         default https://api.github.com; for GitHub Enterprise Server give
//	                       https://HOST/api/v3 (derived from an Enterprise GITHUB_REPO_URL when unset).
//	                       The URL is used as given: nothing is appended to it.
//	CACHE_TTL_MS           how long a checked commit is trusted; default 15 minutes
//	MAX_FILE_SIZE          larger files are refused without being downloaded; default 102400
//
// The token needs read access to the repository's contents (fine-grained:
// contents:read, plus contents:write and pull_requests:write to propose
// templates; classic: the repo scope for a private repository). A token with an unknown prefix is used
// with a warning. The token never appears in logs, errors, results or the
// disk cache: every error passes through one mapping function that redacts
// it, strips query strings and credentials from URLs, and masks anything
// shaped like a GitHub token; a URL setting with credentials in it is
// refused. It is sent to the API's scheme and host only: a redirect
// elsewhere is not followed, and plain http is accepted for a loopback API
// URL alone.
//
// # Saves are proposals
//
// A save (SaveTemplate, Propose) never writes the served branch: it
// commits on a branch flowyprompt/NAMES-ID made from the served commit and
// opens a pull request against the served ref, or updates the open one of
// that branch; ID is a digest of who proposes (the signed-in member, else
// the token), so each member has one pull request per template. See
// Propose, and ProposedFile to read one back.
//
// # Sync: one request per TTL instead of one per template
//
// The seed revalidated each template with its own ETag: a hundred templates,
// a hundred requests every 15 minutes. Source asks one question instead:
//
//  1. After the TTL, resolve the ref to a commit with a conditional request
//     (GET repos/O/R/commits/REF, Accept: application/vnd.github.sha,
//     If-None-Match). A 304 costs nothing against the rate limit and means
//     nothing changed: the TTL starts again. A ref that is a full commit
//     SHA is never revalidated. With GITHUB_REF unset, REF is HEAD: the
//     default branch, whatever it is called today, so a renamed default
//     branch costs nothing and another branch made the default is noticed
//     like a push.
//  2. On a new commit, list its tree once (git/trees/SHA?recursive=1): every
//     template path with its blob SHA and size. Files over MAX_FILE_SIZE are
//     reported as TEMPLATE_TOO_LARGE from the size alone. The folder's other
//     (non-hidden) files are kept too, path, SHA and size only, for
//     ReadResource: a file a template lists in its resources is downloaded
//     when first read, from that commit, and cached by blob SHA like a
//     template.
//  3. Fetch only the blobs not already cached. A blob SHA names its bytes
//     forever, so a blob is never fetched twice. Up to eight missing blobs
//     are fetched one request each, all at once; more come from one
//     archive of the commit (GET repos/O/R/tarball/SHA: one API request,
//     answered with a redirect to a download host whose URL carries a
//     temporary token; the download is fetched without our token, is not
//     an API request, and its URL never appears in logs or errors). The
//     archive is read as it streams, bounded by the size the tree listing
//     implies; only the wanted files are kept, each checked against its
//     blob SHA; a file the archive lacks or holds differently
//     (.gitattributes export-ignore, export-subst) is fetched on its own,
//     and so is every file if the download fails (with a warning). GitHub
//     refusing the archive request itself (token, rate limit, outage) fails
//     the sync like any other request. The archive is skipped when the
//     repository is much larger than the files it saves (see useArchive).
//     Resources stay lazy.
//  4. Build a new catalog (templates.Build) and hand it to Watch callbacks;
//     templates.Library swaps it in and notifies clients.
//
// Costs measured against internal/fakegithub: a cold start of more than
// eight templates is 3 requests, 2,000 templates of 4 KB included (on the
// default branch too: HEAD needs no lookup), plus one archive download that
// is not an API request; of N ≤ 8 templates, N+2 requests; an unchanged
// revalidation is 1 request answered 304; one changed template is 3
// requests; a restart with the disk cache is 0 requests within the TTL of
// the last check and 1 (a 304) after it.
//
// # Versions
//
// Source implements templates.History: FileHistory lists the commits that
// changed a template's file (one page of 30, from the commit served) with
// one conditional request keyed by path and commit, so asking again is a
// 304 until a push; FileAt reads the file at a commit (or tag) through the
// contents API and keeps it by blob SHA forever, apart from the catalog's
// blobs, which a sync prunes. A history names the metadata.version of the
// commits already read and never reads one just to name it.
//
// Requests never wait for GitHub once a catalog exists: Load returns the
// current catalog at once and revalidates in the background (one at a time;
// concurrent callers share it). When GitHub fails (network, 5xx, rate limit,
// refused token) the catalog keeps being served, marked stale
// (templates.Staleness: since when, why, the error code, when to retry), a
// warning is logged once per outage, and automatic retries wait for the rate
// limit's reset or 30 seconds (one TTL, if that is shorter). Without a
// catalog, Load returns the error, a *fault.Error with what / why / how and
// one of the codes
// GITHUB_AUTH_FAILED, GITHUB_RATE_LIMITED, GITHUB_NOT_FOUND or
// NETWORK_ERROR; the sentinels (ErrUnauthorized, ErrRateLimited, ErrNotFound,
// ErrUnavailable, ErrConflict) match it with errors.Is.
//
// # Disk cache
//
// The ref's commit and ETag, the tree listing and the blobs in use (the
// resources read so far included) are saved to
// os.UserCacheDir()/flowyprompt/github/HASH.json (one file per API URL,
// repository, ref and folder; mode 0600, written atomically, at most once
// per revalidation and only when something changed), so a restart
// (Claude Desktop restarts servers often) serves templates before any
// request, and works with GitHub unreachable. A corrupt file is ignored with
// a warning. Cached ETags are only sent with the credentials they were
// obtained with, because GitHub's answers vary with Authorization.
//
// # Cluster
//
// With Config.Shared (serve --nats: a JetStream key-value bucket, see
// internal/cluster), the replicas serving the same API URL, repository, ref
// and folder share one catalog and one revalidation per TTL. Under a
// namespace hashed from those four, the store holds the state of the last
// check (commit, ETag, the tokenID the ETag belongs to, checkedAt,
// checkedBy, after a failure its code, reason and retry time, and a claim),
// the commit's listing (gzipped) and the blobs up to MAX_FILE_SIZE, keyed by
// SHA. Never the token.
//
// When a check is due, a replica reads the state. A check made by any
// replica within the TTL is adopted: its commit's catalog is built from the
// shared listing and blobs, and only what the store lacks is fetched from
// GitHub (through the same blob path as alone). A failed check whose retry
// time has not come is adopted too: the catalog is served stale and GitHub
// is not asked, so an outage is not hammered by every replica. Otherwise
// the replica claims the check with compare-and-set over the revision it
// read; the claimer asks GitHub (with the shared ETag when its credentials
// match), shares the listing and blobs it fetched, then publishes the new
// state with compare-and-set over its claim. A replica that loses the race
// waits for the state to change; so does a first Load, instead of asking
// GitHub too. The claimer renews its claim every 5 seconds while its check
// runs; a claim not renewed for 15 seconds was left by a dead replica and
// is taken over: claims expire by their timestamp, not by a store TTL, so
// a NATS 2.9 server is enough.
//
// Every replica watches the state: a commit published by any of them is
// adopted at once and its Watch callbacks fire, so templates.Library tells
// every replica's clients (list_changed); failures and recoveries arrive the
// same way.
//
// Costs for N replicas, measured against internal/fakegithub with the
// 150-file library: a cold start of all N is one replica's cost (148
// requests, not N × 148); an unchanged revalidation is one 304 per TTL for
// the cluster; a change is 3 requests for the cluster; a replica joining a
// warm cluster, or restarting on its disk cache, costs nothing within the
// TTL of the cluster's last check.
//
// When the store does not answer (NATS down: every call fails at once or
// within two seconds), each replica revalidates alone as above and logs it
// once; the disk cache stays per replica. When NATS is back the next check
// goes through the cluster again, and the watch is re-armed.
package github
