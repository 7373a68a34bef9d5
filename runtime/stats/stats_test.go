package stats

import (
	"math"
	"math/rand/v2"
	"testing"
)

func near(t *testing.T, name string, got, want, tol float64) {
	t.Helper()
	if math.Abs(got-want) > tol {
		t.Errorf("%s = %.6g, want %.6g (±%g)", name, got, want, tol)
	}
}

// The paired example of R's wilcox.test and t.test manuals (depression
// scores before and after treatment, Hollander & Wolfe).
var (
	hwX = []float64{1.83, 0.50, 1.62, 2.48, 1.68, 1.88, 1.55, 3.06, 1.30}
	hwY = []float64{0.878, 0.647, 0.598, 2.05, 1.06, 1.29, 1.06, 3.14, 1.29}
)

func TestPairedTKnownValues(t *testing.T) {
	d, err := Differences(hwX, hwY)
	if err != nil {
		t.Fatal(err)
	}
	res, err := PairedT(d)
	if err != nil {
		t.Fatal(err)
	}
	near(t, "t", res.Statistic, 3.0354, 5e-4)
	near(t, "df", res.DF, 8, 0)
	near(t, "p", res.P, 0.01618, 5e-5)
	// Student's t with 1 degree of freedom is Cauchy: P(|T|>t) = 1-2/π·atan(t).
	for _, x := range []float64{0.3, 1, 4, 30} {
		near(t, "t1 tail", StudentTTwoSided(x, 1), 1-2/math.Pi*math.Atan(x), 1e-12)
	}
	// Table values: the 97.5% quantiles of t with 10 and 30 df.
	near(t, "t10", StudentTTwoSided(2.228139, 10), 0.05, 1e-6)
	near(t, "t30", StudentTTwoSided(2.042272, 30), 0.05, 1e-6)
	near(t, "I_0.5(2,3)", RegIncBeta(2, 3, 0.5), 0.6875, 1e-12) // 11/16
	if _, err := PairedT([]float64{1}); err == nil {
		t.Error("PairedT of one pair: no error")
	}
	if r, _ := PairedT([]float64{0, 0, 0}); r.P != 1 {
		t.Errorf("PairedT of zeros: p = %g, want 1", r.P)
	}
}

func TestWilcoxonKnownValues(t *testing.T) {
	d, _ := Differences(hwX, hwY)
	res, err := Wilcoxon(d)
	if err != nil {
		t.Fatal(err)
	}
	near(t, "V", res.Statistic, 40, 0)
	near(t, "p", res.P, 0.0390625, 1e-9) // 20/512
	if res.Method != "Wilcoxon signed-rank (exact)" {
		t.Errorf("method %q", res.Method)
	}
	// With ties: normal approximation. d = 1,1,2,2,2,-3 (zeros dropped).
	res, _ = Wilcoxon([]float64{1, 1, 0, 2, 2, 2, -3})
	// ranks: 1.5,1.5,4,4,4,6; V = 15; mu = 10.5; var = 6·7·13/24 - (6+24)/48 = 22.125
	near(t, "V ties", res.Statistic, 15, 0)
	near(t, "p ties", res.P, math.Erfc((4.5-0.5)/math.Sqrt(22.125)/math.Sqrt2), 1e-12)
	if res.N != 6 {
		t.Errorf("N = %d, want 6 (zero dropped)", res.N)
	}
	if r, _ := Wilcoxon([]float64{0, 0}); r.P != 1 {
		t.Errorf("all zero: p = %g", r.P)
	}
}

func TestMcNemarKnownValues(t *testing.T) {
	near(t, "10 vs 2", McNemarExact(10, 2), 2*79.0/4096, 1e-12)
	near(t, "2 vs 10", McNemarExact(2, 10), 2*79.0/4096, 1e-12)
	near(t, "0 vs 0", McNemarExact(0, 0), 1, 0)
	near(t, "5 vs 5", McNemarExact(5, 5), 1, 0)
	near(t, "0 vs 6", McNemarExact(0, 6), 2.0/64, 1e-12)
}

func TestHolm(t *testing.T) {
	got := Holm([]float64{0.01, 0.04, 0.03, 0.5})
	want := []float64{0.04, 0.09, 0.09, 0.5}
	for i := range want {
		near(t, "holm", got[i], want[i], 1e-12)
	}
	if len(Holm(nil)) != 0 {
		t.Error("Holm(nil) not empty")
	}
}

