package main

import (
	"bytes"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"testing"
)

var problem = regexp.MustCompile(`^What is the result of (\d\d)\+(\d\d)\*(\d\d)\+(\d\d)-(\d\d)\*(\d\d)\?$`)

func TestGenerate(t *testing.T) {
	items := Generate(200, 7)
	if len(items) != 200 {
		t.Fatalf("%d items", len(items))
	}
	for i, it := range items {
		m := problem.FindStringSubmatch(it.Question)
		if m == nil {
			t.Fatalf("item %d: %q is not a+b*c+d-e*f over two-digit numbers", i, it.Question)
		}
		n := make([]int, 6)
		for k := range n {
			n[k], _ = strconv.Atoi(m[k+1])
		}
		if want := n[0] + n[1]*n[2] + n[3] - n[4]*n[5]; it.Expected != want {
			t.Errorf("item %d: %s expected %d, want %d", i, it.Question, it.Expected, want)
		}
	}
	if fmt.Sprint(Generate(5, 7)) != fmt.Sprint(items[:5]) {
		t.Error("the same seed gives different problems")
	}
	if fmt.Sprint(Generate(5, 8)) == fmt.Sprint(items[:5]) {
		t.Error("another seed gives the same problems")
	}
}

// The committed dataset is what the README says made it.
func TestCommittedDataset(t *testing.T) {
	data, err := os.ReadFile("../dataset.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	if err := write(&want, Generate(10, 1)); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(data, want.Bytes()) {
		t.Errorf("dataset.jsonl is not the output of -n 10 -seed 1:\n%s", data)
	}
}
