package loadgen

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"time"
)

// Usage is what the server process spent during a measured phase, read
// from /proc. CPU comes from kernel ticks (10 ms on Linux), so a phase of a
// second or more is needed for a figure per request worth quoting.
type Usage struct {
	// CPU is the server's user+system CPU time over the measured phase.
	CPU time.Duration
	// RSS is the server's resident set (VmRSS) at the end, in bytes.
	RSS int64
	// PeakRSS is the most the server held since it started (VmHWM), in
	// bytes: it covers start-up, warmup and the measured phase.
	PeakRSS int64
	// ClientCPU is the load generator's own CPU over the phase: on a small
	// machine it competes with the server, so it is part of the picture.
	ClientCPU time.Duration
}

// CPUPerRequest is the server's CPU time per measured request, zero when
// nothing was measured.
func (s Stats) CPUPerRequest() time.Duration {
	if s.Requests == 0 {
		return 0
	}
	return s.Server.CPU / time.Duration(s.Requests)
}

// ProcSample is one reading of a process's counters.
type ProcSample struct {
	CPU time.Duration // utime+stime since the process started
	RSS int64         // VmRSS, bytes
	HWM int64         // VmHWM (peak RSS), bytes
}

// clockTick is USER_HZ, which Linux fixes at 100 for user space whatever
// the kernel's internal HZ; reading it with sysconf would need cgo.
const clockTick = 10 * time.Millisecond

// ReadProc reads pid's CPU time and memory from /proc/PID/stat and
// /proc/PID/status.
func ReadProc(pid int) (ProcSample, error) {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ProcSample{}, fmt.Errorf("read process stat: %w", err)
	}
	cpu, err := parseStatCPU(stat)
	if err != nil {
		return ProcSample{}, err
	}
	status, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return ProcSample{}, fmt.Errorf("read process status: %w", err)
	}
	return ProcSample{CPU: cpu, RSS: statusKB(status, "VmRSS:"), HWM: statusKB(status, "VmHWM:")}, nil
}

// parseStatCPU returns utime+stime from a /proc/PID/stat line. The command
// name (field 2) is in parentheses and may hold spaces or parentheses, so
// fields are counted from the last ')'.
func parseStatCPU(stat []byte) (time.Duration, error) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("malformed process stat %.80q", stat)
	}
	// After ')' come fields 3 (state) onwards; utime and stime are fields
	// 14 and 15, so the 12th and 13th here.
	f := bytes.Fields(stat[i+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("malformed process stat %.80q", stat)
	}
	u, err1 := strconv.ParseInt(string(f[11]), 10, 64)
	s, err2 := strconv.ParseInt(string(f[12]), 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("malformed process stat %.80q", stat)
	}
	return time.Duration(u+s) * clockTick, nil
}

// statusKB returns a "Key:   123 kB" line of /proc/PID/status in bytes, or
// 0 when the key is absent (a kernel thread, an exited process).
func statusKB(status []byte, key string) int64 {
	i := bytes.Index(status, []byte(key))
	if i < 0 {
		return 0
	}
	rest := status[i+len(key):]
	if j := bytes.IndexByte(rest, '\n'); j >= 0 {
		rest = rest[:j]
	}
	f := bytes.Fields(rest)
	if len(f) == 0 {
		return 0
	}
	n, err := strconv.ParseInt(string(f[0]), 10, 64)
	if err != nil {
		return 0
	}
	return n << 10
}

// phase measures a server (when pid > 0) and this process across a
// measured phase.
type phase struct {
	pid         int
	srv0        ProcSample
	cli0        time.Duration
	srvErr      error
	selfEnabled bool
}

func startPhase(pid int) *phase {
	p := &phase{pid: pid}
	if pid > 0 {
		p.srv0, p.srvErr = ReadProc(pid)
	}
	if s, err := ReadProc(os.Getpid()); err == nil {
		p.cli0, p.selfEnabled = s.CPU, true
	}
	return p
}

// end returns the usage since startPhase. A server that could not be read
// leaves the server fields zero rather than failing the run: the request
// figures are still good.
func (p *phase) end() Usage {
	var u Usage
	if p == nil {
		return u
	}
	if p.pid > 0 && p.srvErr == nil {
		if s, err := ReadProc(p.pid); err == nil {
			u.CPU, u.RSS, u.PeakRSS = s.CPU-p.srv0.CPU, s.RSS, s.HWM
		}
	}
	if p.selfEnabled {
		if s, err := ReadProc(os.Getpid()); err == nil {
			u.ClientCPU = s.CPU - p.cli0
		}
	}
	return u
}
