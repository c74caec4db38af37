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
		loadedSource(b, benchConfig(b, fake, dir))
	}
}

// BenchmarkRevalidateNotModified measures a forced revalidation that
// GitHub answers with 304 (one request, then the cache file is rewritten).
func BenchmarkRevalidateNotModified(b *testing.B) {
	s := loadedSource(b, benchConfig(b, benchFake(b), b.TempDir()))
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Refresh(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLoadHot measures what a request pays once a catalog exists.
func BenchmarkLoadHot(b *testing.B) {
	s := loadedSource(b, benchConfig(b, benchFake(b), b.TempDir()))
	ctx := context.Background()
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
	cfg := benchConfig(b, fake, b.TempDir())
	loadedSource(b, cfg) // writes the disk cache
	fake.Reset()
	b.ReportAllocs()
	for b.Loop() {
		loadedSource(b, cfg)
	}
	if n := fake.Total(); n != 0 {
		b.Fatalf("restarts made %d requests", n)
	}
}

// loadedSource returns a source for cfg that has loaded its catalog once.
func loadedSource(b *testing.B, cfg Config) *Source {
	b.Helper()
	s, err := NewSource(cfg)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := s.Load(context.Background()); err != nil {
		b.Fatal(err)
	}
	return s
}
