package loadsearch

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/kvsweep/kvsweep/frontier"
)

// Student's t quantiles against a printed table (two-sided 95 %: the
// 0.975 quantile; 80 % power: the 0.80 one), to its three decimals.
func TestTQuantile(t *testing.T) {
	for _, tc := range []struct {
		p    float64
		n    int // sample size: n-1 degrees of freedom
		want float64
	}{
		{0.975, 2, 12.706}, {0.975, 3, 4.303}, {0.975, 4, 3.182}, {0.975, 5, 2.776}, {0.975, 10, 2.262}, {0.975, 20, 2.093},
		{0.80, 3, 1.061}, {0.80, 5, 0.941}, {0.80, 10, 0.883}, {0.80, 20, 0.861},
	} {
		if got := tQuantile(tc.p, tc.n); math.Abs(got-tc.want) > 0.0006 {
			t.Errorf("t(%g, df %d) = %.4f, want %.3f", tc.p, tc.n-1, got, tc.want)
		}
	}
}

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

// Summarize against hand-computed intervals: mean ± t(0.975, n-1)·sd/√n.
func TestSummarize(t *testing.T) {
	for _, tc := range []struct {
		xs                  []float64
		n                   int
		mean, sd, low, high float64
	}{
		// mean 3, sd √2.5 = 1.5811, half 2.776·1.5811/√5 = 1.9630
		{[]float64{1, 2, 3, 4, 5}, 5, 3, 1.5811, 1.0370, 4.9630},
		// mean 12, sd √8 = 2.8284, half 12.706·2.8284/√2 = 25.412
		{[]float64{10, 14}, 2, 12, 2.8284, -13.412, 37.412},
		// mean 500, sd √(4·40²/3) = 46.188, half 3.182·46.188/2 = 73.49
		{[]float64{460, 460, 540, 540}, 4, 500, 46.188, 426.51, 573.49},
	} {
		s := Summarize(tc.xs)
		if s.N != tc.n || !near(s.Mean, tc.mean, 1e-9) || !near(s.SD, tc.sd, 1e-3) || !near(s.Low, tc.low, 0.01) || !near(s.High, tc.high, 0.01) {
			t.Errorf("Summarize(%v) = %+v, want n %d, mean %g, sd %g, interval %g..%g", tc.xs, s, tc.n, tc.mean, tc.sd, tc.low, tc.high)
		}
	}
	if s := Summarize([]float64{7}); s.N != 1 || s.Mean != 7 || s.SD != 0 {
		t.Errorf("one value: %+v", s)
	}
	if s := Summarize(nil); s.N != 0 {
		t.Errorf("no value: %+v", s)
	}
}

// detectable against a hand computation: (t(0.975, 4) + t(0.80, 4))·
// √(2²/5 + 3²/10) = (2.776 + 0.941)·1.3038 = 4.847, on the smaller
// sample's degrees of freedom; 0 with one repeat.
func TestDetectable(t *testing.T) {
	a, b := frontier.Stat{N: 5, SD: 2}, frontier.Stat{N: 10, SD: 3}
	if got := detectable(a, b); !near(got, 4.847, 0.002) {
		t.Errorf("detectable = %.4f, want 4.847", got)
	}
	if got := detectable(b, a); !near(got, 4.847, 0.002) {
		t.Errorf("detectable, sides swapped = %.4f, want 4.847", got)
	}
	if got := detectable(frontier.Stat{N: 1}, b); got != 0 {
		t.Errorf("detectable with one repeat = %g, want 0", got)
	}
	for _, tc := range []struct {
		s    frontier.Stat
		want bool
	}{
		{frontier.Stat{N: 3, Mean: 100, SD: 11}, true},
		{frontier.Stat{N: 3, Mean: 100, SD: 9}, false},
		{frontier.Stat{N: 1, Mean: 100, SD: 50}, false},
	} {
		if got := noisy(tc.s, 0.1); got != tc.want {
			t.Errorf("noisy(%+v, 0.1) = %v, want %v", tc.s, got, tc.want)
		}
	}
}