func TestBootstrapReproducible(t *testing.T) {
	a := []float64{1, 1, 0, 1, 0, 1, 1, 1, 0, 1}
	b := []float64{0, 1, 0, 0, 0, 1, 1, 0, 0, 1}
	x, err := BootstrapMeanDiff(a, b, 2000, 7, 0.95)
	if err != nil {
		t.Fatal(err)
	}
	y, _ := BootstrapMeanDiff(a, b, 2000, 7, 0.95)
	if x != y {
		t.Fatalf("same seed, different intervals: %+v %+v", x, y)
	}
	near(t, "estimate", x.Estimate, 0.3, 1e-12)
	if !(x.Low < 0.3 && 0.3 < x.High) || x.Low < -1 || x.High > 1 {
		t.Errorf("interval %+v", x)
	}
	if _, err := BootstrapMeanDiff(a, b[:3], 10, 1, 0.95); err == nil {
		t.Error("mismatched lengths: no error")
	}
	if _, err := BootstrapMeanDiff(nil, nil, 10, 1, 0.95); err == nil {
		t.Error("no pairs: no error")
	}
}

// simulatePairs draws n items, each answered right by A with probability
// pa and by B with pb, independently.
func simulatePairs(rng *rand.Rand, n int, pa, pb float64) (a, b []float64, aOnly, bOnly int) {
	a, b = make([]float64, n), make([]float64, n)
	for i := range n {
		if rng.Float64() < pa {
			a[i] = 1
		}
		if rng.Float64() < pb {
			b[i] = 1
		}
		switch {
		case a[i] > b[i]:
			aOnly++
		case a[i] < b[i]:
			bOnly++
		}
	}
	return
}

// TestBootstrapCoverage: over 200 seeded repetitions of 100 paired 0/1
// items with accuracies 0.8 and 0.65, the 95% paired bootstrap interval
// covers the true difference 0.15 in at least 90% of them.
func TestBootstrapCoverage(t *testing.T) {
	const reps, n, pa, pb = 200, 100, 0.8, 0.65
	rng := rand.New(rand.NewPCG(20, 1))
	covered := 0
	for r := range reps {
		a, b, _, _ := simulatePairs(rng, n, pa, pb)
		iv, err := BootstrapMeanDiff(a, b, 500, uint64(r), 0.95)
		if err != nil {
			t.Fatal(err)
		}
		if iv.Low <= pa-pb && pa-pb <= iv.High {
			covered++
		}
	}
	t.Logf("bootstrap 95%% interval covered the true difference in %d of %d repetitions", covered, reps)
	if covered < reps*90/100 {
		t.Errorf("coverage %d/%d, want at least 90%%", covered, reps)
	}
}

// mcnemarPower is the exact probability that McNemarExact rejects at alpha
// with n items whose discordant cells have probabilities p10 and p01: the
// number of discordant items is Binomial(n, p10+p01), and of those, the
// A-only ones are Binomial(k, p10/(p10+p01)).
func mcnemarPower(n int, p10, p01, alpha float64) float64 {
	pd := p10 + p01
	q := p10 / pd
	power := 0.0
	for k := 0; k <= n; k++ {
		pk := math.Exp(logChoose(n, k) + float64(k)*math.Log(pd) + float64(n-k)*math.Log1p(-pd))
		for j := 0; j <= k; j++ {
			if McNemarExact(j, k-j) < alpha {
				power += pk * math.Exp(logChoose(k, j)+float64(j)*math.Log(q)+float64(k-j)*math.Log1p(-q))
			}
		}
	}
	return power
}

