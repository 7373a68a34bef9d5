package rundir

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/debate-runner/runner/spec"
)

// Manifest is run.json: everything needed to reproduce or resume a run.
type Manifest struct {
	RunID           string                         `json:"run_id"`
	SpecPath        string                         `json:"spec_path"`
	SpecName        string                         `json:"spec_name"`
	SpecDigest      string                         `json:"spec_digest"`
	TemplateSources map[string]spec.TemplateSource `json:"template_sources"`
	Inputs          map[string]any                 `json:"inputs"`
	Vars            map[string]any                 `json:"vars"`
	Seed            int64                          `json:"seed"`
	RunnerVersion   string                         `json:"runner_version"`
	GoVersion       string                         `json:"go_version"`
	Platform        string                         `json:"platform,omitempty"`
	Models          map[string]ModelInfo           `json:"models"`
	Created         time.Time                      `json:"created"`
	// Sample is the sample index of a repeated run (part of cache keys).
	Sample int `json:"sample,omitempty"`
	// Expected is the value the score compared the outputs with.
	Expected any `json:"expected,omitempty"`
	// Sweep is the id of the sweep the run belongs to.
	Sweep string `json:"sweep,omitempty"`
	// ReplayedFrom is the recording the run's calls were served from.
	ReplayedFrom string `json:"replayed_from,omitempty"`
	// Cache says whether responses could come from the response cache.
	Cache bool `json:"cache,omitempty"`
}

// ModelInfo records a model's parameters in the manifest (never keys).
type ModelInfo struct {
	Model      string `json:"model"`
	Endpoint   string `json:"endpoint"`
	BaseURL    string `json:"base_url"`
	Kind       string `json:"kind,omitempty"`
	APIVersion string `json:"api_version,omitempty"`
	Deployment string `json:"deployment,omitempty"`
	// MaxTokensField is the token-limit field asked for ("" picks by model
	// name); the client may learn another from the endpoint's refusal.
	MaxTokensField  string          `json:"max_tokens_field,omitempty"`
	Temperature     *float64        `json:"temperature,omitempty"`
	TopP            *float64        `json:"top_p,omitempty"`
	MaxTokens       int             `json:"max_tokens,omitempty"`
	Seed            *int            `json:"seed,omitempty"`
	Stream          bool            `json:"stream,omitempty"`
	ReasoningEffort string          `json:"reasoning_effort,omitempty"`
	JSONMode        string          `json:"json_mode,omitempty"`
	Omit            []string        `json:"omit,omitempty"`
	Extra           json.RawMessage `json:"extra,omitempty"`
	// Price is per million tokens, as the spec declares it.
	Price *PriceInfo `json:"price,omitempty"`
}

// PriceInfo is a model's price per million tokens in the manifest.
type PriceInfo struct {
	Prompt     float64 `json:"prompt"`
	Completion float64 `json:"completion"`
}

// ReadManifest reads a run directory's run.json.
func ReadManifest(dir string) (Manifest, error) {
	var m Manifest
	data, err := os.ReadFile(filepath.Join(dir, "run.json"))
	if err != nil {
		return m, err
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return m, fmt.Errorf("%s: %w", filepath.Join(dir, "run.json"), err)
	}
	return m, nil
}

// WriteManifest writes a run directory's run.json atomically.
func WriteManifest(dir string, m Manifest) error {
	return WriteJSON(filepath.Join(dir, "run.json"), m)
}
