// Package realout finds ../shared/realout, the real outputs of the
// benchmark clients and engines the readers are tested on (SOURCES.md
// there says where each came from). It sits beside a checkout, not in it:
// a clone without it skips the tests that need it, saying so, unless CI
// is set, where a missing directory fails them (so CI never skips them
// silently). Tests only.
package realout

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// Path is the directory, absolute: shared/realout beside the module's
// root.
func Path() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", "..", "..", "..", "shared", "realout"))
}

// Dir returns Path, or skips t when the directory is missing and CI is
// unset (fails it when CI is set).
func Dir(t testing.TB) string {
	t.Helper()
	ok, err := Present()
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		t.Skipf("%s: missing: the real client outputs beside the checkout are not here (with CI set this fails)", Path())
	}
	return Path()
}

// Present says whether the directory is there; missing with CI set, it
// is an error (for testscript's conditions).
func Present() (bool, error) {
	p := Path()
	if fi, err := os.Stat(p); err != nil || !fi.IsDir() {
		if os.Getenv("CI") != "" {
			return false, fmt.Errorf("%s: missing (the real client outputs; CI is set, so the tests that read them may not skip)", p)
		}
		return false, nil
	}
	return true, nil
}