func sumOf(n int, mean, half float64) frontier.Stat {
	return frontier.Stat{N: n, Mean: mean, Low: mean - half, High: mean + half}
}

// surely: met with 95 % confidence when every SLO's upper bound is within
// it, broken when some SLO's lower bound is past it; never from one value,
// and never met when a repeat failed.
func TestSurely(t *testing.T) {
	c := config(3)
	probe := func(meets bool, ttft, itl frontier.Stat) *frontier.Probe {
		return &frontier.Probe{Meets: meets, Stats: map[string]frontier.Stat{frontier.TTFTP99: ttft, frontier.ITLP99: itl}}
	}
	itl := sumOf(3, 20, 2)
	for _, tc := range []struct {
		name  string
		p     *frontier.Probe
		meets bool
		want  bool
	}{
		{"450 ± 30 met", probe(true, sumOf(3, 450, 30), itl), true, true},
		{"450 ± 60 met", probe(true, sumOf(3, 450, 60), itl), true, false},
		{"one value of 450", probe(true, sumOf(1, 450, 0), itl), true, false},
		{"itl from one value", probe(true, sumOf(3, 450, 30), sumOf(1, 20, 0)), true, false},
		{"a failed repeat", probe(false, sumOf(3, 450, 30), itl), true, false},
		{"600 ± 80 broke", probe(false, sumOf(3, 600, 80), itl), false, true},
		{"600 ± 110 broke", probe(false, sumOf(3, 600, 110), itl), false, false},
		{"one value of 600", probe(false, sumOf(1, 600, 0), itl), false, false},
	} {
		if got := c.surely(tc.p, tc.meets); got != tc.want {
			t.Errorf("%s: surely(meets %v) = %v, want %v", tc.name, tc.meets, got, tc.want)
		}
	}
}

// Point from hand-made probes: the point is the highest load met below
// the first break, the interval from the surely-met load below it to the
// surely-broken one above, and the smallest detectable change the ttft
// difference test turned into load: (t(0.975, 3) + t(0.80, 3))·
// √(40²/4 + 40²/4) / ((520 − 470) / (13 − 12)) = (3.182 + 0.978)·28.284
// / 50 = 2.3538.
func TestPoint(t *testing.T) {
	c := config(4)
	mk := func(load, ttft, sd float64) frontier.Probe {
		p := frontier.Probe{Load: load, Meets: ttft <= 500, Stats: map[string]frontier.Stat{
			frontier.ITLP99:  sumOf(4, 20, 1),
			frontier.TTFTP99: {N: 4, Mean: ttft, SD: sd, Low: ttft - 3.182*sd/2, High: ttft + 3.182*sd/2},
		}}
		if !p.Meets {
			p.Broken = []string{"ttft_p99_ms"}
		}
		return p
	}
	probes := []frontier.Probe{mk(16, 900, 40), mk(8, 300, 40), mk(12, 470, 40), mk(14, 700, 40), mk(13, 520, 40), mk(10, 420, 40)}
	pt := c.Point(probes)
	// 12: 470 + 63.6 > 500 is not sure; 10: 420 + 63.6 = 483.6 is; 13:
	// 520 - 63.6 is not surely broken; 14: 700 - 63.6 is.
	if pt == nil || pt.Load != 12 || pt.Low != 10 || pt.High != 14 || !near(pt.MinDetectable, 2.3538, 0.002) {
		t.Errorf("point %+v, want 12 in 10..14, min detectable 2.3538", pt)
	}
}

