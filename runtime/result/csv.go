package result

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// AppendCSV appends one row for a finished run to a CSV file: run id, spec,
// status, usage, then every output (flattened with dotted names). The header
// is written when the file is new or empty; a row for a file whose header
// differs is refused rather than misaligned.
func AppendCSV(path string, res *Result) error {
	cols := []string{"run_id", "spec", "status", "calls", "prompt_tokens", "completion_tokens", "cost"}
	vals := map[string]string{
		"run_id": res.RunID, "spec": res.Spec, "status": res.Status,
		"calls":             fmt.Sprint(res.Usage.Total.Calls),
		"prompt_tokens":     fmt.Sprint(res.Usage.Total.PromptTokens),
		"completion_tokens": fmt.Sprint(res.Usage.Total.CompletionTokens),
		"cost":              fmt.Sprintf("%.6f", res.Usage.Total.Cost),
	}
	flat := map[string]string{}
	for _, name := range res.OutputOrder {
		flatten(name, res.Outputs[name], flat)
	}
	keys := make([]string, 0, len(flat))
	for k := range flat {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		cols = append(cols, k)
		vals[k] = flat[k]
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("--csv: %w", err)
	}
	defer f.Close()
	existing, err := csv.NewReader(f).Read()
	if err != nil && err != io.EOF {
		return fmt.Errorf("--csv %s: %w", path, err)
	}
	w := csv.NewWriter(f)
	if err == io.EOF {
		if err := w.Write(cols); err != nil {
			return err
		}
	} else {
		if strings.Join(existing, ",") != strings.Join(cols, ",") {
			return fmt.Errorf("--csv %s: its columns (%s) differ from this run's (%s); use another file", path, strings.Join(existing, ","), strings.Join(cols, ","))
		}
		if _, err := f.Seek(0, io.SeekEnd); err != nil {
			return err
		}
	}
	row := make([]string, len(cols))
	for i, c := range cols {
		row[i] = vals[c]
	}
	if err := w.Write(row); err != nil {
		return err
	}
	w.Flush()
	if err := w.Error(); err != nil {
		return err
	}
	return f.Sync()
}

func flatten(prefix string, v any, out map[string]string) {
	switch x := v.(type) {
	case map[string]any:
		if len(x) == 0 {
			out[prefix] = ""
		}
		for k, vv := range x {
			flatten(prefix+"."+k, vv, out)
		}
	case nil:
		out[prefix] = ""
	case string:
		out[prefix] = x
	case float64, int, int64, bool:
		out[prefix] = fmt.Sprint(x)
	default:
		data, _ := json.Marshal(x)
		out[prefix] = string(data)
	}
}
