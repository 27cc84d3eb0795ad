// Package fail classifies errors for the command line, so a library says
// what kind of failure it hit and only the CLI maps kinds to exit codes:
// a usage error (the call was wrong, nothing was done) and a check that
// found problems (the report was printed).
package fail

import "fmt"

// UsageError is a mistake in how kvsweep was called or in a value given
// to it; nothing was done.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

// Usagef makes a UsageError.
func Usagef(format string, args ...any) error {
	return &UsageError{fmt.Sprintf(format, args...)}
}

// CheckError is a check (kvsweep report --check) that found failures,
// missing cells or regressions.
type CheckError struct{ Msg string }

func (e *CheckError) Error() string { return e.Msg }
