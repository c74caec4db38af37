package github

import (
	"context"
	"log/slog"
	"os"
	"testing"

	"github.com/flowyprompt/flowyprompt/internal/fakegithub"
)

func benchConfig(b *testing.B, fake *fakegithub.Server, dir string) Config {
	return Config{
		RepoURL: "acme/prompts", Token: testToken, Ref: "main", APIURL: fake.URL(),
		CacheDir: dir, Logger: slog.New(slog.DiscardHandler),
	}
}

func benchFake(b *testing.B) *fakegithub.Server {
	fake := fakegithub.New("acme", "prompts")
	b.Cleanup(fake.Close)
	fake.SetToken(testToken)
	fake.PutFiles(standardLibrary().Files)
	return fake
}

// BenchmarkColdStart measures a first load of the 150-file library from
// a local fake (148 requests): the CPU cost of the client and the build,
// not GitHub's latency.
func BenchmarkColdStart(b *testing.B) {
	fake := benchFake(b)
	root := b.TempDir()
	b.ReportAllocs()
	for b.Loop() {
		fake.SetRemaining(5000) // a benchmark may need more than an hour's budget
		dir, err := os.MkdirTemp(root, "c")
		if err != nil {
			b.Fatal(err)
		}
		s, err := NewSource(benchConfig(b, fake, dir))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := s.Load(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRevalidateNotModified measures a forced revalidation that
// GitHub answers with 304 (one request, then the cache file is rewritten).
func BenchmarkRevalidateNotModified(b *testing.B) {
	fake := benchFake(b)
	s, err := NewSource(benchConfig(b, fake, b.TempDir()))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if _, err := s.Load(ctx); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Refresh(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLoadHot measures what a request pays once a catalog exists.
func BenchmarkLoadHot(b *testing.B) {
	fake := benchFake(b)
	s, err := NewSource(benchConfig(b, fake, b.TempDir()))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if _, err := s.Load(ctx); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Load(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRestartFromDisk measures a restart within the TTL: open the
// cache file and build the catalog, no request.
func BenchmarkRestartFromDisk(b *testing.B) {
	fake := benchFake(b)
	dir := b.TempDir()
	cfg := benchConfig(b, fake, dir)
	s, err := NewSource(cfg)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if _, err := s.Load(ctx); err != nil {
		b.Fatal(err)
	}
	fake.Reset()
	b.ReportAllocs()
	for b.Loop() {
		s, err := NewSource(cfg)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := s.Load(ctx); err != nil {
			b.Fatal(err)
		}
	}
	if n := fake.Total(); n != 0 {
		b.Fatalf("restarts made %d requests", n)
	}
}
