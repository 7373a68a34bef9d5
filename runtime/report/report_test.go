package report

import (
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/debate-runner/runner/spec/value"

	"github.com/debate-runner/runner/internal/mdtext"
	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/runtime/result"
	"github.com/debate-runner/runner/spec"
)

var update = flag.Bool("update", false, "rewrite the golden reports in testdata")

// golden is a hand-made run of testdata/spec.yaml with every section a
// report has.
func golden(t testing.TB) (*spec.Plan, result.Manifest, *result.Result) {
	t.Helper()
	plan, diags := spec.Load("testdata/spec.yaml", nodes.Registry())
	if diags.HasErrors() {
		t.Fatal(diags.Format())
	}
	m := result.Manifest{RunID: "20261121T075339.896Z-golden-a12900", SpecName: "golden", SpecDigest: "0123456789abcdef0123",
		Inputs: map[string]any{"case": "Should we adopt <it>?\n\n# A heading in an input"}, Vars: map[string]any{"rounds": 2}, Seed: 7,
		Created: time.Date(2026, 11, 21, 7, 53, 39, 0, time.UTC)}
	res := &result.Result{
		RunID: m.RunID, Spec: "golden", Status: result.StatusCompleted,
		Outputs: map[string]any{"confidence": 80.0}, OutputOrder: []string{"confidence"},
		Messages: []value.Message{
			{ID: "m1", Node: "panel", Goal: "choose", Turn: 1, From: "ana", Record: "message", Content: "# My view\n\nWe should adopt it. Use `<Verdict>` tags:\n\n```\n# not a heading\n```"},
			{ID: "m2", Node: "panel", Goal: "choose", Turn: 1, From: "ana", Private: true, Record: "private", Content: "SECRET-THOUGHT of ana about the choice"},
			{ID: "m3", Node: "panel", Goal: "choose", Turn: 2, From: "bo", To: "ana", Whisper: true, Record: "message", Content: "Between us: <Verdict> matters."},
			{ID: "m4", Node: "panel", Goal: "choose", Turn: 3, From: "bo", Record: "message", Content: "Agreed.", Verdict: "YES", Reasoning: "It | works <well>.", Withdrawn: true},
			{ID: "m5", Node: "panel", Goal: "choose", Turn: 4, From: "ana", Record: "message", Content: "Yes.", Verdict: "YES", Reasoning: "Fine.", Withdrawn: true},
			{ID: "m6", Node: "rate", Round: 1, From: "judge", Content: `{"confidence": 60}`, Output: map[string]any{"confidence": 60.0}},
			{ID: "m7", Node: "rate", Round: 2, From: "judge", Private: true, Record: "summary", Content: "SECRET-SUMMARY of the debate so far for the judge"},
			{ID: "m8", Node: "rate", Round: 2, From: "judge", Content: `{"confidence": 80}`, Output: map[string]any{"confidence": 80.0}},
		},
		GoalVerdicts: []value.GoalVerdicts{{Goal: "choose", Node: "panel", Verdicts: []value.AgentVerdict{
			{Agent: "bo", Verdict: "YES", Reasoning: "It | works <well>.", Withdrawn: true}, {Agent: "ana", Verdict: "YES", Reasoning: "Fine.", Withdrawn: true}},
			Counts: map[string]int{"YES": 2}, Percent: map[string]float64{"YES": 100}}},
		Whispers:   []result.WhisperStat{{Goal: "choose", From: "bo", To: "ana", Count: 1}},
		Rejections: []result.Rejection{{Key: "panel/goal=choose/t3/bo", Node: "panel", Goal: "choose", Agent: "bo", Attempt: 1, Reasons: `"MAYBE" is not a valid verdict`, Content: "<Content>Hmm.</Content><Verdict>MAYBE</Verdict>"}},
		ToolCalls:  []result.ToolCallInfo{{Key: "rate/round=1/judge", Agent: "judge", Tool: "search_history", Arguments: `{"query":"a|b"}`, Result: "m1: # My view"}},
		Usage: result.UsageReport{Total: result.Usage{Calls: 7, PromptTokens: 700, CompletionTokens: 70, LatencyMS: 3500, Cost: 0.01, Priced: true},
			ByAgent: map[string]result.Usage{"ana": {Calls: 3}, "bo": {Calls: 2}, "judge": {Calls: 2}},
			ByNode:  map[string]result.Usage{"panel": {Calls: 5}, "rate": {Calls: 2}}},
		Warnings:   []string{"a <warning>"},
		DurationMS: 4200,
	}
	return plan, m, res
}

