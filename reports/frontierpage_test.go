package reports

import (
	"bytes"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/kvsweep/kvsweep/internal/testing/golden"
)

// The frontier page of two searches in a real browser: it loads without
// a console message; each cell has its chart with labelled axes, a dot
// per probe of each side that searched it (hollow where an SLO broke),
// each side's Pareto frontier as a line, the operating point ringed, the
// SLO's line, and the comparison's sentence over it; the screenshot shows
// both sides' colours and the ring's. The screenshot in docs/ is this
// fixture's (go test ./reports -run TestFrontierPageInBrowser -update
// rewrites it).
func TestFrontierPageInBrowser(t *testing.T) {
	dir := t.TempDir()
	page := filepath.Join(dir, "frontier.html")
	var b bytes.Buffer
	if err := WriteFrontierComparison(&b, HTML, bareFrontier(), kvcrFrontier()); err != nil {
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
	if n := len(findAll(doc, func(n *html.Node) bool { return n.Data == "script" })); n != 0 {
		t.Errorf("%d scripts on the page", n)
	}
	figs := findAll(doc, func(n *html.Node) bool { return n.Data == "figure" })
	byCell := map[string]*html.Node{}
	for _, f := range figs {
		capt := findAll(f, func(n *html.Node) bool { return n.Data == "figcaption" })[0]
		byCell[strings.TrimSpace(capt.FirstChild.Data)] = f
		charts := len(findAll(f, func(n *html.Node) bool { return n.Data == "svg" && attr(n, "class") == "frontier" }))
		empty := strings.Contains(textOf(f), "No probe of this cell has both figures to draw.")
		if want := capt.FirstChild.Data != "vllm-2p1d-isl2k"; (charts == 1) != want || empty == want {
			t.Errorf("%s: %d chart(s), said empty %v", textOf(capt), charts, empty)
		}
	}
	if len(figs) != 5 {
		t.Fatalf("%d charts, want one per cell either search has (5)", len(figs))
	}
	f := byCell["vllm-1p1d-isl2k"]
	if f == nil {
		t.Fatalf("no chart of vllm-1p1d-isl2k among %v", byCell)
	}
	if s := textOf(f); !strings.Contains(s, "kvcr serves 1.8x the rate within the SLO: 12.0 ± 0.4 vs 6.6 ± 0.3 req/s") {
		t.Errorf("the chart does not say the comparison: %s", s)
	}
	classed := func(n *html.Node, tag, class string) []*html.Node {
		return findAll(n, func(n *html.Node) bool {
			return n.Data == tag && strings.Contains(" "+attr(n, "class")+" ", " "+class+" ")
		})
	}
	for side, want := range map[string][3]int{"candidate": {6, 2, 4}, "baseline": {6, 2, 4}} {
		g := classed(f, "g", side)
		if len(g) != 1 {
			t.Fatalf("%s: %d series", side, len(g))
		}
		probes, broken := len(classed(g[0], "circle", "probe")), len(classed(g[0], "circle", "broken"))
		if probes != want[0] || broken != want[1] {
			t.Errorf("%s: %d probes, %d broken; want %d and %d", side, probes, broken, want[0], want[1])
		}
		paths := classed(g[0], "path", "pareto")
		if len(paths) != 1 || strings.Count(attr(paths[0], "d"), "V")+1 != want[2] {
			t.Errorf("%s: the frontier is %d path(s) %q, want one through %d probes", side, len(paths), attrOf(paths, "d"), want[2])
		}
		if n := len(classed(g[0], "circle", "operating")); n != 1 {
			t.Errorf("%s: %d operating points ringed", side, n)
		}
	}
	if n := len(classed(f, "line", "slo")); n != 1 {
		t.Errorf("%d SLO lines", n)
	}
	for _, class := range []string{"x-title", "y-title"} {
		if n := classed(f, "text", class); len(n) != 1 || textOf(n[0]) == "" {
			t.Errorf("no %s", class)
		}
	}
	if n := len(classed(f, "text", "x-tick")); n < 3 {
		t.Errorf("%d x-axis labels", n)
	}

	shot := filepath.Join(dir, "frontier.png")
	headless(t, page, "--hide-scrollbars", "--window-size=1280,1400", "--screenshot="+shot)
	img := readPNG(t, shot)
	for name, c := range map[string]string{"candidate": candidateColor, "baseline": baselineColor, "operating point": operatingColor} {
		if n := pixels(img, c); n < 20 {
			t.Errorf("the screenshot has %d pixels of the %s's colour %s: it is not drawn", n, name, c)
		}
	}
	if *golden.Update {
		if err := os.WriteFile(filepath.Join("..", "docs", "frontier.png"), mustRead(t, shot), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func attrOf(ns []*html.Node, key string) string {
	if len(ns) == 0 {
		return ""
	}
	return attr(ns[0], key)
}

func readPNG(t *testing.T, path string) image.Image {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// pixels counts the pixels within a little of the colour #rrggbb.
func pixels(img image.Image, color string) int {
	var want [3]int
	for i := range want {
		v := 0
		for _, c := range color[1+2*i : 3+2*i] {
			v = v*16 + strings.IndexRune("0123456789abcdef", c)
		}
		want[i] = v
	}
	n := 0
	bounds := img.Bounds()
	for y := bounds.Min.Y; y < bounds.Max.Y; y++ {
		for x := bounds.Min.X; x < bounds.Max.X; x++ {
			r, g, b, _ := img.At(x, y).RGBA()
			if near(int(r>>8), want[0]) && near(int(g>>8), want[1]) && near(int(b>>8), want[2]) {
				n++
			}
		}
	}
	return n
}

func near(a, b int) bool { return a-b < 12 && b-a < 12 }
