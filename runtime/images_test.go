package runtime

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/debate-runner/runner/internal/llmtest"
	"github.com/debate-runner/runner/runtime/args"
	"github.com/debate-runner/runner/runtime/images"
	"github.com/debate-runner/runner/runtime/launch"
)

const imageSpec = `version: 1
name: look
inputs:
  photo: {kind: image, required: true, max_bytes: 4096}
  question: {default: "What is in the picture?"}
agents:
  a: {name: A}
templates:
  define:
    t/look: |-
      {{.Inputs.question}}
      {{.Inputs.photo}}
      Answer in one line.
nodes:
  look: {kind: ask, agents: [a], template: t/look}
flow: [look]
outputs:
  answer: nodes.look.text
`

// randomPNG is a small PNG of random pixels.
func randomPNG(t *testing.T, rng *rand.Rand) []byte {
	t.Helper()
	w, h := 1+rng.IntN(8), 1+rng.IntN(8)
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for x := range w {
		for y := range h {
			img.Set(x, y, color.RGBA{uint8(rng.IntN(256)), uint8(rng.IntN(256)), uint8(rng.IntN(256)), 255})
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// An image input, for generated images: the request carries the text
// before and after it as text parts and the image as an image_url part
// whose data URL holds the file's bytes; the run directory keeps the bytes
// by digest and nothing of the path; a replay of the run sends nothing and
// gives the same answer. A missing file, a file that is no image and one
// over max_bytes are refused naming the flag, before any call.
func TestImageInputsGoAsImageParts(t *testing.T) {
	plan := loadPlan(t, writeSpec(t, t.TempDir(), imageSpec))
	rng := rand.New(rand.NewPCG(38, 11))
	for trial := range 3 {
		data := randomPNG(t, rng)
		dir := t.TempDir()
		path := filepath.Join(dir, fmt.Sprintf("secret-name-%d.png", trial))
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		var bodies [][]byte
		srv := llmtest.New(t, func(r llmtest.Request) llmtest.Reply {
			mu.Lock()
			bodies = append(bodies, r.Body)
			mu.Unlock()
			return llmtest.Reply{Content: "a picture"}
		})
		opts := Options{Settings: Settings{Getenv: envFor(srv.URL)}, Launch: launch.Launch{Given: launch.Given{Inputs: []string{"photo=" + path}}}, Seams: Seams{Sleep: noSleep}}
		run, res, err := execute(t, plan, opts)
		if err != nil {
			t.Fatal(err)
		}
		if len(bodies) != 1 {
			t.Fatalf("%d requests", len(bodies))
		}
		var body struct {
			Messages []struct {
				Content []struct {
					Type     string `json:"type"`
					Text     string `json:"text"`
					ImageURL struct {
						URL string `json:"url"`
					} `json:"image_url"`
				} `json:"content"`
			} `json:"messages"`
		}
		if err := json.Unmarshal(bodies[0], &body); err != nil {
			t.Fatalf("request: %v\n%s", err, bodies[0])
		}
		parts := body.Messages[len(body.Messages)-1].Content
		wantURL := "data:image/png;base64," + base64.StdEncoding.EncodeToString(data)
		if len(parts) != 3 || parts[0].Type != "text" || !strings.HasPrefix(parts[0].Text, "What is in the picture?") ||
			parts[1].Type != "image_url" || parts[1].ImageURL.URL != wantURL || parts[2].Type != "text" || !strings.Contains(parts[2].Text, "Answer in one line.") {
			t.Fatalf("trial %d: parts %+v", trial, parts)
		}
		// The bytes are in the run directory by digest; the path is in
		// no file of it.
		kept, _ := filepath.Glob(filepath.Join(run.Dir, "images", "*.png"))
		if len(kept) != 1 {
			t.Fatalf("images kept: %v", kept)
		}
		if b, _ := os.ReadFile(kept[0]); !bytes.Equal(b, data) {
			t.Errorf("the kept image differs from the file")
		}
		_ = filepath.Walk(run.Dir, func(p string, info os.FileInfo, err error) error {
			if err == nil && info.Mode().IsRegular() {
				if b, _ := os.ReadFile(p); bytes.Contains(b, []byte("secret-name")) {
					t.Errorf("%s holds the image's path", p)
				}
			}
			return nil
		})
		// A replay, in a process that holds the image only in the
		// recording's directory, sends nothing and answers the same.
		images.Drop()
		replies, err := LoadReplay(run.Dir)
		if err != nil {
			t.Fatal(err)
		}
		inputs := map[string]any{}
		for k, v := range run.inputs {
			inputs[k] = v
		}
		ro := Options{Settings: Settings{Getenv: envFor(srv.URL)}, Launch: launch.Launch{Given: launch.Given{InputValues: inputs}, Recording: launch.Recording{Replay: replies, ReplayFrom: run.Dir}}, Seams: Seams{Sleep: noSleep}}
		_, replayed, err := execute(t, plan, ro)
		if err != nil {
			t.Fatalf("replay: %v", err)
		}
		if len(bodies) != 1 || replayed.Outputs["answer"] != res.Outputs["answer"] {
			t.Errorf("replay: %d more requests, answer %v", len(bodies)-1, replayed.Outputs["answer"])
		}
	}
	// Bad files, refused naming the flag.
	dir := t.TempDir()
	text := filepath.Join(dir, "notes.png")
	big := filepath.Join(dir, "big.png")
	_ = os.WriteFile(text, []byte("just some words"), 0o600)
	var large []byte
	for len(large) <= 4096 {
		large = append(large, randomPNG(t, rng)...)
	}
	_ = os.WriteFile(big, large, 0o600)
	for _, tc := range []struct{ value, want string }{
		{filepath.Join(dir, "missing.png"), "no such file"},
		{text, "not an image"},
		{big, "at most 4096"},
	} {
		_, _, err := execute(t, plan, Options{Launch: launch.Launch{Given: launch.Given{Inputs: []string{"photo=" + tc.value}}}})
		fe := (*args.FlagError)(nil)
		if err == nil || !strings.Contains(err.Error(), "--input photo") || !strings.Contains(err.Error(), tc.want) || !errors.As(err, &fe) {
			t.Errorf("photo=%s: err %v, want a flag error about %q", tc.value, err, tc.want)
		}
	}
}
