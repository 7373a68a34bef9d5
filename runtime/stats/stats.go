// Package stats holds the tests and intervals of a paired comparison of two
// protocols over the same items: a paired bootstrap interval of the mean
// difference, the exact McNemar test for 0/1 scores, the paired t-test and
// the Wilcoxon signed-rank test for graded scores, and Holm's adjustment of
// several p-values. Wilson's interval of one accuracy lives with the sweep
// summaries (sweep.MeanCI).
//
// The routines are small and written here rather than taken from a numeric
// library: the Student t distribution is the only special function needed,
// and its regularized incomplete beta is a few dozen lines tested against
// published values.
package stats

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
)

// Interval is an estimate with a two-sided confidence interval.
type Interval struct {
	Estimate float64 `json:"estimate"`
	Low      float64 `json:"low"`
	High     float64 `json:"high"`
	// Level is the confidence level, e.g. 0.95.
	Level float64 `json:"level"`
}

// ErrMismatch is returned for paired samples of different lengths.
var ErrMismatch = errors.New("stats: paired samples differ in length")

// Differences returns a[i]-b[i].
func Differences(a, b []float64) ([]float64, error) {
	if len(a) != len(b) {
		return nil, ErrMismatch
	}
	d := make([]float64, len(a))
	for i := range a {
		d[i] = a[i] - b[i]
	}
	return d, nil
}

func mean(x []float64) float64 {
	s := 0.0
	for _, v := range x {
		s += v
	}
	return s / float64(len(x))
}

// BootstrapMeanDiff is the paired percentile bootstrap interval of the mean
// of a[i]-b[i]: items are resampled with replacement, keeping each item's
// pair together, reps times (default 10000) from a generator seeded with
// seed, so the same data and seed give the same interval. It needs at least
// one pair.
func BootstrapMeanDiff(a, b []float64, reps int, seed uint64, level float64) (Interval, error) {
	d, err := Differences(a, b)
	if err != nil {
		return Interval{}, err
	}
	n := len(d)
	if n == 0 {
		return Interval{}, errors.New("stats: no pairs")
	}
	if reps <= 0 {
		reps = 10000
	}
	if level <= 0 || level >= 1 {
		level = 0.95
	}
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	means := make([]float64, reps)
	for r := range means {
		s := 0.0
		for range n {
			s += d[rng.IntN(n)]
		}
		means[r] = s / float64(n)
	}
	slices.Sort(means)
	alpha := (1 - level) / 2
	return Interval{Estimate: mean(d), Low: quantile(means, alpha), High: quantile(means, 1-alpha), Level: level}, nil
}

// quantile of sorted x, interpolating between order statistics.
func quantile(x []float64, p float64) float64 {
	if len(x) == 1 {
		return x[0]
	}
	h := p * float64(len(x)-1)
	lo := math.Floor(h)
	i := int(lo)
	if i >= len(x)-1 {
		return x[len(x)-1]
	}
	return x[i] + (h-lo)*(x[i+1]-x[i])
}

// McNemarExact is the two-sided exact McNemar test of paired 0/1 outcomes
// from the discordant counts: aOnly items only the first got right, bOnly
// items only the second did. Under the null each discordant item is a fair
// coin, so p = min(1, 2·P(X ≤ min(aOnly, bOnly))) for X ~ Binomial(aOnly+bOnly,
// 1/2). No discordant item gives p = 1.
func McNemarExact(aOnly, bOnly int) float64 {
	n := aOnly + bOnly
	if n == 0 {
		return 1
	}
	k := min(aOnly, bOnly)
	p := 0.0
	for i := 0; i <= k; i++ {
		p += math.Exp(logChoose(n, i) - float64(n)*math.Ln2)
	}
	return math.Min(1, 2*p)
}

func logChoose(n, k int) float64 {
	a, _ := math.Lgamma(float64(n + 1))
	b, _ := math.Lgamma(float64(k + 1))
	c, _ := math.Lgamma(float64(n - k + 1))
	return a - b - c
}

