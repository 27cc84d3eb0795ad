package lane

import (
	"bytes"
	"fmt"
	"io"
	"sync"
)

// Prefixed writes whole lines to w, each after "[PREFIX] ": for what
// runs at once (the probes of a bisect round, the sweeps of one status).
func Prefixed(w io.Writer, prefix string) io.Writer {
	return &prefixWriter{w: w, prefix: "[" + prefix + "] "}
}

type prefixWriter struct {
	mu     sync.Mutex
	w      io.Writer
	prefix string
	buf    []byte
}

var writeMu sync.Mutex // one line at a time onto the terminal

func (p *prefixWriter) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.buf = append(p.buf, b...)
	for {
		i := bytes.IndexByte(p.buf, '\n')
		if i < 0 {
			return len(b), nil
		}
		writeMu.Lock()
		_, err := fmt.Fprintf(p.w, "%s%s\n", p.prefix, p.buf[:i])
		writeMu.Unlock()
		p.buf = p.buf[i+1:]
		if err != nil {
			return len(b), err
		}
	}
}
