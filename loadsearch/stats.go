package loadsearch

import (
	"math"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/kvsweep/kvsweep/frontier"
)

// tQuantile is Student's t quantile p with n-1 degrees of freedom.
func tQuantile(p float64, n int) float64 {
	return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(n - 1)}.Quantile(p)
}

// Summarize is a figure over a probe's repeats: the mean, the sample
// standard deviation, and the 95 % confidence interval of the mean by
// Student's t (mean ± t(0.975, n-1)·sd/√n); with one value the interval
// is the value itself.
func Summarize(xs []float64) frontier.Stat {
	s := frontier.Stat{N: len(xs)}
	if len(xs) == 0 {
		return s
	}
	if len(xs) == 1 {
		s.Mean, s.Low, s.High = xs[0], xs[0], xs[0]
		return s
	}
	s.Mean, s.SD = stat.MeanStdDev(xs, nil)
	half := tQuantile(0.975, len(xs)) * s.SD / math.Sqrt(float64(len(xs)))
	s.Low, s.High = s.Mean-half, s.Mean+half
	return s
}

// detectable is the smallest difference of a figure's mean between two
// probes that a two-sided t test at 5 % tells from noise with 80 %
// power: (t(0.975, df) + t(0.80, df))·√(sd_a²/n_a + sd_b²/n_b), with the
// smaller sample's degrees of freedom. 0 when either has one repeat.
func detectable(a, b frontier.Stat) float64 {
	if a.N < 2 || b.N < 2 {
		return 0
	}
	n := min(a.N, b.N)
	se := math.Sqrt(a.SD*a.SD/float64(a.N) + b.SD*b.SD/float64(b.N))
	return (tQuantile(0.975, n) + tQuantile(0.80, n)) * se
}

// noisy says a figure spread over the bound: its coefficient of
// variation over the repeats (sd / |mean|) above it.
func noisy(s frontier.Stat, bound float64) bool {
	return s.N >= 2 && s.Mean != 0 && s.SD/math.Abs(s.Mean) > bound
}
