// Package paired compares two sweeps over the same dataset item by item: the
// runs of each are paired by dataset line (and sample), the difference of
// their accuracies gets a paired bootstrap interval and a test that uses the
// pairing (exact McNemar for 0/1 scores, paired t and Wilcoxon for graded
// ones), and cost, tokens, calls and time per item are set side by side.
// Items one sweep has and the other lacks, or scored on one side only, are
// listed rather than dropped. It reads sweep summaries and run journals; it
// runs nothing.
package paired

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"

	"github.com/debate-runner/runner/runtime/journal"
	"github.com/debate-runner/runner/runtime/stats"
	"github.com/debate-runner/runner/runtime/sweep"
)

// Options configure the comparison.
type Options struct {
	// Resamples of the bootstrap (default 10000).
	Resamples int
	// Seed of the bootstrap's generator (default 1): the same sweeps and
	// seed give the same interval.
	Seed uint64
}

// Side is one sweep of the comparison.
type Side struct {
	Dir  string `json:"dir"`
	ID   string `json:"id"`
	Spec string `json:"spec"`
	// Cell is the matrix cell the side takes of a matrix sweep
	// (NAME=VALUE,...; see SelectCell), empty for a sweep without one.
	Cell string `json:"cell,omitempty"`
	// Runs are the sweep's runs; Items its distinct dataset items.
	Runs  int `json:"runs"`
	Items int `json:"items"`
	// Accuracy is over the paired items only, so that both sides are
	// measured on the same questions (Wilson's interval for 0/1 scores).
	Accuracy *sweep.Accuracy `json:"accuracy,omitempty"`
	// SweepAccuracy is the sweep's own, over all its scored runs.
	SweepAccuracy *sweep.Accuracy `json:"sweep_accuracy,omitempty"`
	// Per item: mean over the sweep's finished runs.
	CostPerItem    float64 `json:"cost_per_item"`
	Priced         bool    `json:"priced"`
	TokensPerItem  float64 `json:"tokens_per_item"`
	CallsPerItem   float64 `json:"calls_per_item"`
	SentPerItem    float64 `json:"sent_per_item"`
	SecondsPerItem float64 `json:"seconds_per_item"`
	// CacheServed are calls answered from the response cache or by an
	// identical call in flight; FromOther those of them whose request the
	// other sweep sent to the endpoint.
	CacheServed int `json:"cache_served"`
	FromOther   int `json:"cache_served_from_other"`
	// OwnSamples is set when the sweep kept its samples its own
	// (--own-samples): it took no call from another sweep, nor gave one.
	OwnSamples bool `json:"own_samples,omitempty"`
}

// Item is one dataset item (line and sample) and how each side did on it.
type Item struct {
	Line     int      `json:"line"`
	Sample   int      `json:"sample,omitempty"`
	Expected any      `json:"expected,omitempty"`
	ScoreA   *float64 `json:"score_a,omitempty"`
	ScoreB   *float64 `json:"score_b,omitempty"`
	StatusA  string   `json:"status_a,omitempty"`
	StatusB  string   `json:"status_b,omitempty"`
	// Why the item is not paired: "only in A", "only in B", "not scored in
	// A", "not scored in B", "not scored".
	Unpaired string `json:"unpaired,omitempty"`
}

// Result is the comparison of sweep A with sweep B.
type Result struct {
	A Side `json:"a"`
	B Side `json:"b"`
	// Pairs is the number of items scored on both sides.
	Pairs int `json:"pairs"`
	// Binary is set when every paired score is 0 or 1.
	Binary bool `json:"binary"`
	// Difference is accuracy A minus accuracy B over the pairs, with its
	// paired bootstrap interval.
	Difference *stats.Interval `json:"difference,omitempty"`
	Resamples  int             `json:"resamples"`
	Seed       uint64          `json:"seed"`
	// Tests: exact McNemar for 0/1 scores; paired t and Wilcoxon otherwise.
	Tests []stats.Test `json:"tests,omitempty"`
	// Discordant and concordant counts of 0/1 pairs.
	AOnly     int `json:"a_right_b_wrong"`
	BOnly     int `json:"a_wrong_b_right"`
	BothRight int `json:"both_right"`
	BothWrong int `json:"both_wrong"`
	// Ratios are A's per-item figure over B's (0 when B's is 0).
	Ratios   Ratios `json:"ratios"`
	Unpaired []Item `json:"unpaired,omitempty"`
	Items    []Item `json:"items"`
	// Notes say what a reader must know: different expected values for a
	// line, cache sharing.
	Notes []string `json:"notes,omitempty"`
}

// Ratios of per-item figures, A over B.
type Ratios struct {
	Cost    float64 `json:"cost"`
	Tokens  float64 `json:"tokens"`
	Calls   float64 `json:"calls"`
	Seconds float64 `json:"seconds"`
}

type key struct{ line, sample int }

