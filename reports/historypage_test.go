package reports

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image/png"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/kvsweep/kvsweep/internal/testing/golden"
	"github.com/kvsweep/kvsweep/testrun"
)

// historyFixture is a history of n daily runs made from the base sweep:
// figures that drift a little, a KVCR commit change two thirds of the way
// that makes TTFT 12% worse, and a new image digest with it.
func historyFixture(t testing.TB, n int) []*testrun.Run {
	base := collected(t.(*testing.T), "base")
	b, err := json.Marshal(base)
	if err != nil {
		t.Fatal(err)
	}
	change := n * 2 / 3
	var runs []*testrun.Run
	for i := range n {
		var r testrun.Run
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatal(err)
		}
		r.ID = fmt.Sprintf("phase1-%03d", i+1)
		at := time.Date(2026, 11, 1, 9, 30, 0, 0, time.UTC).Add(time.Duration(i) * 24 * time.Hour)
		r.Started, r.CollectedAt = at.Format(time.RFC3339), at.Add(2*time.Hour)
		for ci := range r.Cells {
			c := &r.Cells[ci]
			if i >= change {
				c.Image.Digest = "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
				if c.Image.SourceRevisions != nil {
					comp := c.Image.SourceRevisions.Components["kvcr"]
					comp.Commit = "9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a291807"
					c.Image.SourceRevisions.Components["kvcr"] = comp
				}
			}
			for k := range c.Cases {
				for j := range c.Cases[k].Metrics {
					m := &c.Cases[k].Metrics[j]
					f := 1 + 0.02*math.Sin(float64(i*(ci+1)))
					if i >= change && m.Name == "ttft_ms" {
						f *= 1.12
					}
					m.Value = math.Round(m.Value*f*1e4) / 1e4
				}
			}
		}
		runs = append(runs, &r)
	}
	return runs
}

// A 200-run history stays a page people can open: under 2 MB.
func TestHistoryPageSize(t *testing.T) {
	var b bytes.Buffer
	if err := WriteHTML(&b, historyFixture(t, 200), "kvsweep history"); err != nil {
		t.Fatal(err)
	}
	if b.Len() > 2<<20 {
		t.Errorf("a 200-run history page is %d bytes (at most 2 MiB)", b.Len())
	}
	t.Logf("200-run history page: %d bytes", b.Len())
}

func chromium(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("no chromium: scripts/test.sh installs Debian's chromium package")
	return ""
}

// headless runs chromium on page with args; a deadline only guards against
// a hang, it is no measure of speed.
func headless(t *testing.T, page string, args ...string) (stdout, stderr string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	home := t.TempDir()
	cmd := exec.CommandContext(ctx, chromium(t), append([]string{"--headless", "--no-sandbox", "--disable-gpu",
		"--no-first-run", "--user-data-dir=" + filepath.Join(home, "profile"), "--enable-logging=stderr", "--v=0"}, append(args, "file://"+page)...)...)
	cmd.Env = append(os.Environ(), "HOME="+home)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\n%s", args, err, errb.String())
	}
	return out.String(), errb.String()
}

// The history page in a real browser: it loads without a console message,
// and every chart has labelled axes, a title with its unit and direction,
// and a line per cell. The screenshot in docs/ is this fixture's
// (go test ./reports -run TestHistoryPageInBrowser -update rewrites it).
func TestHistoryPageInBrowser(t *testing.T) {
	dir := t.TempDir()
	page := filepath.Join(dir, "history.html")
	var b bytes.Buffer
	if err := WriteHTML(&b, historyFixture(t, 12), "kvsweep history: engine=vllm"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(page, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	dom, stderr := headless(t, page, "--dump-dom")
	for _, line := range strings.Split(stderr, "\n") {
		if strings.Contains(line, ":CONSOLE") {
			t.Errorf("console message: %s", line)
		}
	}
	doc, err := html.Parse(strings.NewReader(dom))
	if err != nil {
		t.Fatal(err)
	}
	charts := findAll(doc, func(n *html.Node) bool { return n.Data == "svg" && attr(n, "class") == "chart" })
	if len(charts) != 8 {
		t.Fatalf("%d charts in the DOM, want 8", len(charts))
	}
	for _, c := range charts {
		label := attr(c, "aria-label")
		count := func(class string) (n int, text string) {
			for _, e := range findAll(c, func(n *html.Node) bool { return n.Data == "text" && attr(n, "class") == class }) {
				n++
				text = textOf(e)
			}
			return n, text
		}
		if n, _ := count("x-tick"); n < 6 {
			t.Errorf("%s: %d x-axis labels", label, n)
		}
		if n, _ := count("y-tick"); n < 3 {
			t.Errorf("%s: %d y-axis labels", label, n)
		}
		if _, x := count("x-title"); x != "run date (UTC)" {
			t.Errorf("%s: x-axis title %q", label, x)
		}
		if _, y := count("y-title"); y == "" {
			t.Errorf("%s: no y-axis title", label)
		}
		if n := len(findAll(c, func(n *html.Node) bool { return n.Data == "path" })); n != 2 {
			t.Errorf("%s: %d lines, want one per cell (2)", label, n)
		}
	}
	if title := textOf(findAll(doc, func(n *html.Node) bool { return n.Data == "h1" })[0]); title != "kvsweep history: engine=vllm" {
		t.Errorf("title %q does not name the filter", title)
	}
	caps := findAll(doc, func(n *html.Node) bool { return n.Data == "figcaption" })
	if !strings.Contains(textOf(caps[0]), "is better") {
		t.Errorf("caption %q has no direction", textOf(caps[0]))
	}
	if n := len(findAll(doc, func(n *html.Node) bool { return attr(n, "class") == "change" })); n != 8 {
		t.Errorf("%d change marks, want the one change on each chart", n)
	}

	shot := filepath.Join(dir, "history.png")
	headless(t, page, "--hide-scrollbars", "--window-size=1280,1700", "--screenshot="+shot)
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	colors := map[uint32]bool{}
	bounds := img.Bounds()
	for y := bounds.Min.Y; y < bounds.Max.Y; y += 7 {
		for x := bounds.Min.X; x < bounds.Max.X; x += 7 {
			r, g, b, _ := img.At(x, y).RGBA()
			colors[r>>12<<8|g>>12<<4|b>>12] = true
		}
	}
	if bounds.Dx() != 1280 || len(colors) < 8 {
		t.Errorf("the screenshot is %v with %d colours: the page did not render", bounds, len(colors))
	}
	if *golden.Update {
		png, err := os.ReadFile(shot)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join("..", "docs", "history.png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func findAll(n *html.Node, ok func(*html.Node) bool) []*html.Node {
	var out []*html.Node
	if n.Type == html.ElementNode && ok(n) {
		out = append(out, n)
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		out = append(out, findAll(c, ok)...)
	}
	return out
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func textOf(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return strings.TrimSpace(b.String())
}
