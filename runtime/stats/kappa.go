package stats

import "errors"

// Agreement is how far raters agree beyond chance: kappa, with the
// observed agreement and the agreement expected by chance it is made of,
// kappa = (observed − expected) / (1 − expected).
type Agreement struct {
	Kappa    float64 `json:"kappa"`
	Observed float64 `json:"observed"`
	Expected float64 `json:"expected"`
}

// ErrNoChance is returned when agreement by chance is certain (every
// rating is one and the same category), where kappa is undefined.
var ErrNoChance = errors.New("every rating is the same category: agreement by chance is certain and kappa is undefined")

// CohenKappa is Cohen's kappa of two raters who rated the same items, a[i]
// and b[i] the categories they gave item i (any ints: only equality
// matters). The observed agreement is the share of items they gave the
// same category; the chance agreement is the chance that a rating drawn
// from a's categories and one drawn from b's are the same.
func CohenKappa(a, b []int) (Agreement, error) {
	if len(a) != len(b) {
		return Agreement{}, errors.New("the raters rated different numbers of items")
	}
	if len(a) == 0 {
		return Agreement{}, errors.New("no item was rated")
	}
	n := float64(len(a))
	na, nb := map[int]int{}, map[int]int{}
	same := 0
	for i := range a {
		na[a[i]]++
		nb[b[i]]++
		if a[i] == b[i] {
			same++
		}
	}
	pe := 0.0
	for c, x := range na {
		pe += float64(x) / n * float64(nb[c]) / n
	}
	return agreement(float64(same)/n, pe)
}

// FleissKappa is Fleiss' kappa of ratings[i], the categories every rater
// gave item i (the same number of raters, at least 2, for every item;
// which rater gave which rating does not matter). The observed agreement
// is the mean over items of the share of ordered pairs of an item's
// raters that agree; the chance agreement is the chance that two ratings
// drawn from all the ratings given are the same.
func FleissKappa(ratings [][]int) (Agreement, error) {
	if len(ratings) == 0 {
		return Agreement{}, errors.New("no item was rated")
	}
	m := len(ratings[0])
	if m < 2 {
		return Agreement{}, errors.New("kappa needs at least two raters per item")
	}
	total := map[int]int{}
	po := 0.0
	for _, item := range ratings {
		if len(item) != m {
			return Agreement{}, errors.New("the items have different numbers of ratings")
		}
		counts := map[int]int{}
		for _, c := range item {
			counts[c]++
			total[c]++
		}
		pairs := 0
		for _, x := range counts {
			pairs += x * (x - 1)
		}
		po += float64(pairs) / float64(m*(m-1))
	}
	po /= float64(len(ratings))
	all := float64(len(ratings) * m)
	pe := 0.0
	for _, x := range total {
		p := float64(x) / all
		pe += p * p
	}
	return agreement(po, pe)
}

func agreement(po, pe float64) (Agreement, error) {
	a := Agreement{Observed: po, Expected: pe}
	if pe >= 1-1e-12 {
		return a, ErrNoChance
	}
	a.Kappa = (po - pe) / (1 - pe)
	return a, nil
}
