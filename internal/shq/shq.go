// Package shq quotes values for bash, so that a value from a spec reaches a
// job script or a printed command line as one word that reads back byte for
// byte and executes nothing.
package shq

import (
	"fmt"
	"regexp"
	"strings"
)

var safeWord = regexp.MustCompile(`^[A-Za-z0-9_./:=@%+,-]+$`)

// Quote returns s as one bash word that reads back byte for byte: s itself
// when it has no special characters; single-quoted when it has no '$',
// backquote or control character; otherwise ANSI-C quoted ($'...'), where
// only backslash escapes are interpreted, so a line break shows as \n.
func Quote(s string) string {
	if safeWord.MatchString(s) {
		return s
	}
	if !strings.ContainsAny(s, "$`") && !hasControl(s) {
		return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
	}
	var b strings.Builder
	b.WriteString("$'")
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\' || c == '\'':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\t':
			b.WriteString(`\t`)
		case c < 0x20 || c == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('\'')
	return b.String()
}

// Join quotes each word and joins them with spaces: a command line a person
// can paste into bash.
func Join(words []string) string {
	q := make([]string, len(words))
	for i, w := range words {
		q[i] = Quote(w)
	}
	return strings.Join(q, " ")
}

func hasControl(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] == 0x7f {
			return true
		}
	}
	return false
}
