package main

import (
	"bytes"
	"debug/macho"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
)

// fatAlign is the alignment of each slice, as a power of two: 16 KiB,
// the page size of Apple silicon, which maps an arm64 slice straight from
// the file (lipo aligns arm64 slices the same way).
const fatAlign = 14

// universal joins thin Mach-O executables (darwin/amd64 and darwin/arm64)
// into one universal binary, the file lipo would write. A bundle's
// manifest chooses a command per operating system, not per CPU, and lipo
// does not run on the Linux machines that build releases; the format is a
// small big-endian header followed by the unchanged slices, so each keeps
// the ad-hoc signature the Go linker gave it.
func universal(out string, thin ...string) error {
	if len(thin) == 0 {
		return errors.New("universal: no input")
	}
	type slice struct {
		data      []byte
		cpu       macho.Cpu
		subCpu    uint32
		off, size uint32
	}
	slices := make([]slice, len(thin))
	off := uint32(8 + 20*len(thin))
	for i, path := range thin {
		data, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("universal: %w", err)
		}
		f, err := macho.NewFile(bytes.NewReader(data))
		if err != nil {
			return fmt.Errorf("universal: %s is not a thin Mach-O file: %w", path, err)
		}
		for _, s := range slices[:i] {
			if s.cpu == f.Cpu {
				return fmt.Errorf("universal: %s repeats CPU %v", path, f.Cpu)
			}
		}
		off = (off + 1<<fatAlign - 1) &^ (1<<fatAlign - 1)
		if uint64(off)+uint64(len(data)) > 1<<32-1 {
			return fmt.Errorf("universal: %s does not fit a 32-bit universal header", path)
		}
		slices[i] = slice{data: data, cpu: f.Cpu, subCpu: f.SubCpu, off: off, size: uint32(len(data))}
		off += uint32(len(data))
	}
	buf := make([]byte, off)
	binary.BigEndian.PutUint32(buf[0:], macho.MagicFat)
	binary.BigEndian.PutUint32(buf[4:], uint32(len(slices)))
	for i, s := range slices {
		h := buf[8+20*i:]
		binary.BigEndian.PutUint32(h[0:], uint32(s.cpu))
		binary.BigEndian.PutUint32(h[4:], s.subCpu)
		binary.BigEndian.PutUint32(h[8:], s.off)
		binary.BigEndian.PutUint32(h[12:], s.size)
		binary.BigEndian.PutUint32(h[16:], fatAlign)
		copy(buf[s.off:], s.data)
	}
	if err := os.WriteFile(out, buf, 0o755); err != nil {
		return fmt.Errorf("universal: %w", err)
	}
	// Read it back as the loader would see it, so a wrong offset fails the
	// build instead of a user's start-up.
	ff, err := macho.OpenFat(out)
	if err != nil {
		return fmt.Errorf("universal: %s does not read back: %w", out, err)
	}
	defer ff.Close()
	if len(ff.Arches) != len(slices) {
		return fmt.Errorf("universal: %s reads back with %d slices, want %d", out, len(ff.Arches), len(slices))
	}
	return nil
}
