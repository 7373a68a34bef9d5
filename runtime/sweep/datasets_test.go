package sweep

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/debate-runner/runner/spec"
)

func questionPlan() *spec.Plan {
	return &spec.Plan{Inputs: []*spec.InputPlan{{Name: "question"}}}
}

func TestReadCSVDataset(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "items.csv")
	data := "question,expected,source\n\"What is 1,000+1?\",1001,a\n\"multi\nline\",yes,b\n"
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	lines, unused, err := ReadDataset(questionPlan(), path)
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != 2 || lines[0].Line != 2 || lines[0].Inputs["question"] != "What is 1,000+1?" || lines[0].Expected != 1001 {
		t.Fatalf("lines %+v", lines)
	}
	if lines[1].Line != 3 || lines[1].Expected != "yes" || lines[1].Inputs["question"] != "multi\nline" {
		t.Errorf("line 2: %+v", lines[1])
	}
	if strings.Join(unused, ",") != "source" {
		t.Errorf("unused %v", unused)
	}
	for _, tc := range []struct{ data, want string }{
		{"question,expected\nq1,1\nq2,2,3\n", "items.csv:3: 3 fields, but the header row names 2"},
		{"question,question\nq,1\n", `items.csv:1: column "question" is named twice`},
		{"question,\nq,1\n", "items.csv:1: column 2 has no name"},
		{"question,expected\n\"unclosed,1\n", "items.csv:2:"},
		{"", "items.csv is empty"},
		{"question,expected\n", "items.csv has no lines"},
	} {
		if err := os.WriteFile(path, []byte(tc.data), 0o644); err != nil {
			t.Fatal(err)
		}
		_, _, err := ReadDataset(questionPlan(), path)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "--dataset") {
			t.Errorf("%q: error %v, want %q", tc.data, err, tc.want)
		}
	}
	if _, _, err := ReadDataset(questionPlan(), filepath.Join(dir, "missing.csv")); err == nil || !strings.Contains(err.Error(), "missing.csv") {
		t.Errorf("missing file: %v", err)
	}
}

func TestArithmeticGenerator(t *testing.T) {
	lines, _, err := ReadDataset(questionPlan(), "gen:arithmetic?n=50&seed=7")
	if err != nil {
		t.Fatal(err)
	}
	again, _, _ := ReadDataset(questionPlan(), "gen:arithmetic?seed=7&n=50")
	other, _, _ := ReadDataset(questionPlan(), "gen:arithmetic?n=50&seed=8")
	if len(lines) != 50 {
		t.Fatalf("%d lines", len(lines))
	}
	re := regexp.MustCompile(`^What is the result of (\d+)\+(\d+)\*(\d+)\+(\d+)-(\d+)\*(\d+)\?$`)
	same, differs := true, false
	for i, l := range lines {
		q := l.Inputs["question"].(string)
		m := re.FindStringSubmatch(q)
		if m == nil || l.Line != i+1 {
			t.Fatalf("line %d: %q", l.Line, q)
		}
		var x [6]int
		for j := range x {
			x[j], _ = strconv.Atoi(m[j+1])
			if x[j] < 0 || x[j] > 29 {
				t.Errorf("operand %d out of 0-29 in %q", x[j], q)
			}
		}
		if l.Expected != x[0]+x[1]*x[2]+x[3]-x[4]*x[5] {
			t.Errorf("%q expects %v", q, l.Expected)
		}
		same = same && again[i].Inputs["question"] == q
		differs = differs || other[i].Inputs["question"] != q
	}
	if !same || !differs {
		t.Errorf("same seed same items: %v; another seed other items: %v", same, differs)
	}
	if l, _, _ := ReadDataset(&spec.Plan{Inputs: []*spec.InputPlan{{Name: "prompt"}}}, "gen:arithmetic?n=2&input=prompt"); len(l) != 2 || l[0].Inputs["prompt"] == nil {
		t.Errorf("input=prompt: %+v", l)
	}
	for _, tc := range []struct{ src, want string }{
		{"gen:arithmetic?n=0", "n=0"},
		{"gen:arithmetic?seed=x", "seed=x"},
		{"gen:arithmetic?m=3", `unknown parameter "m"`},
		{"gen:gsm8k", `no generator "gsm8k"`},
	} {
		if _, _, err := ReadDataset(questionPlan(), tc.src); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v", tc.src, err)
		}
	}
}