// A repeat that failed (TIMEOUT, FAIL) breaks its probe, naming the
// verdict, whatever figures it reported; one that failed outside the
// test (INFRA) is left out.
func TestJudgeVerdicts(t *testing.T) {
	c := config(3)
	rep := func(verdict string, ttft float64) frontier.Repeat {
		return frontier.Repeat{Verdict: verdict, Figures: map[string]float64{frontier.TTFTP99: ttft, frontier.ITLP99: 20}}
	}
	p := frontier.Probe{Load: 8, Repeats: []frontier.Repeat{rep("PASS", 300), rep("TIMEOUT", 120), rep("PASS", 310)}}
	if !c.Judge(&p) || p.Meets || len(p.Broken) != 1 || p.Broken[0] != "1 of 3 repeats TIMEOUT" {
		t.Errorf("a timed-out repeat: meets %v, broken %q; want broken by 1 of 3 repeats TIMEOUT", p.Meets, p.Broken)
	}
	p = frontier.Probe{Load: 8, Repeats: []frontier.Repeat{rep("FAIL", 300), rep("FAIL", 600), rep(Infra, 0)}}
	if !c.Judge(&p) || p.Meets || len(p.Broken) != 1 || p.Broken[0] != "2 of 2 repeats FAIL" {
		t.Errorf("two failed repeats beside an infra failure: meets %v, broken %q; want 2 of 2 repeats FAIL", p.Meets, p.Broken)
	}
	p = frontier.Probe{Load: 8, Repeats: []frontier.Repeat{rep("PASS", 300), rep(Infra, 0), rep("PASS", 310)}}
	if !c.Judge(&p) || !p.Meets || len(p.Broken) != 0 || p.Stats[frontier.TTFTP99].N != 2 {
		t.Errorf("an infra failure beside two passes: meets %v, broken %q, stats %+v; want met over 2 repeats", p.Meets, p.Broken, p.Stats)
	}
}

// With a fine step the bisection ends on loads within the repeats' noise
// of the knee, so the interval is the t intervals' doing, not the
// bracket's: with 8 % noise and 5 repeats it holds the true knee in at
// least 19 of 20 seeded runs (and with 2, the fewest a spec allows), and it is narrow (a few req/s on average,
// never the whole range), and the repeats say how small a change they
// could detect.
func TestSearchIntervalCoverage(t *testing.T) {
	// The widest mean interval each allows: t(0.975, 1) = 12.7 makes two
	// repeats' intervals wide, but never the whole range (63).
	for repeats, maxWidth := range map[int]float64{2: 30, 5: 5} {
		t.Run(fmt.Sprintf("%d repeats", repeats), func(t *testing.T) { coverage(t, repeats, maxWidth) })
	}
}

func coverage(t *testing.T, repeats int, maxWidth float64) {
	c := config(repeats)
	c.Step = 0.05
	held, width := 0, 0.0
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 7))
		knee := 4 + rng.Float64()*56
		knees := map[string]float64{"c": knee}
		s := newSearch(c, knees)
		if err := s.Run(context.Background(), &server{knee: knees, cv: 0.08, rng: rng}); err != nil {
			t.Fatal(err)
		}
		pt := s.Frontier.Cells[0].Point
		if pt == nil {
			t.Errorf("seed %d: knee %.2f: no point (%s)", seed, knee, s.Frontier.Cells[0].Note)
			continue
		}
		if pt.Low <= knee && knee <= pt.High {
			held++
		} else {
			t.Logf("seed %d: knee %.3f outside %g..%g (point %g; probes %v)", seed, knee, pt.Low, pt.High, pt.Load, loads(s.Frontier.Cells[0]))
		}
		width += pt.High - pt.Low
		if !(pt.MinDetectable > 0) {
			t.Errorf("seed %d: min detectable %g, want a positive change", seed, pt.MinDetectable)
		}
	}
	t.Logf("the interval held the knee in %d of 20 runs, %.2f req/s wide on average", held, width/20)
	if held < 19 {
		t.Errorf("the interval held the knee in %d of 20 runs, want at least 19", held)
	}
	if width/20 > maxWidth {
		t.Errorf("the interval is %.2f req/s wide on average, want at most %g (the range is 63)", width/20, maxWidth)
	}
}
