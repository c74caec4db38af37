// Package audit writes the audit log of prompt usage: one structured line
// at info level for every prompts/get and tools/call, saying which
// template (and which version of it, from which source) a client used,
// who asked (the member of the request's context, auth.MemberOf, in both
// eras: the transports deliver every request with the values of the HTTP
// request that carried it, a forwarded one with the member it carried),
// how long it took and how it ended.
//
// It sees requests through the engine's one hook, mcp.Observer. What only
// the application knows, the template and its version, it adds with Note
// on the handler's context: the Observer puts a record there before the
// handler runs and, once the handler returned, hands the filled record to
// the log's own goroutine, which formats and writes the line (writer.go).
// A request never waits for its line. The line never holds argument
// values or rendered text, only names, versions and ids.
package audit

import (
	"context"
	"log/slog"
	"strconv"
	"time"

	"github.com/flowyprompt/flowyprompt/internal/auth"
	"github.com/flowyprompt/flowyprompt/internal/logid"
	"github.com/flowyprompt/flowyprompt/mcp"
)

// Usage is what the application tells the audit log about the template a
// request used.
type Usage struct {
	Template string // the template's name
	Version  string // its metadata.version
	Source   string // the catalog's source kind: embedded, directory, github
	Revision string // the source's commit, when known
}

type key struct{}

// record is one request's line: the usage Note fills while the handler
// runs, then what the hook knows once it returned. From then on it belongs
// to the log's goroutine.
type record struct {
	usage Usage
	tool  bool // tools/call; else prompts/get
	info  mcp.RequestInfo
	end   time.Time // the line's time
	dur   time.Duration
	out   mcp.Outcome
	// member is who asked, when the request carried a member's access
	// token (auth.WithMember): never the token itself.
	member *auth.Member
}

// Note adds u to the audit line of the request ctx belongs to. Without an
// audit log (or outside a prompts/get or tools/call) it does nothing.
func Note(ctx context.Context, u Usage) {
	if r, ok := ctx.Value(key{}).(*record); ok {
		r.usage = u
	}
}

var _ mcp.Observer = (*Log)(nil)

// StartRequest implements mcp.Observer.
func (l *Log) StartRequest(ctx context.Context, info *mcp.RequestInfo) (context.Context, func(mcp.Outcome)) {
	var tool bool
	switch info.Method {
	case mcp.MethodPromptsGet:
	case mcp.MethodToolsCall:
		tool = true
	default:
		return ctx, func(mcp.Outcome) {}
	}
	if !l.h.Enabled(ctx, slog.LevelInfo) {
		return ctx, func(mcp.Outcome) {}
	}
	rec := &record{tool: tool, member: auth.MemberOf(ctx)}
	ctx = context.WithValue(ctx, key{}, rec)
	start := time.Now()
	return ctx, func(o mcp.Outcome) {
		rec.end = time.Now()
		rec.dur = rec.end.Sub(start)
		// The error itself is not logged: holding it would keep what it
		// refers to alive until the line is written.
		rec.info, rec.out = *info, mcp.Outcome{Code: o.Code, ToolError: o.ToolError}
		l.enqueue(rec)
	}
}

// SessionEnded implements mcp.Observer; sessions are not audited.
func (*Log) SessionEnded(mcp.SessionInfo) {}

// line is rec as a log record, with the fields in the order
// docs/observability.md shows them; attrs is room for them, reused from
// line to line (the record copies them).
func (rec *record) line(attrs []slog.Attr) slog.Record {
	msg, nameKey := "prompt used", "prompt"
	if rec.tool {
		msg, nameKey = "tool used", "tool"
	}
	info := &rec.info
	era := "2025"
	if info.Modern {
		era = "2026"
	}
	attrs = append(attrs[:0], slog.String(nameKey, info.Target))
	if u := rec.usage; u.Template != "" {
		attrs = append(attrs, slog.String("template", u.Template), slog.String("template_version", u.Version),
			slog.String("source", u.Source))
		if u.Revision != "" {
			attrs = append(attrs, slog.String("source_revision", u.Revision))
		}
	}
	if m := rec.member; m != nil {
		attrs = append(attrs, slog.String("member", m.Subject))
		if m.Email != "" {
			attrs = append(attrs, slog.String("member_email", m.Email))
		}
	}
	attrs = append(attrs, slog.String("client_name", info.Client.Name), slog.String("client_version", info.Client.Version),
		slog.String("era", era), slog.String("protocol_version", info.ProtocolVersion))
	if info.SessionID != "" {
		attrs = append(attrs, logid.Session(info.SessionID))
	}
	attrs = append(attrs, slog.String("request_id", info.ID), slog.Duration("duration", rec.dur))
	switch o := rec.out; {
	case o.Code != 0:
		attrs = append(attrs, slog.String("outcome", "error"), slog.String("error_code", strconv.FormatInt(o.Code, 10)))
	case o.ToolError:
		attrs = append(attrs, slog.String("outcome", "tool_error"))
	default:
		attrs = append(attrs, slog.String("outcome", "ok"))
	}
	r := slog.NewRecord(rec.end, slog.LevelInfo, msg, 0)
	r.AddAttrs(attrs...)
	return r
}
