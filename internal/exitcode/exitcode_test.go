package exitcode

import (
	"errors"
	"fmt"
	"testing"
)

type budgetish struct{}

func (budgetish) Error() string { return "over budget" }
func (budgetish) ExitCode() int { return Budget }

func TestOf(t *testing.T) {
	sentinel := New(Waiting, "waiting")
	for _, tc := range []struct {
		name string
		err  error
		want int
	}{
		{"nil", nil, OK},
		{"plain", errors.New("boom"), Failure},
		{"own type", budgetish{}, Budget},
		{"wrapped", fmt.Errorf("run: %w", budgetish{}), Budget},
		{"outer wins", With(Failure, fmt.Errorf("csv: %w", budgetish{})), Failure},
		{"sentinel", fmt.Errorf("node x: %w", sentinel), Waiting},
		{"joined", errors.Join(errors.New("a"), budgetish{}), Budget},
		{"errorf", Errorf(Usage, "--x %d", 3), Usage},
	} {
		if got := Of(tc.err); got != tc.want {
			t.Errorf("%s: Of(%v) = %d, want %d", tc.name, tc.err, got, tc.want)
		}
	}
	if !errors.Is(fmt.Errorf("x: %w", sentinel), sentinel) {
		t.Error("a sentinel made with New is not found by errors.Is")
	}
	if With(Usage, nil) != nil {
		t.Error("With(code, nil) is not nil")
	}
	if got := Errorf(Usage, "--x %d", 3).Error(); got != "--x 3" {
		t.Errorf("Errorf text %q", got)
	}
}
