package cache

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// fileVersion changes when the file layout does; an unknown version is
// ignored like a corrupt file, because a cache can always be rebuilt.
const fileVersion = 1

type file struct {
	Version int     `json:"version"`
	Entries []Entry `json:"entries"` // most recently used first
}

// Dir returns the directory flowyprompt keeps caches in:
// os.UserCacheDir()/flowyprompt.
func Dir() (string, error) {
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("find the user cache directory: %w", err)
	}
	return filepath.Join(d, "flowyprompt"), nil
}

// FileName returns a stable file name for the given identity parts (for
// example API URL, repository and ref), hashed so that no part (a host name,
// a ref with slashes) ends up in the file system verbatim.
func FileName(parts ...string) string {
	sum := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return hex.EncodeToString(sum[:12]) + ".json"
}

// Save writes every entry to path as one JSON file, atomically: a reader (or
// a crash) sees the old file or the new one, never half of one. The file is
// private to the user (0600, directory 0700) because cached templates may
// come from a private repository. Saves run one at a time. The entries are
// copied under the cache's lock but encoded outside it, so that readers and
// writers of the cache do not wait for the encoding (values are never
// modified in place, so the copy shares their bytes).
func (c *Cache) Save(path string) error {
	c.saveMu.Lock()
	defer c.saveMu.Unlock()
	return c.saveLocked(path)
}

// SaveIfChanged is Save, skipped when no entry was added, replaced,
// touched or removed since the file at path was last written (or opened)
// by this cache. It reports whether it wrote the file. Calls made while a
// Save runs wait for it and then find their changes saved by the next
// one, so a burst of changes costs one or two writes, not one each.
func (c *Cache) SaveIfChanged(path string) (written bool, err error) {
	c.saveMu.Lock()
	defer c.saveMu.Unlock()
	c.mu.Lock()
	unchanged := path == c.savedPath && c.gen == c.savedGen
	c.mu.Unlock()
	if unchanged {
		return false, nil
	}
	return true, c.saveLocked(path)
}

// saveLocked writes the file; c.saveMu must be held.
func (c *Cache) saveLocked(path string) error {
	c.mu.Lock()
	gen := c.gen
	f := file{Version: fileVersion, Entries: make([]Entry, 0, len(c.items))}
	for el := c.lru.Front(); el != nil; el = el.Next() {
		f.Entries = append(f.Entries, *el.Value.(*Entry))
	}
	c.mu.Unlock()
	if c.encoding != nil {
		c.encoding()
	}
	if err := writeAtomic(path, f.encode); err != nil {
		return err
	}
	c.savedGen, c.savedPath = gen, path
	return nil
}

// encode writes f as json.Marshal would, one entry at a time: marshalled
// whole, a cache of templates was held twice more in memory (base64 is a
// third larger than the bytes, and the buffer grew by doubling), which
// made saving the peak of a server's memory.
func (f file) encode(w io.Writer) error {
	if _, err := fmt.Fprintf(w, `{"version":%d,"entries":[`, f.Version); err != nil {
		return err
	}
	for i := range f.Entries {
		data, err := json.Marshal(&f.Entries[i])
		if err != nil {
			return fmt.Errorf("encode cache entry %q: %w", f.Entries[i].Key, err)
		}
		if i > 0 {
			if _, err := io.WriteString(w, ","); err != nil {
				return err
			}
		}
		if _, err := w.Write(data); err != nil {
			return err
		}
	}
	_, err := io.WriteString(w, "]}")
	return err
}

// writeAtomic writes the file at path with write, atomically.
func writeAtomic(path string, write func(io.Writer) error) (err error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create cache directory: %w", err)
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("create temporary cache file: %w", err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err := tmp.Chmod(0o600); err != nil {
		return fmt.Errorf("restrict cache file: %w", err)
	}
	buf := bufio.NewWriterSize(tmp, 64<<10)
	if err := write(buf); err != nil {
		return fmt.Errorf("write cache file: %w", err)
	}
	if err := buf.Flush(); err != nil {
		return fmt.Errorf("write cache file: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("sync cache file: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("close cache file: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("replace cache file: %w", err)
	}
	// The rename is durable only once the directory is synced; a failure
	// here loses at most the newest cache, so it is not reported.
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

// Open returns a cache holding the entries saved at path. A missing file
// gives an empty cache. A corrupt file (or one from another version) is
// ignored with a warning: the cache is rebuilt from the source, which is
// slower but never wrong. Any other read failure also gives an empty cache,
// and is returned so the caller can say that persistence is not working.
func Open(path string, opts Options) (*Cache, error) {
	c := New(opts)
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return c, nil
	case err != nil:
		return c, fmt.Errorf("read cache file: %w", err)
	}
	var f file
	if err := json.Unmarshal(data, &f); err != nil || f.Version != fileVersion {
		if err == nil {
			err = fmt.Errorf("version %d, want %d", f.Version, fileVersion)
		}
		c.logger.Warn("ignoring corrupt cache file; it will be rebuilt", "path", path, "error", err)
		return c, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	// An entry saved under a longer TTL than today's (CACHE_TTL_MS was
	// lowered) is fresh for at most today's TTL from now.
	latest := c.now().Add(c.ttl)
	// Oldest first, so the most recently used entry ends at the front and
	// eviction order survives a restart.
	for i := len(f.Entries) - 1; i >= 0; i-- {
		e := f.Entries[i]
		if e.Key == "" {
			continue
		}
		if !e.ExpiresAt.IsZero() && e.ExpiresAt.After(latest) {
			e.ExpiresAt = latest
		}
		c.put(&e)
	}
	// What is in memory is what the file holds (an expiry shortened to
	// today's TTL aside): nothing to save until something changes.
	c.savedGen, c.savedPath = c.gen, path
	return c, nil
}
