package spec_test

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/debate-runner/runner/nodes"
)

// TestSchemaIntegersBounded walks the whole schema, every kind included:
// each integer a spec gives must have both bounds, so that no value the
// schema accepts overflows the field it is decoded into. Counts must fit a
// 32-bit int (a spec valid on one machine is valid on all); seeds are
// 64-bit.
func TestSchemaIntegersBounded(t *testing.T) {
	data, err := nodes.Registry().Schema()
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.UseNumber()
	var root any
	if err := dec.Decode(&root); err != nil {
		t.Fatal(err)
	}
	found := 0
	var walk func(v any, path string)
	walk = func(v any, path string) {
		switch x := v.(type) {
		case map[string]any:
			_, fixed := x["const"]
			if x["type"] == "integer" && !fixed {
				found++
				lo, hi := int64(math.MinInt32), int64(math.MaxInt32)
				if strings.HasSuffix(path, "/seed") {
					lo, hi = math.MinInt64, math.MaxInt64
				}
				for _, b := range []struct {
					key   string
					ok    func(n int64) bool
					limit int64
				}{{"minimum", func(n int64) bool { return n >= lo }, lo}, {"maximum", func(n int64) bool { return n <= hi }, hi}} {
					num, isNum := x[b.key].(json.Number)
					if !isNum {
						t.Errorf("%s: integer without %s (give one within %d)", path, b.key, b.limit)
						continue
					}
					n, err := num.Int64()
					if err != nil || !b.ok(n) {
						t.Errorf("%s: %s %s is beyond %d", path, b.key, num, b.limit)
					}
				}
			}
			for k, c := range x {
				walk(c, path+"/"+k)
			}
		case []any:
			for _, c := range x {
				walk(c, path+"/[]")
			}
		}
	}
	walk(root, "")
	if found < 15 {
		t.Fatalf("found %d integer properties; the walk is broken", found)
	}
}