// TestGolden compares report.md and report.html of a fixed result with
// the files in testdata (go test -update rewrites them).
func TestGolden(t *testing.T) {
	plan, m, res := golden(t)
	md := Markdown(plan, m, res)
	page, err := HTML("golden", md)
	if err != nil {
		t.Fatal(err)
	}
	for name, got := range map[string]string{"report.golden.md": md, "report.golden.html": string(page)} {
		path := filepath.Join("testdata", name)
		if *update {
			if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if got != string(want) {
			t.Errorf("%s differs (go test ./runtime/report -update rewrites it); got:\n%s", name, got)
		}
	}
}

// TestReportSections checks what the golden report must hold, whatever its
// layout: private messages out, rejections, charts, every word.
func TestReportSections(t *testing.T) {
	plan, m, res := golden(t)
	dir := t.TempDir()
	md := Markdown(plan, m, res)
	page, err := HTML("golden", md)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "report.md"), []byte(md), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "report.html"), page, 0o644); err != nil {
		t.Fatal(err)
	}
	mdtext.CheckReport(t, dir, res)
	for _, secret := range []string{"SECRET-THOUGHT", "SECRET-SUMMARY"} {
		if strings.Contains(md, secret) || strings.Contains(string(page), secret) {
			t.Errorf("the report shows the private %s", secret)
		}
	}
	for _, want := range []string{
		"## Rejected replies", "rejected because \"MAYBE\" is not a valid verdict",
		"```mermaid\npie title Verdicts: choose (node panel)\n    \"YES\" : 2\n```",
		"```mermaid\nxychart-beta\n    title \"Confidence: rate (judge)\"\n    x-axis \"round\" [1, 2]\n    y-axis \"confidence\" 0 --> 100\n    line [60, 80]\n```",
		"\n#### My view\n", // the message's heading, nested below "### Goal: choose"
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	html := string(page)
	if n := strings.Count(html, "<svg"); n != 2 {
		t.Errorf("report.html draws %d charts, want 2 (verdicts, confidence)", n)
	}
	for _, bad := range []string{"<script", "<link", " src=", "raw HTML omitted", "```"} {
		if strings.Contains(html, bad) {
			t.Errorf("report.html is not a self-contained page: it has %q", bad)
		}
	}
}

// BenchmarkReports renders the reports of a run of 160 messages of a few
// hundred bytes (Markdown with a heading, a list and code); per-message
// costs of report.md and report.html are reported side by side.
func BenchmarkReports(b *testing.B) {
	plan, m, res := golden(b)
	msgs := make([]value.Message, 0, 160)
	for i := range 160 {
		msgs = append(msgs, value.Message{ID: "m" + strconv.Itoa(i+1), Node: "panel", Goal: "choose", Turn: i + 1, From: []string{"ana", "bo"}[i%2], Record: "message",
			Content: "## View " + strconv.Itoa(i) + "\n\nWe should adopt it, because:\n\n- it is <cheap>\n- it is `fast`\n\n```go\nx := 1\n```\n\nSee https://example.com/x for more.", Verdict: "YES", Reasoning: "It works.", Withdrawn: i > 150})
	}
	res.Messages = msgs
	var md string
	b.Run("markdown", func(b *testing.B) {
		for b.Loop() {
			md = Markdown(plan, m, res)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(msgs)), "ns/message")
	})
	b.Run("html", func(b *testing.B) {
		for b.Loop() {
			if _, err := HTML("bench", md); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(msgs)), "ns/message")
	})
}