// TestMcNemarRejectionRates: with a known difference (0.8 vs 0.6) the
// simulated rejection rate matches the exactly computed power within
// sampling error, and with none (0.7 vs 0.7) it stays at or under 5% plus
// slack (the exact test is conservative).
func TestMcNemarRejectionRates(t *testing.T) {
	const reps, n = 200, 100
	rng := rand.New(rand.NewPCG(20, 2))
	rate := func(pa, pb float64) float64 {
		rejected := 0
		for range reps {
			_, _, x, y := simulatePairs(rng, n, pa, pb)
			if McNemarExact(x, y) < 0.05 {
				rejected++
			}
		}
		return float64(rejected) / reps
	}
	want := mcnemarPower(n, 0.8*0.4, 0.2*0.6, 0.05)
	got := rate(0.8, 0.6)
	se := math.Sqrt(want * (1 - want) / reps)
	t.Logf("McNemar at 0.8 vs 0.6, n=%d: rejected %.3f of %d, expected power %.3f", n, got, reps, want)
	if math.Abs(got-want) > 3.5*se {
		t.Errorf("rejection rate %.3f, expected %.3f ± %.3f", got, want, 3.5*se)
	}
	null := rate(0.7, 0.7)
	size := mcnemarPower(n, 0.21, 0.21, 0.05)
	t.Logf("McNemar under the null, n=%d: rejected %.3f (exact size %.3f)", n, null, size)
	if size > 0.05 {
		t.Errorf("exact size %.3f above 5%%", size)
	}
	if null > 0.05+0.035 {
		t.Errorf("rejection rate under the null %.3f, want at most about 5%%", null)
	}
}

// TestTAndWilcoxonSize: graded scores with no difference rarely reject.
func TestTAndWilcoxonSize(t *testing.T) {
	rng := rand.New(rand.NewPCG(20, 3))
	const reps, n = 200, 40
	tRej, wRej, shiftT, shiftW := 0, 0, 0, 0
	for range reps {
		d := make([]float64, n)
		s := make([]float64, n)
		for i := range d {
			d[i] = rng.NormFloat64()
			s[i] = d[i] + 0.6
		}
		if r, _ := PairedT(d); r.P < 0.05 {
			tRej++
		}
		if r, _ := Wilcoxon(d); r.P < 0.05 {
			wRej++
		}
		if r, _ := PairedT(s); r.P < 0.05 {
			shiftT++
		}
		if r, _ := Wilcoxon(s); r.P < 0.05 {
			shiftW++
		}
	}
	t.Logf("null: t rejected %d, Wilcoxon %d of %d; shift 0.6 sd: t %d, Wilcoxon %d", tRej, wRej, reps, shiftT, shiftW)
	if tRej > 18 || wRej > 18 {
		t.Errorf("null rejections t=%d wilcoxon=%d of %d, want about 10", tRej, wRej, reps)
	}
	// Power at n=40 and a shift of 0.6 sd is about 0.95 for t.
	if shiftT < 170 || shiftW < 165 {
		t.Errorf("shift rejections t=%d wilcoxon=%d of %d, want most", shiftT, shiftW, reps)
	}
}

// TestClusteredBootstrap: with one pair per cluster it is the plain
// bootstrap; with clusters of identical pairs (a sample repeated), its
// interval is as wide as the items alone give, where the plain bootstrap's
// narrows as if there were more items.
func TestClusteredBootstrap(t *testing.T) {
	rng := rand.New(rand.NewPCG(20, 4))
	a, b, _, _ := simulatePairs(rng, 60, 0.7, 0.5)
	ids := make([]int, len(a))
	for i := range ids {
		ids[i] = i
	}
	plain, _ := BootstrapMeanDiff(a, b, 2000, 5, 0.95)
	single, err := BootstrapClusteredMeanDiff(a, b, ids, 2000, 5, 0.95)
	if err != nil {
		t.Fatal(err)
	}
	if plain != single {
		t.Errorf("singleton clusters %+v, plain %+v", single, plain)
	}
	var a4, b4 []float64
	var c4 []int
	for i := range a {
		for range 4 {
			a4, b4, c4 = append(a4, a[i]), append(b4, b[i]), append(c4, i)
		}
	}
	naive, _ := BootstrapMeanDiff(a4, b4, 2000, 5, 0.95)
	clustered, _ := BootstrapClusteredMeanDiff(a4, b4, c4, 2000, 5, 0.95)
	wc, wn, w1 := clustered.High-clustered.Low, naive.High-naive.Low, plain.High-plain.Low
	t.Logf("widths: items alone %.3f, repeated ×4 clustered %.3f, naive %.3f", w1, wc, wn)
	if math.Abs(wc-w1) > 0.25*w1 || wn > 0.7*w1 {
		t.Errorf("widths: items alone %.3f, clustered %.3f, naive %.3f", w1, wc, wn)
	}
	if _, err := BootstrapClusteredMeanDiff(a, b, ids[:2], 10, 1, 0.95); err == nil {
		t.Error("mismatched clusters: no error")
	}
}
