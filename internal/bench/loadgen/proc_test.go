package loadgen

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

func TestParseStatCPU(t *testing.T) {
	tests := []struct {
		name    string
		stat    string
		want    time.Duration
		wantErr bool
	}{
		{"plain", "1234 (flowyprompt) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 5 0 100 0 0", 3 * time.Second, false},
		{"name with spaces and parens", "99 (my (odd) server) R 1 99 99 0 -1 0 0 0 0 0 7 3 0 0 20 0 1 0 1 0 0", 100 * time.Millisecond, false},
		{"truncated", "99 (x) R 1 2 3", 0, true},
		{"no parens", "garbage", 0, true},
		{"not numbers", "1 (x) S 1 1 1 0 -1 0 0 0 0 0 a b 0", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseStatCPU([]byte(tt.stat))
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("cpu = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestStatusKB(t *testing.T) {
	status := "Name:\tx\nVmHWM:\t   20480 kB\nVmRSS:\t   10240 kB\nThreads:\t5\n"
	tests := []struct {
		key  string
		want int64
	}{
		{"VmRSS:", 10240 << 10},
		{"VmHWM:", 20480 << 10},
		{"VmSwap:", 0},
		{"Threads:", 5 << 10}, // the parser does not know units; only kB keys are asked for
	}
	for _, tt := range tests {
		if got := statusKB([]byte(status), tt.key); got != tt.want {
			t.Errorf("statusKB(%s) = %d, want %d", tt.key, got, tt.want)
		}
	}
}

func TestReadProcSelf(t *testing.T) {
	s, err := ReadProc(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if s.RSS <= 0 || s.HWM < s.RSS {
		t.Errorf("rss=%d hwm=%d: want 0 < rss <= hwm", s.RSS, s.HWM)
	}
	if _, err := ReadProc(-5); err == nil {
		t.Error("want an error for a process that does not exist")
	}
}

func TestPhaseNilIsZero(t *testing.T) {
	var p *phase
	if got := p.end(); got != (Usage{}) {
		t.Errorf("nil phase = %+v, want zero", got)
	}
}

// TestMain lets the test binary stand in for a server: with
// LOADGEN_TEST_LISTEN set it listens there and serves until killed.
func TestMain(m *testing.M) {
	if addr := os.Getenv("LOADGEN_TEST_LISTEN"); addr != "" {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			os.Exit(3)
		}
		_ = http.Serve(l, http.NotFoundHandler())
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestStartProcess(t *testing.T) {
	addr, err := FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Run("listens", func(t *testing.T) {
		t.Setenv("LOADGEN_TEST_LISTEN", addr)
		p, err := StartProcess(context.Background(), []string{self}, addr, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ReadProc(p.PID()); err != nil {
			t.Errorf("read the server: %v", err)
		}
		p.Stop()
		if _, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			t.Error("the server still listens after Stop")
		}
	})
	t.Run("exits first", func(t *testing.T) {
		_, err := StartProcess(context.Background(), []string{"sh", "-c", "echo 'transport not built' >&2; exit 2"}, addr, 10*time.Second)
		if !errors.Is(err, ErrExited) || !strings.Contains(err.Error(), "transport not built") {
			t.Fatalf("err = %v, want ErrExited quoting the server", err)
		}
	})
	t.Run("never listens", func(t *testing.T) {
		p, err := StartProcess(context.Background(), []string{"sleep", "30"}, addr, 300*time.Millisecond)
		if err == nil {
			p.Stop()
			t.Fatal("want a timeout")
		}
		if !strings.Contains(err.Error(), "did not listen") {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestTailBuffer(t *testing.T) {
	b := &tailBuffer{max: 5}
	for _, s := range []string{"abc", "defg", "h"} {
		_, _ = b.Write([]byte(s))
	}
	if got := string(b.Bytes()); got != "defgh" {
		t.Errorf("tail = %q, want %q", got, "defgh")
	}
}
