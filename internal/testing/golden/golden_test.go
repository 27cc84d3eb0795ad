package golden

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// recorder is a testing.TB that keeps what Check reports.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Helper()      {}
func (r *recorder) Name() string { return "TestX" }
func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}
func (r *recorder) Fatalf(format string, args ...any) { r.Errorf(format, args...) }

// A mismatch says what differs as a unified diff and keeps the output as
// NAME.got; the next match removes it.
func TestCheckMismatch(t *testing.T) {
	path := filepath.Join(t.TempDir(), "table.golden")
	if err := os.WriteFile(path, []byte("a\nb\nc\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := &recorder{}
	Check(r, path, []byte("a\nB\nc\n"))
	if len(r.errs) != 1 {
		t.Fatalf("Check reported %q, want one error", r.errs)
	}
	for _, want := range []string{"--- " + path, "+++ " + path + ".got", "-b\n", "+B\n", "the output is in " + path + ".got"} {
		if !strings.Contains(r.errs[0], want) {
			t.Errorf("the report lacks %q:\n%s", want, r.errs[0])
		}
	}
	if got, err := os.ReadFile(path + ".got"); err != nil || string(got) != "a\nB\nc\n" {
		t.Errorf("NAME.got = %q, %v; want the output", got, err)
	}
	r = &recorder{}
	Check(r, path, []byte("a\nb\nc\n"))
	if len(r.errs) != 0 {
		t.Errorf("a match reported %q", r.errs)
	}
	if _, err := os.Stat(path + ".got"); !os.IsNotExist(err) {
		t.Errorf("NAME.got is still there after a match: %v", err)
	}
}
