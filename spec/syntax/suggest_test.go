package syntax

import "testing"

func TestEditDistance(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"", "abc", 3},
		{"abc", "", 3},
		{"record", "record", 0},
		{"recrod", "record", 1}, // adjacent swap
		{"recod", "record", 1},  // deletion
		{"recordd", "record", 1},
		{"rekord", "record", 1},
		{"aks", "ask", 1},
		{"ca", "abc", 3}, // optimal string alignment, not full Damerau
		{"kitten", "sitting", 3},
		{"héllo", "hello", 1}, // runes, not bytes
		{"日本", "日本語", 1},
	}
	for _, tc := range tests {
		if got := editDistance(tc.a, tc.b); got != tc.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
		if got := editDistance(tc.b, tc.a); got != tc.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d (not symmetric)", tc.b, tc.a, got, tc.want)
		}
	}
}

func TestSuggest(t *testing.T) {
	keys := []string{"agents", "description", "flow", "inputs", "name", "nodes", "vars", "version"}
	tests := []struct {
		name       string
		candidates []string
		want       string
	}{
		{"agnets", keys, "agents"},
		{"descripton", keys, "description"},
		{"Flow", keys, "flow"}, // case does not count
		{"flwo", keys, "flow"},
		{"nmae", keys, "name"},
		{"verison", keys, "version"},
		{"colour", keys, ""},           // nothing close
		{"x", keys, ""},                // short names need a near match
		{"nod", []string{"nodes"}, ""}, // 3 letters allow one edit only
		{"nde", []string{"node"}, "node"},
		{"max_question", []string{"max_questions", "max_iterations"}, "max_questions"},
		{"anything", nil, ""},
		{"evalute", []string{"evaluate", "refine"}, "evaluate"},
		// equal distances resolve to the alphabetically first candidate,
		// so messages do not depend on map order
		{"bat", []string{"cat", "bar"}, "bar"},
	}
	for _, tc := range tests {
		if got := suggest(tc.name, tc.candidates); got != tc.want {
			t.Errorf("suggest(%q) = %q, want %q", tc.name, got, tc.want)
		}
	}
	if got := DidYouMean("agnets", keys); got != ` (did you mean "agents"?)` {
		t.Errorf("didYouMean = %q", got)
	}
	if got := DidYouMean("zzz", keys); got != "" {
		t.Errorf("didYouMean without match = %q", got)
	}
}

func TestDescribePointer(t *testing.T) {
	tests := map[string]string{
		"":                              "the spec",
		"/nodes":                        "nodes",
		"/nodes/propose":                "nodes.propose",
		"/nodes/propose/output/format":  "nodes.propose.output.format",
		"/flow/2":                       "flow[2]",
		"/flow/2/loop/do/0":             "flow[2].loop.do[0]",
		"/flow/0/then/1/foreach/as":     "flow[0].then[1].foreach.as",
		"/goals/0/id":                   "goals[0].id",
		"/templates/define/lib~1answer": "templates.define.lib/answer",
		"/vars/a~0b":                    "vars.a~b",
		"/0":                            "[0]",
	}
	for ptr, want := range tests {
		if got := DescribePointer(ptr); got != want {
			t.Errorf("describePointer(%q) = %q, want %q", ptr, got, want)
		}
	}
}

func TestUnescapeURLPointer(t *testing.T) {
	tests := map[string]string{
		"/nodes/first%20answer": "/nodes/first answer",
		"/inputs/a~1b":          "/inputs/a~1b", // JSON-pointer escapes stay
		"/vars/100%25":          "/vars/100%",
		"/vars/caf%C3%A9":       "/vars/café",
		"/vars/bad%zz":          "/vars/bad%zz", // not an escape: left alone
		"":                      "",
	}
	for in, want := range tests {
		if got := UnescapeURLPointer(in); got != want {
			t.Errorf("unescapeURLPointer(%q) = %q, want %q", in, got, want)
		}
	}
}
