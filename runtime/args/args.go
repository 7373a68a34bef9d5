// Package args turns what a run is given on the command line into values
// the engine takes: --input NAME=VALUE and NAME=@FILE flags into inputs,
// --set NAME=VALUE into vars of the types the spec declares, checked against
// the spec's declarations (unknown names, required inputs, limits).
package args

import (
	"errors"
	"fmt"
	"github.com/debate-runner/runner/runtime/images"
	"maps"
	"math"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/debate-runner/runner/internal/exitcode"
	"github.com/debate-runner/runner/internal/regular"
	"github.com/debate-runner/runner/spec"
)

// FlagError is a problem with a command-line value; the CLI exits 2.
type FlagError struct {
	Flag string
	Err  error
}

func (e *FlagError) Error() string { return fmt.Sprintf("%s: %v", e.Flag, e.Err) }
func (e *FlagError) Unwrap() error { return e.Err }
func (e *FlagError) ExitCode() int { return exitcode.Usage }

// ResolveInputs turns --input NAME=VALUE and NAME=@PATH flags into input
// values, applying defaults and checking required inputs and limits.
func ResolveInputs(plan *spec.Plan, flags []string) (map[string]any, error) {
	return resolveInputs(plan, flags, nil)
}

// resolveInputs is ResolveInputs, where the flags of standIns hold no value
// yet (Inputs puts one in).
func resolveInputs(plan *spec.Plan, flags []string, standIns map[string]bool) (map[string]any, error) {
	declared := map[string]*spec.InputPlan{}
	var names []string
	for _, in := range plan.Inputs {
		declared[in.Name] = in
		names = append(names, in.Name)
	}
	out := map[string]any{}
	for _, f := range flags {
		name, value, ok := strings.Cut(f, "=")
		if !ok || name == "" {
			return nil, &FlagError{Flag: "--input " + f, Err: fmt.Errorf("expected NAME=VALUE or NAME=@FILE")}
		}
		in, known := declared[name]
		if !known {
			return nil, &FlagError{Flag: "--input " + name, Err: fmt.Errorf("the spec declares no input %q%s", name, hint(name, names))}
		}
		if in.Image && !standIns[name] {
			v, err := imageValue(value, in.MaxBytes)
			if err != nil {
				return nil, &FlagError{Flag: "--input " + name, Err: err}
			}
			if _, dup := out[name]; dup {
				return nil, &FlagError{Flag: "--input " + name, Err: fmt.Errorf("given twice")}
			}
			out[name] = v
			continue
		}
		if strings.HasPrefix(value, "@") {
			path := value[1:]
			// A FIFO or a device would block or stream: only a regular
			// file is read.
			data, err := regular.ReadFile(path)
			if err != nil {
				if nr := (*regular.NotRegularError)(nil); errors.As(err, &nr) {
					return nil, &FlagError{Flag: "--input " + name, Err: err}
				}
				return nil, &FlagError{Flag: "--input " + name, Err: fmt.Errorf("cannot read %s: %w", path, UnwrapPathError(err))}
			}
			if !utf8.Valid(data) {
				return nil, &FlagError{Flag: "--input " + name, Err: fmt.Errorf("%s is not UTF-8 text", path)}
			}
			value = string(data)
		}
		if in.MaxChars > 0 && utf8.RuneCountInString(value) > in.MaxChars {
			return nil, &FlagError{Flag: "--input " + name, Err: fmt.Errorf("value has %d characters; the spec allows at most %d", utf8.RuneCountInString(value), in.MaxChars)}
		}
		if _, dup := out[name]; dup {
			return nil, &FlagError{Flag: "--input " + name, Err: fmt.Errorf("given twice")}
		}
		var v any = value
		var err error
		if !standIns[name] {
			v, err = typedInput(in, value)
			if err == nil {
				err = in.Domain.Check(v)
			}
		}
		if err != nil {
			return nil, &FlagError{Flag: "--input " + name, Err: err}
		}
		out[name] = v
	}
	var missing []string
	for _, in := range plan.Inputs {
		if _, ok := out[in.Name]; ok {
			continue
		}
		switch {
		case in.HasDefault:
			out[in.Name] = in.Default
		case in.Required:
			missing = append(missing, in.Name)
		default:
			out[in.Name] = ""
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return nil, &FlagError{Flag: "--input", Err: fmt.Errorf("missing required input(s): %s (give --input %s=VALUE or %s=@FILE)", strings.Join(missing, ", "), missing[0], missing[0])}
	}
	return out, nil
}

func UnwrapPathError(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}

func hint(name string, names []string) string {
	if len(names) == 0 {
		return " (it declares no inputs)"
	}
	return fmt.Sprintf(" (declared: %s)", strings.Join(names, ", "))
}

// ResolveVars applies --set NAME=VALUE flags to the spec's vars. A value must
// have the type of the var's default.
func ResolveVars(plan *spec.Plan, flags []string) (map[string]any, error) {
	out := map[string]any{}
	var names []string
	domains := map[string]*spec.Domain{}
	for _, v := range plan.Vars {
		out[v.Name] = v.Default
		names = append(names, v.Name)
		domains[v.Name] = v.Domain
	}
	for _, f := range flags {
		name, raw, ok := strings.Cut(f, "=")
		if !ok || name == "" {
			return nil, &FlagError{Flag: "--set " + f, Err: fmt.Errorf("expected NAME=VALUE")}
		}
		def, known := out[name]
		if !known {
			return nil, &FlagError{Flag: "--set " + name, Err: fmt.Errorf("the spec declares no var %q%s", name, hintVars(names))}
		}
		v, err := convertLike(def, raw)
		if err == nil {
			err = domains[name].Check(v)
		}
		if err != nil {
			return nil, &FlagError{Flag: "--set " + name, Err: err}
		}
		out[name] = v
	}
	return out, nil
}

func hintVars(names []string) string {
	if len(names) == 0 {
		return " (it declares no vars)"
	}
	return fmt.Sprintf(" (declared: %s)", strings.Join(names, ", "))
}

// convertLike parses raw as a value of def's type.
func convertLike(def any, raw string) (any, error) {
	switch x := def.(type) {
	case int:
		n, err := strconv.Atoi(strings.TrimSpace(raw))
		if err != nil {
			return nil, fmt.Errorf("%q is not an integer (the default is %v)", raw, def)
		}
		return n, nil
	case float64:
		f, err := strconv.ParseFloat(strings.TrimSpace(raw), 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not a number (the default is %v)", raw, def)
		}
		return f, nil
	case bool:
		b, err := strconv.ParseBool(strings.TrimSpace(raw))
		if err != nil {
			return nil, fmt.Errorf("%q is not true or false (the default is %v)", raw, def)
		}
		return b, nil
	case string, nil:
		return raw, nil
	case []any:
		// A list is given as V1,V2,...; its items have the type of the
		// default's items (a list of integers stays one).
		item := elemOf(x)
		parts := strings.Split(raw, ",")
		list := make([]any, len(parts))
		for i, p := range parts {
			v, err := convertLike(item, strings.TrimSpace(p))
			if err != nil {
				return nil, fmt.Errorf("item %d: %w", i+1, err)
			}
			list[i] = v
		}
		return list, nil
	}
	return nil, fmt.Errorf("this var (a %T) cannot be set from the command line", def)
}

// elemOf is a value of the type every item of a list has, nil (text) when
// the items differ or there are none. Integers among numbers are numbers.
func elemOf(list []any) any {
	var item any
	for i, v := range list {
		switch v.(type) {
		case int, float64, bool, string:
		default:
			return nil
		}
		switch {
		case i == 0:
			item = v
		case fmt.Sprintf("%T", v) == fmt.Sprintf("%T", item):
		case isNumber(v) && isNumber(item):
			item = 0.0
		default:
			return nil
		}
	}
	return item
}

func isNumber(v any) bool {
	switch v.(type) {
	case int, float64:
		return true
	}
	return false
}

// Inputs is ResolveInputs plus inputs given as values (a dataset line's,
// a replayed run's), which are checked against the declarations but never
// parsed: a value that starts with "@" is text, not a file.
func Inputs(plan *spec.Plan, flags []string, values map[string]any) (map[string]any, error) {
	if len(values) == 0 {
		return ResolveInputs(plan, flags)
	}
	declared := map[string]*spec.InputPlan{}
	var names []string
	for _, in := range plan.Inputs {
		declared[in.Name] = in
		names = append(names, in.Name)
	}
	all := append([]string(nil), flags...)
	standIns := map[string]bool{}
	for _, name := range slices.Sorted(maps.Keys(values)) {
		in, ok := declared[name]
		if !ok {
			return nil, &FlagError{Flag: "input " + name, Err: fmt.Errorf("the spec declares no input %q%s", name, hint(name, names))}
		}
		if s, ok := values[name].(string); ok && in.MaxChars > 0 && utf8.RuneCountInString(s) > in.MaxChars {
			return nil, &FlagError{Flag: "input " + name, Err: fmt.Errorf("value has %d characters; the spec allows at most %d", utf8.RuneCountInString(s), in.MaxChars)}
		}
		// An empty flag stands in for the value: it counts as given (so a
		// flag for the same input is reported as given twice) and is
		// replaced below.
		all = append(all, name+"=")
		standIns[name] = true
	}
	out, err := resolveInputs(plan, all, standIns)
	if err != nil {
		return nil, err
	}
	for _, name := range slices.Sorted(maps.Keys(values)) {
		if declared[name].Image {
			s, _ := values[name].(string)
			v, err := imageValue(s, declared[name].MaxBytes)
			if err != nil {
				return nil, &FlagError{Flag: "input " + name, Err: err}
			}
			out[name] = v
			continue
		}
		v, err := typedInput(declared[name], values[name])
		if err == nil {
			err = declared[name].Domain.Check(v)
		}
		if err != nil {
			return nil, &FlagError{Flag: "input " + name, Err: err}
		}
		out[name] = v
	}
	return out, nil
}

// typedInput gives a value the type of the input's default when that is not
// text (inputs are text unless their default says otherwise): a dataset's
// "3" or 3.0 for an input whose default is 0 is the integer 3.
func typedInput(in *spec.InputPlan, v any) (any, error) {
	switch in.Default.(type) {
	case nil, string:
		return v, nil
	}
	if !in.HasDefault {
		return v, nil
	}
	if s, ok := v.(string); ok {
		return convertLike(in.Default, s)
	}
	return coerceLike(in.Default, v), nil
}

// Vars is ResolveVars with values (a recorded run's) applied before the
// --set flags, which win.
func Vars(plan *spec.Plan, sets []string, values map[string]any) (map[string]any, error) {
	if len(values) == 0 {
		return ResolveVars(plan, sets)
	}
	out, err := ResolveVars(plan, nil)
	if err != nil {
		return nil, err
	}
	domains := map[string]*spec.Domain{}
	for _, v := range plan.Vars {
		domains[v.Name] = v.Domain
	}
	for _, name := range slices.Sorted(maps.Keys(values)) {
		def, ok := out[name]
		if !ok {
			continue // a var the spec no longer declares
		}
		out[name] = coerceLike(def, values[name])
		if err := domains[name].Check(out[name]); err != nil {
			return nil, &FlagError{Flag: "var " + name, Err: err}
		}
	}
	set, err := ResolveVars(plan, sets)
	if err != nil {
		return nil, err
	}
	for _, f := range sets {
		name, _, _ := strings.Cut(f, "=")
		out[name] = set[name]
	}
	return out, nil
}

// coerceLike gives a decoded JSON number the numeric type of def, and the
// items of a decoded list the type of def's items.
func coerceLike(def, v any) any {
	switch d := def.(type) {
	case []any:
		list, ok := v.([]any)
		item := elemOf(d)
		if !ok || item == nil {
			return v
		}
		out := make([]any, len(list))
		for i, x := range list {
			out[i] = coerceLike(item, x)
		}
		return out
	case int:
		switch x := v.(type) {
		case float64:
			if x == math.Trunc(x) {
				return int(x)
			}
		case int64:
			return int(x)
		}
	case float64:
		switch x := v.(type) {
		case int:
			return float64(x)
		case int64:
			return float64(x)
		}
	}
	return v
}

// Models reads --model flags, MODEL (in place of the spec's model named
// default) or NAME=MODEL, into model overrides by the spec's model name.
func Models(flags []string) (map[string]string, error) {
	var out map[string]string
	for _, m := range flags {
		name, model, ok := strings.Cut(m, "=")
		if !ok {
			name, model = "default", m
		}
		if strings.TrimSpace(name) == "" || strings.TrimSpace(model) == "" {
			return nil, &FlagError{Flag: "--model " + m, Err: fmt.Errorf("expected MODEL or NAME=MODEL")}
		}
		if out == nil {
			out = map[string]string{}
		}
		out[strings.TrimSpace(name)] = strings.TrimSpace(model)
	}
	return out, nil
}

// Offline is what --offline gives a run: every model of the plan replaced
// by the built-in offline model (the provider kind offline), as model
// overrides, so that run.json records them and resume and sweeps keep them.
func Offline(plan *spec.Plan) (map[string]string, error) {
	const name = "offline"
	m, ok := plan.Models[name]
	if !ok || m.Endpoint == nil || m.Endpoint.Kind != name {
		return nil, &FlagError{Flag: "--offline", Err: fmt.Errorf("the spec declares its own model or endpoint named %q, which --offline would use in place of the offline model; rename it", name)}
	}
	// The models the spec declares, and the implicit default; a panel's
	// model ids are copies of one of them, made after the overrides.
	out := map[string]string{"default": name}
	if plan.File != nil {
		for _, k := range plan.File.Models.Keys {
			if k.V != name {
				out[k.V] = name
			}
		}
	}
	return out, nil
}

// Context reads --context PATH: a folder is the one the run's file tools
// may read (dir), a file's text the spec's 'context' input (an --input
// flag, input).
func Context(path string) (dir, input string, err error) {
	if path == "" {
		return "", "", nil
	}
	info, err := os.Stat(path)
	if err != nil {
		return "", "", &FlagError{Flag: "--context " + path, Err: UnwrapPathError(err)}
	}
	if info.IsDir() {
		return path, "", nil
	}
	data, err := regular.ReadFile(path)
	if err != nil {
		return "", "", &FlagError{Flag: "--context " + path, Err: err}
	}
	return "", "context=" + string(data), nil
}

// imageValue is an image input's value: the marker of the image a file
// path or URL names (see runtime/images), or a marker already made (a
// recorded run's value, whose bytes its directory keeps); "" stays "".
func imageValue(value string, maxBytes int) (string, error) {
	if value == "" || images.IsMarker(value) {
		return value, nil
	}
	return images.Read(value, maxBytes)
}
