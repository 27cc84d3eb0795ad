package templates

import (
	"io/fs"
	"strings"
	"testing"

	"github.com/kvsweep/kvsweep/sweep"
)

// The job script writes the cell directory's files under the names
// package sweep gives them, which collect reads: a name changed on one
// side only would leave collect reading nothing.
func TestCellFileNames(t *testing.T) {
	var text strings.Builder
	err := fs.WalkDir(FS, "sbatch", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := FS.ReadFile(path)
		text.Write(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{sweep.ExitFile, sweep.ResultFile, sweep.RevisionsFile, sweep.StartedFile,
		sweep.MismatchFile, sweep.NoRevisionsFile, sweep.AdapterLog, sweep.AdapterFailedFile,
		sweep.TelemetryFile, sweep.GPUSamplesFile, sweep.HardwareEnvFile, sweep.SMIFile, sweep.NCCLVersionFile} {
		if !strings.Contains(text.String(), name) {
			t.Errorf("no job script template names %s", name)
		}
	}
}
