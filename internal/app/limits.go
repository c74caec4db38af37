package app

// The bounds of completion memory, as docs/http.md states them in its
// arithmetic of what a client can make the server hold ("Limits"): one
// session keeps at most CompletionSessionBytes, all sessions together at
// most CompletionTotalBytes.
const (
	CompletionSessionBytes = maxSessionMemory
	CompletionTotalBytes   = maxTotalMemory
)