// Test is the result of a significance test.
type Test struct {
	Method    string  `json:"method"`
	Statistic float64 `json:"statistic"`
	// DF is the degrees of freedom of a t statistic.
	DF float64 `json:"df,omitempty"`
	// N is the number of pairs the test used (nonzero differences for
	// Wilcoxon's).
	N int     `json:"n"`
	P float64 `json:"p"`
}

// PairedT is the two-sided paired t-test of the mean of d (differences)
// against 0. With every difference equal it is undefined: p is 1 when they
// are all 0, else 0.
func PairedT(d []float64) (Test, error) {
	n := len(d)
	if n < 2 {
		return Test{}, errors.New("stats: the paired t-test needs at least 2 pairs")
	}
	m := mean(d)
	ss := 0.0
	for _, v := range d {
		ss += (v - m) * (v - m)
	}
	sd := math.Sqrt(ss / float64(n-1))
	t := Test{Method: "paired t", DF: float64(n - 1), N: n}
	if sd == 0 {
		if m == 0 {
			t.P = 1
		} else {
			t.Statistic = math.Inf(int(math.Copysign(1, m)))
		}
		return t, nil
	}
	t.Statistic = m / (sd / math.Sqrt(float64(n)))
	t.P = StudentTTwoSided(t.Statistic, t.DF)
	return t, nil
}

// StudentTTwoSided is P(|T| ≥ |t|) for Student's t with df degrees of
// freedom.
func StudentTTwoSided(t, df float64) float64 {
	x := df / (df + t*t)
	return RegIncBeta(df/2, 0.5, x)
}

// RegIncBeta is the regularized incomplete beta function I_x(a, b), by the
// continued fraction of Numerical Recipes' betacf evaluated with Lentz's
// method.
func RegIncBeta(a, b, x float64) float64 {
	switch {
	case x <= 0:
		return 0
	case x >= 1:
		return 1
	}
	la, _ := math.Lgamma(a + b)
	lb, _ := math.Lgamma(a)
	lc, _ := math.Lgamma(b)
	front := math.Exp(la - lb - lc + a*math.Log(x) + b*math.Log1p(-x))
	if x < (a+1)/(a+b+2) {
		return front * betaCF(a, b, x) / a
	}
	return 1 - front*betaCF(b, a, 1-x)/b
}

func betaCF(a, b, x float64) float64 {
	const tiny, eps = 1e-300, 1e-15
	c, d := 1.0, 1-(a+b)*x/(a+1)
	if math.Abs(d) < tiny {
		d = tiny
	}
	d = 1 / d
	h := d
	for m := 1; m <= 300; m++ {
		mf := float64(m)
		num := mf * (b - mf) * x / ((a + 2*mf - 1) * (a + 2*mf))
		for step := 0; step < 2; step++ {
			d = 1 + num*d
			if math.Abs(d) < tiny {
				d = tiny
			}
			c = 1 + num/c
			if math.Abs(c) < tiny {
				c = tiny
			}
			d = 1 / d
			h *= d * c
			if step == 0 {
				num = -(a + mf) * (a + b + mf) * x / ((a + 2*mf) * (a + 2*mf + 1))
			}
		}
		if math.Abs(d*c-1) < eps {
			break
		}
	}
	return h
}

// exactWilcoxonMax is the largest number of nonzero differences whose
// signed-rank distribution is computed exactly (without ties).
const exactWilcoxonMax = 50

