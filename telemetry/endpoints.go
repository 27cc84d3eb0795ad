package telemetry

import (
	"bytes"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/kvsweep/kvsweep/sweep"
)

// Endpoint is an engine's metrics URL and what the endpoints file says of
// the worker behind it: its role (prefill, decode, aggregated) and name.
type Endpoint struct {
	URL, Role, Name string
}

// maxAttr bounds a role's or a name's bytes.
const maxAttr = 64

// ListedEndpoints are the endpoints of a harness's endpoints file (a
// regular file of at most 64 KB): one a line, an http(s) URL and, after
// it, attributes role=ROLE and name=NAME ("URL role=prefill
// name=prefill-0"); a plain URL is an endpoint without them; a line that
// is not a URL, and an attribute not of these, is ignored.
func ListedEndpoints(path string) []Endpoint {
	if path == "" {
		return nil
	}
	b, err := sweep.ReadFile(filepath.Dir(path), filepath.Base(path), 64<<10)
	if err != nil {
		return nil
	}
	var out []Endpoint
	for _, l := range bytes.Split(b, []byte("\n")) {
		f := strings.Fields(string(l))
		if len(f) == 0 {
			continue
		}
		if u, err := url.Parse(f[0]); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			continue
		}
		e := Endpoint{URL: f[0]}
		for _, a := range f[1:] {
			k, v, _ := strings.Cut(a, "=")
			if len(v) > maxAttr {
				v = v[:maxAttr]
			}
			switch k {
			case "role":
				e.Role = v
			case "name":
				e.Name = v
			}
		}
		out = append(out, e)
	}
	return out
}

// Endpoints gives, each time it is called, the URLs given (plain) and
// those the endpoints file lists then: what kvsweep job scrape reads.
func Endpoints(urls []string, file string) func() []Endpoint {
	return func() []Endpoint {
		out := make([]Endpoint, 0, len(urls))
		for _, u := range urls {
			out = append(out, Endpoint{URL: u})
		}
		return append(out, ListedEndpoints(file)...)
	}
}

// node is the host of an endpoint's URL.
func node(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return u.Hostname()
}
