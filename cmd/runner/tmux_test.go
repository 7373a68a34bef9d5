package main

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/debate-runner/runner/internal/llmtest"
)

// liveSpec has node and agent names longer than an 80-column terminal has
// room for, and two rounds of three slow calls, so the live line is drawn
// many times.
const liveSpec = `version: 1
name: live-line
agents:
  principal_security_architect_with_a_very_long_identifier: {name: Principal Security Architect}
  performance_engineering_lead_for_the_booking_platform: {name: Performance Lead}
  kiss: {name: Keep It Simple}
templates:
  define:
    t: "KEY={{.Agent.ID}} round {{.Round}}: propose a design."
nodes:
  propose_an_architecture_for_forty_clinics_and_their_reminders:
    kind: ask
    agents: [principal_security_architect_with_a_very_long_identifier, performance_engineering_lead_for_the_booking_platform, kiss]
    template: t
    record: proposal
flow:
  - loop: {as: round_of_the_design_review, max: 2, do: [propose_an_architecture_for_forty_clinics_and_their_reminders]}
outputs:
  n: len(latest("proposal"))
`

// TestLiveLineUnderTmux runs the binary in a real terminal, tmux at 80
// columns: while the run goes, no line of the screen is wider than the
// terminal (the live line never wraps), and when it has finished nothing
// of the live line is left: only the output and the run directory.
func TestLiveLineUnderTmux(t *testing.T) {
	bin := runnerBinary(t)
	tmux, err := exec.LookPath("tmux")
	if err != nil {
		if os.Getenv("RUNNER_REQUIRE_TMUX") != "" {
			t.Fatal("RUNNER_REQUIRE_TMUX is set but tmux is not on PATH")
		}
		t.Skip("tmux is not installed")
	}
	srv := llmtest.New(t, func(r llmtest.Request) llmtest.Reply {
		return llmtest.Reply{Content: "a design", Delay: 150 * time.Millisecond}
	})
	spec := writeSpecFile(t, "spec.yaml", liveSpec)
	run := tmuxServer(t, tmux, "test")
	shell := fmt.Sprintf("env OPENAI_BASE_URL=%s OPENAI_API_KEY=sk-tmux RUNNER_CACHE_DIR=%s %s run %s --runs-dir %s --no-cache; echo EXIT=$?; sleep 60",
		srv.URL, t.TempDir(), bin, spec, t.TempDir())
	run("new-session", "-d", "-s", "live", "-x", "80", "-y", "30", shell)

	sawLive := false
	var final string
	deadline := time.Now().Add(60 * time.Second)
	for {
		// -J joins lines the terminal wrapped, so a wrapped line shows
		// as one longer than the terminal is wide.
		screen := run("capture-pane", "-p", "-J", "-t", "live")
		for _, line := range strings.Split(screen, "\n") {
			if strings.Contains(line, " · ") {
				sawLive = true
			}
			if n := len([]rune(line)); n > 80 && !strings.HasPrefix(line, "run: ") {
				t.Fatalf("a %d-column line on an 80-column terminal:\n%s", n, screen)
			}
		}
		if strings.Contains(screen, "EXIT=") {
			final = screen
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the run did not finish within 60s:\n%s", screen)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !sawLive {
		t.Error("no live line was ever drawn")
	}
	var lines []string
	for _, l := range strings.Split(final, "\n") {
		if strings.TrimSpace(l) != "" {
			lines = append(lines, strings.TrimRight(l, " "))
		}
	}
	if len(lines) != 3 || lines[0] != "3" || !strings.HasPrefix(lines[1], "run: ") || lines[2] != "EXIT=0" {
		t.Errorf("after the run the screen holds\n%s\nwant the output, the run directory and EXIT=0", strings.Join(lines, "\n"))
	}
}

// tmuxServer starts nothing yet: it gives a function that runs a tmux
// command on a server of the test's own (socket runner-NAME-PID, no
// configuration), failing the test when tmux fails, and kills that server
// when the test ends.
func tmuxServer(t *testing.T, tmux, name string) func(args ...string) string {
	t.Helper()
	socket := fmt.Sprintf("runner-%s-%d", name, os.Getpid())
	t.Cleanup(func() { _ = exec.Command(tmux, "-L", socket, "kill-server").Run() })
	return func(args ...string) string {
		t.Helper()
		out, err := exec.Command(tmux, append([]string{"-L", socket, "-f", os.DevNull}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("tmux %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
}
