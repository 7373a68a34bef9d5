package sweep

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/debate-runner/runner/runtime/args"
	"github.com/debate-runner/runner/spec"
)

// datasetObject is one item of a dataset that is no JSONL file, with the
// line it came from (the item's number for a generator).
type datasetObject struct {
	line int
	obj  map[string]any
}

// otherDataset reads the datasets besides JSONL files: CSV files (a name
// ending in .csv), built-in generators ("gen:NAME?PARAMS") and datasets of
// the Hugging Face hub ("hf:OWNER/NAME:CONFIG:SPLIT?PARAMS"). ok is false
// for a JSONL file.
func otherDataset(path string) (objs []datasetObject, ok bool, err error) {
	switch {
	case strings.HasPrefix(path, "hf:"):
		objs, err = hubDataset(strings.TrimPrefix(path, "hf:"), os.Getenv)
		return objs, true, err
	case strings.HasPrefix(path, "gen:"):
		objs, err = generate(strings.TrimPrefix(path, "gen:"))
		return objs, true, err
	case strings.EqualFold(fileExt(path), ".csv"):
		objs, err = readCSV(path)
		return objs, true, err
	}
	return nil, false, nil
}

func fileExt(path string) string {
	i := strings.LastIndexByte(path, '.')
	if i < 0 || strings.ContainsAny(path[i:], `/\`) {
		return ""
	}
	return path[i:]
}

// datasetLines turns a dataset's items into lines as ReadDataset does.
func datasetLines(plan *spec.Plan, path string, objs []datasetObject) ([]DatasetLine, []string, error) {
	declared := map[string]bool{}
	for _, in := range plan.Inputs {
		declared[in.Name] = true
	}
	unused := map[string]bool{}
	var lines []DatasetLine
	for _, o := range objs {
		lines = append(lines, datasetLine(o.line, o.obj, declared, unused))
	}
	if len(lines) == 0 {
		return nil, nil, &args.FlagError{Flag: "--dataset", Err: fmt.Errorf("%s has no lines", path)}
	}
	return lines, slices.Sorted(maps.Keys(unused)), nil
}

// datasetLine is line n of a dataset: its fields named like the spec's
// inputs are inputs, "expected" (or "answer" when no input has that name)
// the expected value; others are added to unused.
func datasetLine(n int, obj map[string]any, declared, unused map[string]bool) DatasetLine {
	line := DatasetLine{Line: n, Inputs: map[string]any{}}
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		v := plainNumbers(obj[k])
		switch {
		case k == "expected":
			line.Expected = v
		case k == "answer" && !declared["answer"]:
			if _, ok := obj["expected"]; !ok {
				line.Expected = v
			}
		case declared[k]:
			line.Inputs[k] = v
		default:
			unused[k] = true
		}
	}
	return line
}

// readCSV reads a CSV file whose header row names the fields. Cells are
// text, except that an "expected" or "answer" cell holding an integer is
// read as one, so that it compares with a number as a JSONL file's does.
// Line numbers are the file's (the header is line 1).
func readCSV(path string) ([]datasetObject, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, args.UnwrapPathError(err))
	}
	defer f.Close()
	r := csv.NewReader(f)
	r.FieldsPerRecord = -1
	header, err := r.Read()
	if err == io.EOF {
		return nil, fmt.Errorf("%s is empty: a CSV dataset starts with a header row naming its fields", path)
	}
	if err != nil {
		return nil, csvError(path, err)
	}
	seen := map[string]bool{}
	for i, h := range header {
		h = strings.TrimSpace(strings.TrimPrefix(h, "\ufeff"))
		if h == "" {
			return nil, fmt.Errorf("%s:1: column %d has no name in the header row", path, i+1)
		}
		if seen[h] {
			return nil, fmt.Errorf("%s:1: column %q is named twice in the header row", path, h)
		}
		seen[h] = true
		header[i] = h
	}
	var out []datasetObject
	for {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, csvError(path, err)
		}
		line, _ := r.FieldPos(0)
		if len(rec) == 1 && strings.TrimSpace(rec[0]) == "" {
			continue
		}
		if len(rec) != len(header) {
			return nil, fmt.Errorf("%s:%d: %d fields, but the header row names %d", path, line, len(rec), len(header))
		}
		obj := map[string]any{}
		for i, h := range header {
			var v any = rec[i]
			if h == "expected" || h == "answer" {
				if n, err := strconv.Atoi(strings.TrimSpace(rec[i])); err == nil {
					v = n
				}
			}
			obj[h] = v
		}
		out = append(out, datasetObject{line: line, obj: obj})
	}
	return out, nil
}

func csvError(path string, err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s:%d:%d: %v", path, pe.Line, pe.Column, pe.Err)
	}
	return fmt.Errorf("%s: %v", path, err)
}

// generate makes the items of a built-in generator, "NAME?PARAMS".
func generate(s string) ([]datasetObject, error) {
	name, query, _ := strings.Cut(s, "?")
	params, err := url.ParseQuery(query)
	if err != nil {
		return nil, fmt.Errorf("gen:%s: %v", s, err)
	}
	switch name {
	case "arithmetic":
		return arithmeticItems(params)
	}
	return nil, fmt.Errorf("gen:%s: no generator %q (there is: arithmetic)", s, name)
}

// arithmeticItems is Du et al.'s arithmetic task: "What is the result of
// a+b*c+d-e*f?" with six operands drawn uniformly from 0-29 by a generator
// seeded with seed. Parameters: n (items, default 100), seed (default 1),
// input (the input the question goes to, default "question").
func arithmeticItems(params url.Values) ([]datasetObject, error) {
	n, seed, input := 100, uint64(1), "question"
	for k, vs := range params {
		v := vs[len(vs)-1]
		switch k {
		case "n":
			x, err := strconv.Atoi(v)
			if err != nil || x < 1 || x > 1000000 {
				return nil, fmt.Errorf("gen:arithmetic: n=%s: give a number of items from 1 to 1000000", v)
			}
			n = x
		case "seed":
			x, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("gen:arithmetic: seed=%s: give a whole number of at least 0", v)
			}
			seed = x
		case "input":
			if v == "" || v == "expected" {
				return nil, fmt.Errorf("gen:arithmetic: input=%s: give the name of the spec's input", v)
			}
			input = v
		default:
			return nil, fmt.Errorf("gen:arithmetic: unknown parameter %q (known: n, seed, input)", k)
		}
	}
	rng := rand.New(rand.NewPCG(seed, 0x6172697468)) // "arith"
	out := make([]datasetObject, n)
	for i := range out {
		var x [6]int
		for j := range x {
			x[j] = rng.IntN(30)
		}
		q := fmt.Sprintf("What is the result of %d+%d*%d+%d-%d*%d?", x[0], x[1], x[2], x[3], x[4], x[5])
		out[i] = datasetObject{line: i + 1, obj: map[string]any{input: q, "expected": x[0] + x[1]*x[2] + x[3] - x[4]*x[5]}}
	}
	return out, nil
}
