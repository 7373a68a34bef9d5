package answers

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"

	"github.com/debate-runner/runner/runtime/rundir"
)

// TurnsFile is the file of a waiting run's folder that holds the turns
// it waits for a person to take (agents declared human: true), beside
// questions.yaml, which asks for them by the same ids.
const TurnsFile = "turns.json"

// TurnPrefix starts the question that asks for a seat's turn (the
// terminal shows it as a turn, not as a question).
const TurnPrefix = "your turn: "

// Turn is a turn of an agent a person plays that a run waits for: the
// question id its message is given under (the turn's call key), whose
// turn it is and where, and the prompt the agent's model would have been
// sent, history and whispers as the agent sees them.
type Turn struct {
	ID       string        `json:"id"`
	Agent    string        `json:"agent"`
	Node     string        `json:"node"`
	Round    int           `json:"round,omitempty"`
	Goal     string        `json:"goal,omitempty"`
	Messages []TurnMessage `json:"messages"`
}

// TurnMessage is one message of a turn's prompt.
type TurnMessage struct {
	Role    string `json:"role"`
	Name    string `json:"name,omitempty"`
	Content string `json:"content"`
}

// WriteTurns writes the turns a run waits for to path, atomically; with
// none, it removes the file a run that waited before left.
func WriteTurns(path string, turns []Turn) error {
	if len(turns) == 0 {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	data, err := json.MarshalIndent(map[string]any{"turns": turns}, "", "  ")
	if err != nil {
		return err
	}
	return rundir.WriteFile(path, append(data, '\n'))
}

// ReadTurns reads a turns file; none when there is no file.
func ReadTurns(path string) ([]Turn, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var doc struct {
		Turns []Turn `json:"turns"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	return doc.Turns, nil
}
