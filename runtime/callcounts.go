package runtime

import (
	"fmt"
	"strings"
)

// String says where the calls came from, when not all went to the model:
// "calls: 6 (2 sent, 4 from the cache); --no-cache asks the model again".
func (c CallCounts) String() string {
	var parts []string
	sent := fmt.Sprintf("%d sent", c.Network)
	if c.Resampled > 0 {
		sent += fmt.Sprintf(" of which %d asked afresh (--resample)", c.Resampled)
	}
	parts = append(parts, sent)
	if c.Cache > 0 {
		parts = append(parts, fmt.Sprintf("%d from the cache", c.Cache))
	}
	if c.Shared > 0 {
		parts = append(parts, fmt.Sprintf("%d shared", c.Shared))
	}
	if c.Replay > 0 {
		parts = append(parts, fmt.Sprintf("%d replayed", c.Replay))
	}
	if c.Journal > 0 {
		parts = append(parts, fmt.Sprintf("%d from the journal", c.Journal))
	}
	hint := ""
	if c.Cache > 0 {
		hint = "; --no-cache asks the model again"
	}
	return fmt.Sprintf("calls: %d (%s)%s", c.Total(), strings.Join(parts, ", "), hint)
}