// Compare pairs the runs of sweeps a and b (loaded from their directories)
// by dataset line and sample and compares them.
func Compare(a, b *sweep.Summary, opts Options) (*Result, error) {
	if opts.Resamples <= 0 {
		opts.Resamples = 10000
	}
	if opts.Seed == 0 {
		opts.Seed = 1
	}
	ra, err := byItem(a)
	if err != nil {
		return nil, err
	}
	rb, err := byItem(b)
	if err != nil {
		return nil, err
	}
	res := &Result{A: side(a, len(ra)), B: side(b, len(rb)), Resamples: opts.Resamples, Seed: opts.Seed, Binary: true}
	keys := map[key]bool{}
	for k := range ra {
		keys[k] = true
	}
	for k := range rb {
		keys[k] = true
	}
	ordered := make([]key, 0, len(keys))
	for k := range keys {
		ordered = append(ordered, k)
	}
	sort.Slice(ordered, func(i, j int) bool {
		if ordered[i].line != ordered[j].line {
			return ordered[i].line < ordered[j].line
		}
		return ordered[i].sample < ordered[j].sample
	})
	var sa, sb []float64
	var lines []int // each pair's dataset line: the bootstrap's clusters
	var differentExpected []string
	for _, k := range ordered {
		x, inA := ra[k]
		y, inB := rb[k]
		it := Item{Line: k.line, Sample: k.sample}
		if inA {
			it.Expected, it.ScoreA, it.StatusA = x.Expected, x.Score, x.Status
		}
		if inB {
			it.ScoreB, it.StatusB = y.Score, y.Status
			if !inA {
				it.Expected = y.Expected
			} else if !reflect.DeepEqual(x.Expected, y.Expected) {
				differentExpected = append(differentExpected, fmt.Sprint(k.line))
			}
		}
		switch {
		case !inB:
			it.Unpaired = "only in A"
		case !inA:
			it.Unpaired = "only in B"
		case it.ScoreA == nil && it.ScoreB == nil:
			it.Unpaired = "not scored"
		case it.ScoreA == nil:
			it.Unpaired = "not scored in A"
		case it.ScoreB == nil:
			it.Unpaired = "not scored in B"
		}
		res.Items = append(res.Items, it)
		if it.Unpaired != "" {
			res.Unpaired = append(res.Unpaired, it)
			continue
		}
		u, v := *it.ScoreA, *it.ScoreB
		sa, sb, lines = append(sa, u), append(sb, v), append(lines, k.line)
		if (u != 0 && u != 1) || (v != 0 && v != 1) {
			res.Binary = false
		}
		switch {
		case u > v:
			res.AOnly++
		case u < v:
			res.BOnly++
		case u == 1:
			res.BothRight++
		default:
			res.BothWrong++
		}
	}
	if len(differentExpected) > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("the sweeps expect different answers on line(s) %s: are they over the same dataset?", strings.Join(differentExpected, ", ")))
	}
	res.Pairs = len(sa)
	repeated := false
	for _, k := range ordered {
		repeated = repeated || k.sample > 0
	}
	if repeated {
		res.Notes = append(res.Notes, "the sweeps repeat items (--repeat): each sample of a line is paired with the same sample on the other side; the interval resamples whole lines with their samples, but the tests count every sample as an independent pair, so read their p-values as somewhat optimistic")
	}
	if res.Pairs == 0 {
		res.Binary = false
		return res, nil
	}
	res.A.Accuracy, res.B.Accuracy = sweep.MeanCI(sa), sweep.MeanCI(sb)
	iv, err := stats.BootstrapClusteredMeanDiff(sa, sb, lines, opts.Resamples, opts.Seed, 0.95)
	if err != nil {
		return nil, err
	}
	res.Difference = &iv
	if res.Binary {
		res.Tests = append(res.Tests, stats.Test{Method: "exact McNemar", Statistic: float64(res.AOnly), N: res.AOnly + res.BOnly, P: stats.McNemarExact(res.AOnly, res.BOnly)})
	} else {
		res.AOnly, res.BOnly, res.BothRight, res.BothWrong = 0, 0, 0, 0
		d, _ := stats.Differences(sa, sb)
		if t, err := stats.PairedT(d); err == nil {
			res.Tests = append(res.Tests, t)
		}
		if w, err := stats.Wilcoxon(d); err == nil {
			res.Tests = append(res.Tests, w)
		}
	}
	res.Ratios = Ratios{
		Cost: ratio(res.A.CostPerItem, res.B.CostPerItem), Tokens: ratio(res.A.TokensPerItem, res.B.TokensPerItem),
		Calls: ratio(res.A.CallsPerItem, res.B.CallsPerItem), Seconds: ratio(res.A.SecondsPerItem, res.B.SecondsPerItem),
	}
	res.sharing(a, b)
	return res, nil
}

func ratio(x, y float64) float64 {
	if y == 0 {
		return 0
	}
	return x / y
}

