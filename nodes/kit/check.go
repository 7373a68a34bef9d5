package kit

import (
	"fmt"
	"math"
	"reflect"

	"github.com/debate-runner/runner/spec"
	"github.com/debate-runner/runner/spec/value"
)

// CheckOutput reports whether a node's result holds what its kind declared
// at compile time (NodeContext.SetOutput): Output of the node's output type
// and each agent's entry of Outputs of its per-agent type. Expressions over
// nodes.ID.output were type-checked against those types, so a kind that
// returns something else breaks them at run time. runtime/spectest's
// TestOutputsHaveTheirDeclaredTypes runs every example's spec tests and
// every kind's Example through it. A nil value (an agent left out, an optional
// property not given) passes.
func CheckOutput(node *spec.NodePlan, res value.NodeResult) error {
	if err := checkValue(node.Output, res.Output, "output"); err != nil {
		return fmt.Errorf("node %q (%s): %w", node.ID, node.Kind, err)
	}
	per := node.Outputs
	if per == nil {
		per = node.Output
	}
	for agent, v := range res.Outputs {
		if err := checkValue(per, v, fmt.Sprintf("outputs.%s", agent)); err != nil {
			return fmt.Errorf("node %q (%s): %w", node.ID, node.Kind, err)
		}
	}
	return nil
}

func checkValue(t *spec.Type, v any, path string) error {
	if t == nil || t.Kind == spec.AnyType || v == nil {
		return nil
	}
	rv := reflect.ValueOf(v)
	for rv.Kind() == reflect.Pointer || rv.Kind() == reflect.Interface {
		if rv.IsNil() {
			return nil
		}
		rv = rv.Elem()
	}
	bad := func() error { return fmt.Errorf("%s is %T, declared %s", path, v, t) }
	switch t.Kind {
	case spec.StringType:
		if rv.Kind() != reflect.String {
			return bad()
		}
	case spec.BoolType:
		if rv.Kind() != reflect.Bool {
			return bad()
		}
	case spec.IntType:
		switch {
		case rv.CanInt(), rv.CanUint():
		case rv.CanFloat() && rv.Float() == math.Trunc(rv.Float()):
		default:
			return bad()
		}
	case spec.FloatType:
		if !rv.CanInt() && !rv.CanUint() && !rv.CanFloat() {
			return bad()
		}
	case spec.ListType:
		if rv.Kind() != reflect.Slice && rv.Kind() != reflect.Array {
			return bad()
		}
		for i := range rv.Len() {
			if err := checkValue(t.Elem, rv.Index(i).Interface(), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	case spec.MapType, spec.ObjectType:
		if rv.Kind() != reflect.Map || rv.Type().Key().Kind() != reflect.String {
			return bad()
		}
		iter := rv.MapRange()
		for iter.Next() {
			k := iter.Key().String()
			et := t.Elem
			if t.Kind == spec.ObjectType {
				var ok bool
				if et, ok = t.Field(k); !ok {
					continue // a property the schema does not describe
				}
			}
			if err := checkValue(et, iter.Value().Interface(), path+"."+k); err != nil {
				return err
			}
		}
	}
	return nil
}
