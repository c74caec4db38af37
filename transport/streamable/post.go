package streamable

import (
	"errors"
	"net/http"

	"github.com/flowyprompt/flowyprompt/internal/fault"
	"github.com/flowyprompt/flowyprompt/internal/logid"
	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/flowyprompt/flowyprompt/transport/internal/clientid"
	"github.com/flowyprompt/flowyprompt/transport/internal/httpx"
)

// A POST /mcp, in the order it runs: the checks that need no body, the
// session it names (looked up before a byte of the body is read), the
// body, read and decoded (mcp.ParseInbound), then one of the two eras'
// ways in: a request naming revision 2026-07-28 with no session is
// checked against its mirrored headers (headers.go) and run on its own
// (mcp.Engine.Prepare, mcp.Exchange.Run); anything else is delivered to
// its session (mcp.Session.DeliverInbound), initialize opening one.
// Either way the POST ends in answer (answer.go), the one answering path.

func (h *Handler) post(w http.ResponseWriter, r *http.Request) {
	if !httpx.JSONContentType(r) {
		httpx.UnsupportedMediaType(w, r)
		return
	}
	acceptJSON, acceptEvents := httpx.Accepts(r)
	if !acceptJSON && !acceptEvents {
		httpx.WriteError(w, r, http.StatusNotAcceptable, &fault.Error{Code: mcp.CodeNotAcceptable,
			What: "the Accept header allows neither JSON nor an event stream",
			Why:  "answers are application/json or text/event-stream",
			How:  "send Accept: application/json, text/event-stream"})
		return
	}
	var ss *session
	if r.Header.Get(HeaderSession) != "" {
		if ss = h.session(w, r); ss == nil {
			return
		}
	}
	var session string
	if ss != nil {
		session = ss.id
	}
	body, lease, ok := h.opts.ReadHeld(w, r, session)
	if !ok {
		return
	}
	// The request the message becomes keeps the lease until it has run;
	// anything else lets go of it when the POST is answered.
	defer lease.Release()
	x := &exchange{ss: ss, acceptsJSON: acceptJSON, preferJSON: acceptJSON && !(h.opts.PreferStreams && acceptEvents)}
	in, err := mcp.ParseInbound(body)
	if err != nil {
		var fe *mcp.FrameError
		switch {
		case ss == nil:
			httpx.WriteError(w, r, http.StatusBadRequest, err)
		case errors.As(err, &fe) && fe.NotJSON():
			httpx.WriteError(w, r, http.StatusBadRequest, httpx.ParseError())
		default:
			// JSON, but no message: answered as the session's requests are.
			h.writeJSON(w, http.StatusOK, h.e.ErrorResponse(fe.ID, err, false))
		}
		return
	}
	in.Keep(lease)
	if h.opts.Admit != nil && !h.opts.Admit(w, r, in) {
		return
	}
	if ss == nil {
		v := r.Header.Get(HeaderProtocolVersion)
		if v != "" && !mcp.IsSupportedVersion(v) || in.Modern() && v == "" {
			// The 2026-07-28 era (an unknown revision included, to be told
			// which ones are served; a message without its header is
			// refused as that era says).
			h.modern(w, r, in, x, acceptEvents)
			return
		}
		if in.Method() != mcp.MethodInitialize {
			httpx.WriteError(w, r, http.StatusBadRequest, &fault.Error{Code: mcp.CodeSessionRequired,
				What: "missing " + HeaderSession + " header",
				Why:  "without a session, only initialize (revisions up to " + mcp.LatestVersion + ") or a request naming its revision in params._meta (" + mcp.Version20260728 + " and later) may be sent",
				How:  "send initialize first and echo the " + HeaderSession + " header of its response, or send " + mcp.MethodServerDiscover + " with params._meta naming " + mcp.Version20260728})
			return
		}
		if ss = h.newSession(w, r); ss == nil {
			return
		}
		h.log.Debug("mcp session opened", logid.Session(ss.id))
		x.ss, x.fresh = ss, true
	}
	// A session is not resumable until its initialize is answered, so
	// neither is the initialize's own stream.
	x.rt = &route{events: acceptEvents, resumable: acceptEvents && ss.resumable.Load(), wake: make(chan struct{}, 1)}
	if ss.s.DeliverInbound(r.Context(), in, x.rt) == 0 {
		if ended(ss.s) {
			httpx.WriteError(w, r, http.StatusNotFound, httpx.SessionNotFound("start a new session with initialize"))
			return
		}
		w.WriteHeader(http.StatusAccepted)
		return
	}
	h.answer(w, r, x)
	if x.fresh && !ss.s.Initialized() {
		// No session was handed out: its client went away before the
		// answer (handOut ends one whose initialize failed).
		ss.s.Close()
	}
}

// modern serves one POST of the 2026-07-28 era, which has no session:
// its headers are checked against its body, and it runs on its own.
func (h *Handler) modern(w http.ResponseWriter, r *http.Request, in *mcp.Inbound, x *exchange, acceptEvents bool) {
	if !in.IsRequest() {
		// A notification (notifications/cancelled belongs to stdio; on HTTP
		// closing the stream cancels) or a response (no server→client
		// requests in this era): accepted, and nothing to do.
		w.WriteHeader(http.StatusAccepted)
		return
	}
	err := checkHeaders(r, in)
	var run *mcp.Exchange
	if err == nil {
		run, err = h.e.Prepare(in)
	}
	if err == nil && in.Method() == mcp.MethodToolsCall {
		err = h.checkParamHeaders(r, in)
	}
	if err != nil {
		h.writeJSON(w, errorStatus(err), h.e.ErrorResponse(in.ID(), err, true))
		return
	}
	if in.Method() == mcp.MethodSubscriptionsListen {
		// A listen stream lasts as long as this POST: it holds its place
		// under the caps (httpx.Gate) until the answer is over.
		release, status, err := h.opts.Gate.AdmitListen(clientid.Of(r))
		if err != nil {
			httpx.SetRetryAfter(w, err)
			h.writeJSON(w, status, h.e.ErrorResponse(in.ID(), err, true))
			return
		}
		defer release()
	}
	x.modern = true
	x.rt = &route{events: acceptEvents, wake: make(chan struct{}, 1)}
	run.Run(r.Context(), x.rt)
	h.answer(w, r, x)
}
