package main

import (
	"bytes"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// kvsweep result read, the entry that takes a client file's path, on
// what is not a client's file: a FIFO is refused without being opened
// for a writer (it must not hang) and a directory refused by kind
// (sweep.ReadFile: regular files only), an empty file and binary garbage refused with the place, and
// each exits 1 with nothing on stdout.
func TestResultReadHostileFiles(t *testing.T) {
	dir := t.TempDir()
	at := func(n string) string { return filepath.Join(dir, n) }
	if err := syscall.Mkfifo(at("fifo.json"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(at("dir.json"), 0o755); err != nil {
		t.Fatal(err)
	}
	for n, b := range map[string]string{"empty.json": "", "binary.json": "\x7fELF\x02\x01\x01\x00", "ok.json": `{"completed": 8}`} {
		if err := os.WriteFile(at(n), []byte(b), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct{ file, stderr string }{
		{"fifo.json", "kvsweep result: fifo.json is a named pipe, not a regular file\n"},
		{"dir.json", "kvsweep result: dir.json is a directory, not a regular file\n"},
		{"empty.json", "kvsweep result: " + at("empty.json") + ":1:1: the file is empty (0 bytes, no JSON): the tool wrote no result\n"},
		{"binary.json", "kvsweep result: " + at("binary.json") + ":1:1: invalid character '\\x7f' looking for beginning of value\n"},
	} {
		var out, errb bytes.Buffer
		code := run([]string{"result", "read", "--format", "vllm-bench", at(c.file)}, &out, &errb)
		if code != 1 || out.Len() != 0 || errb.String() != c.stderr {
			t.Errorf("%s: exit %d, stdout %q, stderr %q\nwant exit 1, stderr %q", c.file, code, out.String(), errb.String(), c.stderr)
		}
	}
	// The FIFO is still a FIFO nobody wrote to, and the regular file reads.
	var out, errb bytes.Buffer
	if code := run([]string{"result", "read", "--format", "vllm-bench", at("ok.json")}, &out, &errb); code != 0 || !bytes.Contains(out.Bytes(), []byte(`"verdict": "PASS"`)) {
		t.Errorf("ok.json: exit %d %s %s", code, out.String(), errb.String())
	}
}
