// Command gen writes an arithmetic dataset for the reasoning-debate example:
// JSON lines with a question "What is the result of a+b*c+d-e*f?" over
// two-digit numbers and its expected answer, the task of the arithmetic
// experiment in the multi-agent debate study of Du et al. (2023). The same
// -seed always gives the same lines.
//
//	go run ./examples/reasoning-debate/gen -n 20 -seed 1 > dataset.jsonl
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
)

// Item is one line of the dataset.
type Item struct {
	Question string `json:"question"`
	Expected int    `json:"expected"`
}

// Generate returns n problems drawn from a generator seeded with seed.
func Generate(n int, seed uint64) []Item {
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	two := func() int { return 10 + rng.IntN(90) }
	items := make([]Item, n)
	for i := range items {
		a, b, c, d, e, f := two(), two(), two(), two(), two(), two()
		items[i] = Item{
			Question: fmt.Sprintf("What is the result of %d+%d*%d+%d-%d*%d?", a, b, c, d, e, f),
			Expected: a + b*c + d - e*f,
		}
	}
	return items
}

// write prints items as JSON lines.
func write(w io.Writer, items []Item) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	for _, it := range items {
		if err := enc.Encode(it); err != nil {
			return err
		}
	}
	return bw.Flush()
}

func main() {
	n := flag.Int("n", 20, "number of problems")
	seed := flag.Uint64("seed", 1, "random seed")
	flag.Parse()
	if *n < 1 {
		fmt.Fprintln(os.Stderr, "gen: -n must be at least 1")
		os.Exit(2)
	}
	if err := write(os.Stdout, Generate(*n, *seed)); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}