// byItem indexes a sweep's runs by dataset line and sample.
func byItem(s *sweep.Summary) (map[key]sweep.Run, error) {
	if s.Dataset == "" {
		return nil, fmt.Errorf("%s ran no dataset: a paired comparison pairs the runs of two sweeps by dataset line", s.Dir)
	}
	out := map[key]sweep.Run{}
	for _, r := range s.Runs {
		k := key{r.Line, r.Sample}
		if _, dup := out[k]; dup {
			return nil, fmt.Errorf("%s has more than one run of dataset line %d (sample %d), one per matrix combination: a paired comparison needs one run per line and sample", s.Dir, r.Line, r.Sample)
		}
		out[k] = r
	}
	return out, nil
}

// side sums a sweep's figures per item.
func side(s *sweep.Summary, items int) Side {
	sd := Side{Dir: s.Dir, ID: s.ID, Spec: s.Spec, Cell: cellOf(s), Runs: len(s.Runs), Items: items, SweepAccuracy: s.Accuracy, Priced: true}
	finished := 0
	for _, r := range s.Runs {
		if r.Status == sweep.StatusPending {
			continue
		}
		finished++
		sd.CostPerItem += r.Usage.Cost
		sd.TokensPerItem += float64(r.Usage.PromptTokens + r.Usage.CompletionTokens)
		sd.CallsPerItem += float64(r.Usage.Calls)
		sd.SentPerItem += float64(r.Calls.Network)
		sd.SecondsPerItem += float64(r.DurationMS) / 1000
		if r.Usage.Calls > 0 && !r.Usage.Priced {
			sd.Priced = false
		}
	}
	if finished > 0 {
		f := float64(finished)
		sd.CostPerItem /= f
		sd.TokensPerItem /= f
		sd.CallsPerItem /= f
		sd.SentPerItem /= f
		sd.SecondsPerItem /= f
	}
	if sd.CallsPerItem == 0 || (sd.CostPerItem == 0 && !sd.Priced) {
		sd.Priced = false
	}
	return sd
}

// calls is what a sweep's journals say of its calls: the request digests
// it sent to an endpoint, and those answered from the cache (or shared with
// an identical call in flight).
type calls struct {
	sent   map[string]bool
	served []string
}

// journaledCalls reads the journals of a sweep's runs.
func journaledCalls(s *sweep.Summary) (calls, error) {
	c := calls{sent: map[string]bool{}}
	for _, r := range s.Runs {
		if r.Dir == "" {
			continue
		}
		dir := r.Dir
		if _, err := os.Stat(dir); err != nil {
			dir = filepath.Join(s.Dir, filepath.Base(r.Dir)) // the sweep moved
		}
		events, err := journal.Read(filepath.Join(dir, "journal.jsonl"))
		if err != nil {
			return c, err
		}
		digests := map[string]string{}
		for _, ev := range events {
			switch ev.Type {
			case "model_request":
				var req struct {
					Digest string `json:"request_digest"`
				}
				if json.Unmarshal(ev.Data, &req) == nil {
					digests[ev.Key] = req.Digest
				}
			case "model_response":
				var rep struct {
					Source string `json:"source"`
				}
				_ = json.Unmarshal(ev.Data, &rep)
				d := digests[ev.Key]
				switch rep.Source {
				case "":
					if d != "" {
						c.sent[d] = true
					}
				case "cache", "shared":
					c.served = append(c.served, d)
				}
			}
		}
	}
	return c, nil
}

// sharing counts the calls each side took from the cache, and of those the
// ones the other side sent, from the runs' journals.
func (res *Result) sharing(a, b *sweep.Summary) {
	ca, errA := journaledCalls(a)
	cb, errB := journaledCalls(b)
	if err := errors.Join(errA, errB); err != nil {
		res.Notes = append(res.Notes, "cache sharing unknown: "+err.Error())
		return
	}
	count := func(mine, other calls) (served, fromOther int) {
		for _, d := range mine.served {
			served++
			if d != "" && other.sent[d] {
				fromOther++
			}
		}
		return
	}
	res.A.CacheServed, res.A.FromOther = count(ca, cb)
	res.B.CacheServed, res.B.FromOther = count(cb, ca)
	res.A.OwnSamples, res.B.OwnSamples = a.CacheScope != "", b.CacheScope != ""
	if res.A.OwnSamples || res.B.OwnSamples {
		which := "both sweeps kept their samples their own"
		switch {
		case !res.B.OwnSamples:
			which = "A kept its samples its own"
		case !res.A.OwnSamples:
			which = "B kept its samples its own"
		}
		res.Notes = append(res.Notes, fmt.Sprintf("%s (--own-samples): no call was shared between the sweeps, so the two sides' replies are independent draws (no common random numbers)", which))
	}
	if res.A.FromOther+res.B.FromOther > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("the sweeps shared calls through the response cache: A took %d of its calls from requests B sent, B took %d from requests A sent. Identical requests get identical replies, so the shared items are answered alike on both sides (common random numbers): this pairs the comparison more tightly, and the calls were paid for once", res.A.FromOther, res.B.FromOther))
	} else if res.A.CacheServed+res.B.CacheServed > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("calls answered from the response cache: A %d, B %d, none of them sent by the other sweep", res.A.CacheServed, res.B.CacheServed))
	}
}
