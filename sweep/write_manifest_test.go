package sweep

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// manifest.json is exactly json.MarshalIndent's bytes of the manifest.
func TestManifestBytes(t *testing.T) {
	cells := manifestCells(t)
	for _, n := range []int{-1, 0, 1, 2, len(cells)} {
		m := &Manifest{SchemaVersion: SchemaVersion, SweepID: "s-1", Name: "s", Jobs: []Job{{Name: "j", Script: "jobs/j.sbatch"}}}
		if n >= 0 {
			m.Cells = append([]Cell{}, cells[:n]...)
		}
		want, err := json.MarshalIndent(m, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, '\n')
		var got bytes.Buffer
		if err := encodeManifest(&got, m); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Bytes(), want) {
			t.Fatalf("%d cells:\n%s\nwant\n%s", n, got.Bytes(), want)
		}
	}
}

// The binary two-node jobs run is copied whole, executable.
func TestCopyBinary(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	data := bytes.Repeat([]byte("kvsweep\x00"), 1<<17) // 1 MiB
	if err := os.WriteFile(src, data, 0o600); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, "sweep", BinaryPath)
	if err := copyBinary(src, dst); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(dst)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("copy differs (%v)", err)
	}
	if fi, err := os.Stat(dst); err != nil || fi.Mode().Perm() != 0o755 {
		t.Fatalf("mode %v (%v)", fi.Mode(), err)
	}
}

// ReadManifest hands out the manifest it read while the file is the same
// one, and reads it again once the file is replaced or rewritten.
func TestReadManifestAgainWhenChanged(t *testing.T) {
	dir := t.TempDir()
	write := func(name string) {
		t.Helper()
		if err := WriteFileAtomic(filepath.Join(dir, ManifestFile), []byte(`{"schema_version": 1, "name": "`+name+`", "cells": []}`+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	read := func() *Manifest {
		t.Helper()
		m, err := ReadManifest(dir)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	write("one")
	first := read()
	if again := read(); again != first {
		t.Error("the same file was read twice")
	}
	write("two") // a new file of the same size
	if m := read(); m == first || m.Name != "two" {
		t.Errorf("after the file was replaced: %q", m.Name)
	}
	// Rewritten in place, with the same size: the modification time says.
	p := filepath.Join(dir, ManifestFile)
	b, _ := os.ReadFile(p)
	if err := os.WriteFile(p, bytes.Replace(b, []byte("two"), []byte("six"), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	future := time.Now().Add(time.Hour)
	if err := os.Chtimes(p, future, future); err != nil {
		t.Fatal(err)
	}
	if m := read(); m.Name != "six" {
		t.Errorf("after the file was rewritten: %q", m.Name)
	}
}

// A sweep id render would not have written (escape sequences that would
// drive the terminal of whoever shows the sweep, a path) is refused
// where it is in manifest.json, with the value and what was expected.
func TestReadManifestRefusesID(t *testing.T) {
	for _, id := range []string{"\x1b]0;owned\x07\x1b[2J", "../x", "a b", "-x", strings.Repeat("a", 129)} {
		dir := t.TempDir()
		m := &Manifest{SchemaVersion: SchemaVersion, SweepID: id, Name: "s"}
		b, err := json.MarshalIndent(m, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, ManifestFile), b, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err = ReadManifest(dir)
		q, _ := json.Marshal(id)
		want := filepath.Join(dir, ManifestFile) + ":3:15: sweep id " + strconv.Quote(id) + ": expected at most 128 letters, digits, '.', '_' or '-', starting with a letter or digit"
		if err == nil || err.Error() != want {
			t.Errorf("sweep_id %s: %v\nwant %s", q, err, want)
		}
	}
}