// Wilcoxon is the two-sided Wilcoxon signed-rank test of differences d
// against a median of 0. Zero differences are dropped; tied magnitudes get
// their average rank. The statistic is V, the sum of the ranks of the
// positive differences. Without ties and with at most 50 nonzero
// differences p is exact; otherwise it is the normal approximation with
// the tie correction of the variance and a continuity correction.
func Wilcoxon(d []float64) (Test, error) {
	var nz []float64
	for _, v := range d {
		if v != 0 {
			nz = append(nz, v)
		}
	}
	n := len(nz)
	t := Test{Method: "Wilcoxon signed-rank", N: n}
	if n == 0 {
		t.P = 1
		return t, nil
	}
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(i, j int) bool { return math.Abs(nz[idx[i]]) < math.Abs(nz[idx[j]]) })
	ranks := make([]float64, n)
	ties := false
	tieTerm := 0.0
	for i := 0; i < n; {
		j := i
		for j+1 < n && math.Abs(nz[idx[j+1]]) == math.Abs(nz[idx[i]]) {
			j++
		}
		r := float64(i+j)/2 + 1
		for k := i; k <= j; k++ {
			ranks[idx[k]] = r
		}
		if g := float64(j - i + 1); g > 1 {
			ties = true
			tieTerm += g*g*g - g
		}
		i = j + 1
	}
	v := 0.0
	for i, x := range nz {
		if x > 0 {
			v += ranks[i]
		}
	}
	t.Statistic = v
	nf := float64(n)
	if !ties && n <= exactWilcoxonMax {
		t.P = wilcoxonExact(n, int(v))
		t.Method += " (exact)"
		return t, nil
	}
	mu := nf * (nf + 1) / 4
	sigma := math.Sqrt(nf*(nf+1)*(2*nf+1)/24 - tieTerm/48)
	if sigma == 0 {
		t.P = 1
		return t, nil
	}
	z := math.Max(0, math.Abs(v-mu)-0.5) / sigma
	t.P = math.Min(1, math.Erfc(z/math.Sqrt2))
	t.Method += " (normal approximation)"
	return t, nil
}

// wilcoxonExact is the two-sided p of V = v with n untied nonzero
// differences: the number of subsets of {1..n} by their sum, counted once.
func wilcoxonExact(n, v int) float64 {
	maxSum := n * (n + 1) / 2
	counts := make([]float64, maxSum+1)
	counts[0] = 1
	for k := 1; k <= n; k++ {
		for s := maxSum; s >= k; s-- {
			counts[s] += counts[s-k]
		}
	}
	total := math.Ldexp(1, n)
	lo := min(v, maxSum-v) // the distribution is symmetric
	tail := 0.0
	for s := 0; s <= lo; s++ {
		tail += counts[s]
	}
	return math.Min(1, 2*tail/total)
}

// Holm adjusts p-values for multiple comparisons by Holm's step-down
// method: the i-th smallest of m is multiplied by m-i+1, made no smaller
// than the one before it, and capped at 1. The result is in p's order.
func Holm(p []float64) []float64 {
	m := len(p)
	idx := make([]int, m)
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(i, j int) bool { return p[idx[i]] < p[idx[j]] })
	out := make([]float64, m)
	prev := 0.0
	for rank, i := range idx {
		adj := math.Min(1, float64(m-rank)*p[i])
		adj = math.Max(adj, prev)
		out[i] = adj
		prev = adj
	}
	return out
}

// BootstrapClusteredMeanDiff is BootstrapMeanDiff for pairs that come in
// clusters (the repeated samples of one dataset item): whole clusters are
// resampled, so that pairs sharing an item stay together and the interval
// is not made narrower by treating them as independent. cluster[i] names
// pair i's cluster.
func BootstrapClusteredMeanDiff(a, b []float64, cluster []int, reps int, seed uint64, level float64) (Interval, error) {
	d, err := Differences(a, b)
	if err != nil {
		return Interval{}, err
	}
	if len(cluster) != len(d) {
		return Interval{}, ErrMismatch
	}
	if len(d) == 0 {
		return Interval{}, errors.New("stats: no pairs")
	}
	if reps <= 0 {
		reps = 10000
	}
	if level <= 0 || level >= 1 {
		level = 0.95
	}
	index := map[int]int{}
	var sums, counts []float64
	for i, c := range cluster {
		j, ok := index[c]
		if !ok {
			j = len(sums)
			index[c] = j
			sums, counts = append(sums, 0), append(counts, 0)
		}
		sums[j] += d[i]
		counts[j]++
	}
	k := len(sums)
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	means := make([]float64, reps)
	for r := range means {
		s, n := 0.0, 0.0
		for range k {
			j := rng.IntN(k)
			s += sums[j]
			n += counts[j]
		}
		means[r] = s / n
	}
	slices.Sort(means)
	alpha := (1 - level) / 2
	return Interval{Estimate: mean(d), Low: quantile(means, alpha), High: quantile(means, 1-alpha), Level: level}, nil
}
