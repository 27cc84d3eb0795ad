// Package examples embeds the quickstart spec and the simulated harness, so
// "kvsweep demo" runs anywhere the binary is, without a checkout.
package examples

import (
	"embed"
	"io/fs"
	"os"
	"path/filepath"
)

//go:embed quickstart.yaml phase1.yaml harness/phase1_sim.py
var FS embed.FS

// Quickstart is the spec the demo runs, relative to FS.
const Quickstart = "quickstart.yaml"

// WriteTo copies the embedded files into dir, keeping their layout.
func WriteTo(dir string) error {
	return fs.WalkDir(FS, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := FS.ReadFile(path)
		if err != nil {
			return err
		}
		dst := filepath.Join(dir, path)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		perm := os.FileMode(0o644)
		if filepath.Ext(path) == ".py" {
			perm = 0o755
		}
		return os.WriteFile(dst, b, perm)
	})
}
