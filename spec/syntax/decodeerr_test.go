package syntax

import (
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// TestDecodeErrorsReported decodes values that do not fit their Go fields
// (as on a 32-bit machine, where int is int32) and checks that each is
// reported at the value, in the spec's words, unless already reported.
func TestDecodeErrorsReported(t *testing.T) {
	src := "a: 3000000000\nb: [1, 2]\nc: -1\nd: {x: 1}\ne: 1e300\nf:\n  - x\n  - [y]\n"
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(src), &doc); err != nil {
		t.Fatal(err)
	}
	root := doc.Content[0]
	var v struct {
		A int32    `yaml:"a"`
		B string   `yaml:"b"`
		C uint8    `yaml:"c"`
		D []string `yaml:"d"`
		E *int64   `yaml:"e"`
		F []string `yaml:"f"`
	}
	r := &Reporter{Src: NewSource("t.yaml", []byte(src))}
	r.claimed = map[Pos]bool{{Line: 4, Col: 4}: true} // as if the schema had reported d
	r.DecodeError(root, root.Decode(&v))
	var got []string
	for _, d := range r.Diags {
		got = append(got, d.String())
	}
	want := []string{
		"t.yaml:1:4: error: a: 3000000000 is out of range: a whole number here lies between -2147483648 and 2147483647",
		"t.yaml:2:4: error: b: expected text, found a list",
		"t.yaml:3:4: error: c: -1 is negative; a count here lies between 0 and 255",
		"t.yaml:5:4: error: e: 1e300 is out of range: a whole number here lies between -9223372036854775808 and 9223372036854775807",
		"t.yaml:8:5: error: f[1]: expected text, found a list",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestDecodeErrorsKeepDecoding checks that a value of the wrong shape does
// not stop decoding: the fields after it are still read.
func TestDecodeErrorsKeepDecoding(t *testing.T) {
	src := "version: 1\nscore: [1]\nflow: [a, {if: [x], then: [a]}, b]\noutputs: [1]\nname: x\nnodes: {n: {kind: ask}}\n"
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(src), &doc); err != nil {
		t.Fatal(err)
	}
	var f File
	err := doc.Content[0].Decode(&f)
	if _, ok := err.(*yaml.TypeError); !ok {
		t.Fatalf("want a *yaml.TypeError (decoding goes on), got %T: %v", err, err)
	}
	// yaml.v3 drops a list item that fails to decode; the schema reports it.
	if len(f.Flow) != 2 || f.Flow[1].Node.V != "b" || !f.Outputs.Invalid || f.Name.V != "x" || !f.Nodes.Has("n") {
		t.Errorf("decoding stopped early: %+v", f)
	}
}
