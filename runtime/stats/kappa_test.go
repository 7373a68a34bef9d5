package stats

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

// ratingTable draws a table of items × raters ratings over k categories:
// each item has a "true" category, and each rater gives it with chance
// agree, else a category at random, so tables range from chance to
// perfect agreement.
func ratingTable(rng *rand.Rand) (table [][]int, k int) {
	items, raters := 1+rng.IntN(40), 2+rng.IntN(5)
	k = 1 + rng.IntN(5)
	agree := rng.Float64()
	for range items {
		truth := rng.IntN(k)
		row := make([]int, raters)
		for j := range row {
			if rng.Float64() < agree {
				row[j] = truth
			} else {
				row[j] = rng.IntN(k)
			}
		}
		table = append(table, row)
	}
	return table, k
}

func column(table [][]int, j int) []int {
	out := make([]int, len(table))
	for i, row := range table {
		out[i] = row[j]
	}
	return out
}

// cohenByPairs is Cohen's kappa from its definition, by enumeration: the
// observed agreement counts agreeing items, the chance agreement counts,
// over every pair (a rating of a, a rating of b) of all n×n, those that
// agree.
func cohenByPairs(a, b []int) (po, pe float64) {
	n := float64(len(a))
	for i := range a {
		if a[i] == b[i] {
			po++
		}
		for j := range b {
			if a[i] == b[j] {
				pe++
			}
		}
	}
	return po / n, pe / (n * n)
}

// fleissByPairs is Fleiss' kappa from its definition, by enumeration:
// each item's agreement is over its ordered pairs of distinct raters, the
// chance agreement over every ordered pair (with repetition) of all the
// ratings given.
func fleissByPairs(table [][]int) (po, pe float64) {
	var all []int
	for _, row := range table {
		m := len(row)
		agree := 0
		for j := range row {
			for l := range row {
				if j != l && row[j] == row[l] {
					agree++
				}
			}
		}
		po += float64(agree) / float64(m*(m-1))
		all = append(all, row...)
	}
	for _, x := range all {
		for _, y := range all {
			if x == y {
				pe++
			}
		}
	}
	n := float64(len(all))
	return po / float64(len(table)), pe / (n * n)
}

func close9(a, b float64) bool { return math.Abs(a-b) <= 1e-9 }

// checkKappa checks a kappa against the observed and chance agreement
// the definition gives.
func checkKappa(t *testing.T, what string, got Agreement, err error, po, pe float64) {
	t.Helper()
	if pe >= 1-1e-12 {
		if !errors.Is(err, ErrNoChance) {
			t.Fatalf("%s: chance agreement %v, want ErrNoChance, got %+v, %v", what, pe, got, err)
		}
		return
	}
	want := (po - pe) / (1 - pe)
	if err != nil || !close9(got.Observed, po) || !close9(got.Expected, pe) || !close9(got.Kappa, want) {
		t.Fatalf("%s: %+v, %v; by definition observed %v, chance %v, kappa %v", what, got, err, po, pe, want)
	}
	if got.Kappa > 1+1e-12 {
		t.Fatalf("%s: kappa %v above 1", what, got.Kappa)
	}
}

// TestKappaByDefinition compares both kappas with their definitions,
// computed by enumerating pairs, on generated rating tables.
func TestKappaByDefinition(t *testing.T) {
	rng := rand.New(rand.NewPCG(37, 5))
	for range 2000 {
		table, _ := ratingTable(rng)
		a, b := column(table, 0), column(table, 1)
		got, err := CohenKappa(a, b)
		po, pe := cohenByPairs(a, b)
		checkKappa(t, "cohen", got, err, po, pe)
		fg, ferr := FleissKappa(table)
		po, pe = fleissByPairs(table)
		checkKappa(t, "fleiss", fg, ferr, po, pe)
	}
}

