package main

import (
	"bytes"
	"debug/macho"
	"encoding/binary"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// thinMachO is the smallest thin 64-bit Mach-O executable header the
// standard library reads: no load commands, then a payload to find again.
func thinMachO(cpu macho.Cpu, sub uint32, payload string) []byte {
	var b bytes.Buffer
	for _, v := range []uint32{macho.Magic64, uint32(cpu), sub, uint32(macho.TypeExec), 0, 0, 0, 0} {
		_ = binary.Write(&b, binary.LittleEndian, v)
	}
	b.WriteString(payload)
	return b.Bytes()
}

// TestUniversal: the standard library's own reader finds both slices,
// with their CPU types, at 16 KiB-aligned offsets, byte for byte.
func TestUniversal(t *testing.T) {
	dir := t.TempDir()
	amd := thinMachO(macho.CpuAmd64, 3, "amd64 payload")
	arm := thinMachO(macho.CpuArm64, 0, "arm64 payload")
	in := []string{filepath.Join(dir, "amd64"), filepath.Join(dir, "arm64")}
	for i, data := range [][]byte{amd, arm} {
		if err := os.WriteFile(in[i], data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(dir, "flowyprompt")
	if err := universal(out, in...); err != nil {
		t.Fatal(err)
	}
	ff, err := macho.OpenFat(out)
	if err != nil {
		t.Fatal(err)
	}
	defer ff.Close()
	if len(ff.Arches) != 2 {
		t.Fatalf("%d slices, want 2", len(ff.Arches))
	}
	for i, want := range []struct {
		cpu  macho.Cpu
		sub  uint32
		data []byte
	}{{macho.CpuAmd64, 3, amd}, {macho.CpuArm64, 0, arm}} {
		a := ff.Arches[i]
		if a.Cpu != want.cpu || a.SubCpu != want.sub || a.Align != fatAlign || a.Offset%(1<<fatAlign) != 0 {
			t.Errorf("slice %d: cpu %v/%d, align %d, offset %d", i, a.Cpu, a.SubCpu, a.Align, a.Offset)
		}
		got, err := io.ReadAll(io.NewSectionReader(mustOpen(t, out), int64(a.Offset), int64(a.Size)))
		if err != nil || !bytes.Equal(got, want.data) {
			t.Errorf("slice %d differs from its input (%v)", i, err)
		}
	}
	if fi, err := os.Stat(out); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("universal binary mode %v (%v), want 0755", fi.Mode(), err)
	}

	if err := universal(filepath.Join(dir, "twice"), in[0], in[0]); err == nil {
		t.Error("two slices of one CPU were accepted")
	}
	if err := os.WriteFile(filepath.Join(dir, "elf"), []byte("\x7fELF not mach-o"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := universal(filepath.Join(dir, "bad"), filepath.Join(dir, "elf")); err == nil {
		t.Error("a file that is not Mach-O was accepted")
	}
}

func mustOpen(t *testing.T, path string) *os.File {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}
