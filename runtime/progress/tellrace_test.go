package progress

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand"
	"strings"
	"sync"
	"testing"
)

// TestTellersSayWholeLinesAtOnce: goroutines telling at once through
// tellers of one writer (a sweep's runs ending while its batches report)
// leave every line whole, JSON or text; under -race the writer is
// checked too.
func TestTellersSayWholeLinesAtOnce(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	for trial := 0; trial < 5; trial++ {
		var buf bytes.Buffer
		asJSON := trial%2 == 0
		goroutines, lines := 2+rng.Intn(6), 20+rng.Intn(50)
		var wg sync.WaitGroup
		for g := 0; g < goroutines; g++ {
			wg.Add(1)
			go func(g int) {
				defer wg.Done()
				tell := Teller{W: &buf, JSON: asJSON}
				for i := 0; i < lines; i++ {
					text := fmt.Sprintf("g%d line %d %s", g, i, strings.Repeat("x", i))
					tell.Say("t", map[string]string{"text": text}, text)
				}
			}(g)
		}
		wg.Wait()
		got := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
		if len(got) != goroutines*lines {
			t.Fatalf("%d lines, want %d", len(got), goroutines*lines)
		}
		for _, l := range got {
			if asJSON && !json.Valid([]byte(l)) {
				t.Fatalf("a line is not whole JSON: %q", l)
			}
			if !asJSON && !strings.HasPrefix(l, "g") {
				t.Fatalf("a line is not whole: %q", l)
			}
		}
	}
}
