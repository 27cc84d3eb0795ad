// Package names makes strings safe as file and job names.
package names

import "strings"

// Sanitize lower-cases s and replaces every character outside
// [a-z0-9._-] with '-', so it is safe as a file or job name.
func Sanitize(s string) string {
	b := []byte(strings.ToLower(s))
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			b[i] = '-'
		}
	}
	return string(b)
}
