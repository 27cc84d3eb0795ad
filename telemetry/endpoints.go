package telemetry

import (
	"bytes"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/kvsweep/kvsweep/sweep"
)

// ListedEndpoints are the http(s) URLs of a harness's endpoints file (a
// regular file of at most 64 KB; anything else in it is ignored).
func ListedEndpoints(path string) []string {
	if path == "" {
		return nil
	}
	b, err := sweep.ReadFile(filepath.Dir(path), filepath.Base(path), 64<<10)
	if err != nil {
		return nil
	}
	var out []string
	for _, l := range bytes.Split(b, []byte("\n")) {
		s := strings.TrimSpace(string(l))
		if u, err := url.Parse(s); err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" {
			out = append(out, s)
		}
	}
	return out
}
