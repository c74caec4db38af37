package mcp

// Level is an MCP (syslog) log level.
type Level int32

// MCP log levels, lowest first.
const (
	LevelDebug Level = iota
	LevelInfo
	LevelNotice
	LevelWarning
	LevelError
	LevelCritical
	LevelAlert
	LevelEmergency
)

var levelNames = [...]string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

// String returns the level's MCP name.
func (l Level) String() string {
	if l < 0 || int(l) >= len(levelNames) {
		return "info"
	}
	return levelNames[l]
}

func parseLevel(s string) (Level, bool) {
	for i, n := range levelNames {
		if n == s {
			return Level(i), true
		}
	}
	return 0, false
}

// DefaultLogLevel is what a session receives before logging/setLevel:
// warnings and worse, so stale data and invalid templates are visible
// without flooding clients that never asked.
const DefaultLogLevel = LevelWarning

// levelNone is the level of a modern request that asked for no log
// messages: above every real level, so none gets through.
const levelNone Level = 1 << 30
