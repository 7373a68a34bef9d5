package kit

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
)

// TestParallelWaitingLetsOthersFinish: over random mixes of tasks that
// succeed, wait for a person (ErrWaiting) or fail, one that waits stops
// none of the others (their replies are journaled for the resume), a
// failure still stops those not yet done and is what Parallel returns
// over a wait, and a wait is returned when nothing failed.
func TestParallelWaitingLetsOthersFinish(t *testing.T) {
	failure := errors.New("failed")
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 5))
		n := 1 + rng.IntN(6)
		kinds := make([]int, n) // 0 succeeds, 1 waits, 2 fails
		for i := range kinds {
			kinds[i] = rng.IntN(3)
			if rng.IntN(2) == 0 {
				kinds[i] = min(kinds[i], 1) // failures rarer
			}
		}
		waits := 0
		for _, k := range kinds {
			waits += boolInt(k == 1)
		}
		// Successes go on once every wait has been returned: had a wait
		// cancelled the others, they would see it.
		var waited atomic.Int32
		allWaited := make(chan struct{})
		if waits == 0 {
			close(allWaited)
		}
		var finished atomic.Int32
		err := Parallel(context.Background(), n, func(ctx context.Context, i int) error {
			switch kinds[i] {
			case 1:
				defer func() {
					if int(waited.Add(1)) == waits {
						close(allWaited)
					}
				}()
				return fmt.Errorf("turn %d: %w", i, ErrWaiting)
			case 2:
				return failure
			}
			<-allWaited
			if ctx.Err() != nil {
				return ctx.Err()
			}
			finished.Add(1)
			return nil
		})
		fails, oks := 0, 0
		for _, k := range kinds {
			fails += boolInt(k == 2)
			oks += boolInt(k == 0)
		}
		switch {
		case fails > 0:
			if !errors.Is(err, failure) {
				t.Fatalf("seed %d %v: %v, want the failure", seed, kinds, err)
			}
		case waits > 0:
			if !errors.Is(err, ErrWaiting) || int(finished.Load()) != oks {
				t.Fatalf("seed %d %v: %v with %d of %d finished, want ErrWaiting and all finished", seed, kinds, err, finished.Load(), oks)
			}
		default:
			if err != nil || int(finished.Load()) != oks {
				t.Fatalf("seed %d %v: %v", seed, kinds, err)
			}
		}
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
