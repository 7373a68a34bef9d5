package calls

import (
	"fmt"
	"strings"
)

// Counts say where a run's model calls were answered from.
type Counts struct {
	// Network calls were sent to an endpoint by this run.
	Network int `json:"network"`
	// Cache calls were answered from the response cache.
	Cache int `json:"cache"`
	// Shared calls waited for an identical call of another run (or of this
	// one) that was in flight, and took its reply.
	Shared int `json:"shared"`
	// Replay calls came from the recording given with --replay.
	Replay int `json:"replay"`
	// Journal calls came from this run's own journal (resume).
	Journal int `json:"journal"`
	// Resampled of the calls above were asked afresh with resume
	// --resample instead of being served their journaled reply.
	Resampled int `json:"resampled,omitempty"`
	// Human are the turns of agents a person plays that were given a
	// message in this attempt (no model call; not in Total). Those given
	// before are served from the journal, a recording's from the replay.
	Human int `json:"human,omitempty"`
}

// Total is the number of calls however they were answered.
func (c Counts) Total() int { return c.Network + c.Cache + c.Shared + c.Replay + c.Journal }

// String says where the calls came from, when not all went to the model:
// "calls: 6 (2 sent, 4 from the cache); --no-cache asks the model again".
func (c Counts) String() string {
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