// TestKappaInvariants checks what kappa must do whatever the ratings:
// perfect agreement is 1, Cohen's is symmetric, neither depends on the
// names of the categories, Fleiss' not on the order of items nor of an
// item's raters, and with two raters whose ratings have the same
// distribution Cohen's and Fleiss' are one number.
func TestKappaInvariants(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 3))
	for range 2000 {
		table, k := ratingTable(rng)
		a, b := column(table, 0), column(table, 1)
		ab, errAB := CohenKappa(a, b)
		ba, errBA := CohenKappa(b, a)
		if (errAB == nil) != (errBA == nil) || !close9(ab.Kappa, ba.Kappa) {
			t.Fatalf("cohen not symmetric: %+v %v / %+v %v", ab, errAB, ba, errBA)
		}

		// Categories renamed by a permutation (shifted, so names change).
		perm := rng.Perm(k)
		rename := func(xs []int) []int {
			out := make([]int, len(xs))
			for i, x := range xs {
				out[i] = 100 + perm[x]
			}
			return out
		}
		ren, errRen := CohenKappa(rename(a), rename(b))
		if (errRen == nil) != (errAB == nil) || !close9(ren.Kappa, ab.Kappa) {
			t.Fatalf("cohen changed with category names: %+v vs %+v", ren, ab)
		}
		f, errF := FleissKappa(table)
		var shuffled [][]int
		for _, i := range rng.Perm(len(table)) {
			row := rename(table[i])
			rng.Shuffle(len(row), func(x, y int) { row[x], row[y] = row[y], row[x] })
			shuffled = append(shuffled, row)
		}
		fs, errFS := FleissKappa(shuffled)
		if (errF == nil) != (errFS == nil) || !close9(f.Kappa, fs.Kappa) {
			t.Fatalf("fleiss changed with item order, rater order or category names: %+v vs %+v", f, fs)
		}

		// Perfect agreement: every rater gives the first rater's rating.
		perfect := make([][]int, len(table))
		for i := range table {
			perfect[i] = make([]int, len(table[i]))
			for j := range perfect[i] {
				perfect[i][j] = table[i][0]
			}
		}
		first := column(table, 0)
		pc, errPC := CohenKappa(first, first)
		pf, errPF := FleissKappa(perfect)
		oneCategory := true
		for _, x := range first {
			oneCategory = oneCategory && x == first[0]
		}
		if oneCategory {
			if !errors.Is(errPC, ErrNoChance) || !errors.Is(errPF, ErrNoChance) {
				t.Fatalf("one category throughout: %v, %v", errPC, errPF)
			}
		} else if errPC != nil || errPF != nil || !close9(pc.Kappa, 1) || !close9(pf.Kappa, 1) {
			t.Fatalf("perfect agreement: cohen %+v %v, fleiss %+v %v", pc, errPC, pf, errPF)
		}

		// Same distribution: b is a shuffle of a.
		shuf := append([]int(nil), a...)
		rng.Shuffle(len(shuf), func(x, y int) { shuf[x], shuf[y] = shuf[y], shuf[x] })
		pairs := make([][]int, len(a))
		for i := range a {
			pairs[i] = []int{a[i], shuf[i]}
		}
		c2, errC2 := CohenKappa(a, shuf)
		f2, errF2 := FleissKappa(pairs)
		if (errC2 == nil) != (errF2 == nil) || !close9(c2.Kappa, f2.Kappa) {
			t.Fatalf("same marginals: cohen %+v %v, fleiss %+v %v", c2, errC2, f2, errF2)
		}
	}
}

func TestKappaBadInput(t *testing.T) {
	if _, err := CohenKappa([]int{1}, []int{1, 2}); err == nil {
		t.Error("cohen took raters of different lengths")
	}
	if _, err := CohenKappa(nil, nil); err == nil {
		t.Error("cohen took no items")
	}
	if _, err := FleissKappa([][]int{{1, 2}, {1}}); err == nil {
		t.Error("fleiss took items with different numbers of ratings")
	}
	if _, err := FleissKappa([][]int{{1}}); err == nil {
		t.Error("fleiss took one rater")
	}
}
