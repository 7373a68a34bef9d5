package sweep

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/debate-runner/runner/runtime/cache"
	"github.com/debate-runner/runner/runtime/rundir"
	"github.com/debate-runner/runner/spec"
)

// HFEndpointEnv overrides the Hugging Face hub's address (tests point it
// at a local server; a mirror works too).
const HFEndpointEnv = "RUNNER_HF_ENDPOINT"

const hfDefaultEndpoint = "https://huggingface.co"

// HFRowsEnv overrides the address of the hub's datasets server, which
// gives the rows of a split published only as Parquet.
const HFRowsEnv = "RUNNER_HF_DATASETS_SERVER"

const hfDefaultRows = "https://datasets-server.huggingface.co"

// hfSource is a parsed "hf:OWNER/NAME[:CONFIG[:SPLIT]][?PARAMS]".
type hfSource struct {
	text, repo, config, split, revision, file string
	// columns maps a field of the dataset's items (an input's name, or
	// "expected") to the column it is read from.
	columns   map[string]string
	transform string
	limit     int
}

func parseHF(s string) (*hfSource, error) {
	src := &hfSource{text: "hf:" + s, revision: "main", split: "test", columns: map[string]string{}}
	body, query, _ := strings.Cut(s, "?")
	parts := strings.Split(body, ":")
	if len(parts) > 3 || !validRepo(parts[0]) {
		return nil, fmt.Errorf("%s: expected hf:OWNER/NAME[:CONFIG[:SPLIT]] (e.g. hf:openai/gsm8k:main:test)", src.text)
	}
	src.repo = parts[0]
	if len(parts) > 1 {
		src.config = parts[1]
	}
	if len(parts) > 2 && parts[2] != "" {
		src.split = parts[2]
	}
	params, err := url.ParseQuery(query)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", src.text, err)
	}
	for _, k := range slices.Sorted(maps.Keys(params)) {
		v := params[k][len(params[k])-1]
		switch {
		case k == "revision":
			src.revision = v
		case k == "file":
			if v == "" || path.IsAbs(v) || strings.Contains(v, "..") {
				return nil, fmt.Errorf("%s: file=%s: give a path inside the dataset's repository", src.text, v)
			}
			src.file = v
		case k == "n":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				return nil, fmt.Errorf("%s: n=%s: give a number of items of at least 1", src.text, v)
			}
			src.limit = n
		case k == "transform":
			if v != "number" {
				return nil, fmt.Errorf("%s: transform=%s: the one transform is number (the expected answer's number, as number() reads it: GSM8K's \"#### 42\" gives 42)", src.text, v)
			}
			src.transform = v
		case k == "expected" || strings.HasPrefix(k, "input."):
			name := strings.TrimPrefix(k, "input.")
			if name == "" || v == "" {
				return nil, fmt.Errorf("%s: %s=%s: give input.NAME=COLUMN or expected=COLUMN", src.text, k, v)
			}
			src.columns[name] = v
		default:
			return nil, fmt.Errorf("%s: unknown parameter %q (known: revision, file, n, expected, input.NAME, transform)", src.text, k)
		}
	}
	if strings.ContainsAny(src.revision, `/\`) || src.revision == "" || strings.Contains(src.revision, "..") {
		return nil, fmt.Errorf("%s: revision=%s: give a branch, tag or commit", src.text, src.revision)
	}
	return src, nil
}

func validRepo(r string) bool {
	owner, name, ok := strings.Cut(r, "/")
	ok = ok && owner != "" && name != "" && !strings.Contains(name, "/")
	for _, c := range r {
		ok = ok && (c == '/' || c == '-' || c == '_' || c == '.' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z')
	}
	return ok && !strings.Contains(r, "..")
}

// hubDataset reads a dataset of the Hugging Face hub: its JSONL, JSON or
// CSV files for the config and split, downloaded once over HTTPS into the
// cache folder (datasets/hf/OWNER/NAME/REVISION/ under runner's cache).
func hubDataset(s string, getenv func(string) string) ([]datasetObject, error) {
	src, err := parseHF(s)
	if err != nil {
		return nil, err
	}
	cacheDir, err := cache.DefaultDir(getenv)
	if err != nil || cacheDir == "" {
		return nil, fmt.Errorf("%s: no cache folder to download the dataset into (set %s): %v", src.text, cache.EnvDir, err)
	}
	h := &hub{src: src, endpoint: strings.TrimRight(getenv(HFEndpointEnv), "/"), rows: strings.TrimRight(getenv(HFRowsEnv), "/"), token: getenv("HF_TOKEN"),
		dir: filepath.Join(cacheDir, "datasets", "hf", filepath.FromSlash(src.repo), src.revision)}
	if h.endpoint == "" {
		h.endpoint = hfDefaultEndpoint
	}
	if h.rows == "" {
		h.rows = hfDefaultRows
	}
	files := []string{src.file}
	if src.file == "" {
		if files, err = h.splitFiles(); err != nil {
			return nil, err
		}
	}
	var out []datasetObject
	for _, f := range files {
		var local string
		if f == parquetRows {
			local, err = h.downloadRows()
			f = local
		} else {
			local, err = h.download(f)
		}
		if err != nil {
			return nil, err
		}
		objs, err := readHubFile(local, f)
		if err != nil {
			return nil, err
		}
		for _, o := range objs {
			o.line = len(out) + 1
			if o.obj, err = src.mapFields(o.obj, o.line); err != nil {
				return nil, err
			}
			out = append(out, o)
			if src.limit > 0 && len(out) == src.limit {
				return out, nil
			}
		}
	}
	return out, nil
}

// mapFields renames an item's columns as the source says and applies the
// transform to its expected answer.
func (src *hfSource) mapFields(obj map[string]any, item int) (map[string]any, error) {
	if len(src.columns) > 0 {
		mapped := map[string]any{}
		for field, col := range src.columns {
			v, ok := obj[col]
			if !ok {
				return nil, fmt.Errorf("%s: item %d has no column %q (its columns: %s)", src.text, item, col, strings.Join(slices.Sorted(maps.Keys(obj)), ", "))
			}
			mapped[field] = v
		}
		// Columns not mapped stay, under their own names, unless a mapped
		// field took the name.
		for k, v := range obj {
			if _, taken := mapped[k]; !taken && !slices.Contains(slices.Collect(maps.Values(src.columns)), k) {
				mapped[k] = v
			}
		}
		obj = mapped
	}
	if src.transform == "number" {
		key := "expected"
		if _, ok := obj[key]; !ok {
			key = "answer"
		}
		if v, ok := obj[key]; ok {
			n := spec.AnswerNumber(plainNumbers(v))
			if n == nil {
				return nil, fmt.Errorf("%s: item %d: its %s %q has no number for transform=number", src.text, item, key, fmt.Sprint(v))
			}
			if f, ok := n.(float64); ok && f == math.Trunc(f) && math.Abs(f) < 1<<53 {
				n = int(f)
			}
			obj["expected"] = n
			if key != "expected" {
				delete(obj, key)
			}
		}
	}
	return obj, nil
}

// hub downloads a dataset's files into the cache folder.
type hub struct {
	src                   *hfSource
	endpoint, rows, token string
	dir                   string
}

// parquetRows stands for a split published as Parquet, whose rows come
// from the datasets server.
const parquetRows = "\x00rows"

// downloadRows fetches a split's rows from the datasets server (100 a
// page) into the cache folder as a JSONL file, unless it is there, and
// returns its path. The file is written whole once every page is in.
func (h *hub) downloadRows() (string, error) {
	config := h.src.config
	if config == "" {
		config = "default"
	}
	local := filepath.Join(h.dir, ".rows", config, h.src.split+".jsonl")
	if info, err := os.Stat(local); err == nil && info.Mode().IsRegular() {
		return local, nil
	}
	if h.src.revision != "main" {
		return "", fmt.Errorf("%s: the split is published as Parquet, which runner reads through the datasets server, and that serves the main revision only: drop revision= or give ?file= of a JSONL or CSV file", h.src.text)
	}
	var buf bytes.Buffer
	const page = 100
	for offset := 0; ; offset += page {
		u := fmt.Sprintf("%s/rows?dataset=%s&config=%s&split=%s&offset=%d&length=%d", h.rows,
			url.QueryEscape(h.src.repo), url.QueryEscape(config), url.QueryEscape(h.src.split), offset, page)
		body, err := h.get(u)
		if err != nil {
			return "", err
		}
		var resp struct {
			Rows []struct {
				Row json.RawMessage `json:"row"`
			} `json:"rows"`
			Total int `json:"num_rows_total"`
		}
		if err := json.Unmarshal(body, &resp); err != nil {
			return "", fmt.Errorf("%s: the rows from %s are not JSON: %v", h.src.text, u, err)
		}
		for _, r := range resp.Rows {
			buf.Write(bytes.TrimSpace(r.Row))
			buf.WriteByte('\n')
		}
		done := offset + len(resp.Rows)
		if len(resp.Rows) == 0 || done >= resp.Total {
			break
		}
	}
	if err := os.MkdirAll(filepath.Dir(local), 0o755); err != nil {
		return "", fmt.Errorf("%s: cache folder: %w", h.src.text, err)
	}
	if err := rundir.WriteFile(local, buf.Bytes()); err != nil {
		return "", fmt.Errorf("%s: cache folder: %w", h.src.text, err)
	}
	return local, nil
}

var hubClient = &http.Client{Timeout: 5 * time.Minute}

// get fetches a URL of the hub.
func (h *hub) get(u string) ([]byte, error) {
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	if h.token != "" {
		req.Header.Set("Authorization", "Bearer "+h.token)
	}
	resp, err := hubClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s: cannot download it from %s://%s (offline?): %v; it is not in the cache folder %s yet: download it once with a connection, or set %s (and %s) to a mirror", h.src.text, req.URL.Scheme, req.URL.Host, errors.Unwrap(err), h.dir, HFEndpointEnv, HFRowsEnv)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("%s: downloading %s: %v", h.src.text, u, err)
	}
	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return nil, fmt.Errorf("%s: %s answered %s: the dataset is gated or private; set HF_TOKEN to a token that may read it", h.src.text, u, resp.Status)
	case resp.StatusCode == http.StatusNotFound:
		return nil, fmt.Errorf("%s: %s answered 404: no such dataset, revision or file on %s", h.src.text, u, h.endpoint)
	case resp.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("%s: %s answered %s", h.src.text, u, resp.Status)
	}
	return body, nil
}

// splitFiles lists the repository's files (once; the list is cached) and
// picks the config's and split's data files.
func (h *hub) splitFiles() ([]string, error) {
	listing := filepath.Join(h.dir, ".files.json")
	var files []string
	if data, err := os.ReadFile(listing); err == nil && json.Unmarshal(data, &files) == nil {
		return h.pick(files)
	}
	u := fmt.Sprintf("%s/api/datasets/%s/tree/%s?recursive=true", h.endpoint, h.src.repo, url.PathEscape(h.src.revision))
	body, err := h.get(u)
	if err != nil {
		return nil, err
	}
	var entries []struct {
		Type string `json:"type"`
		Path string `json:"path"`
	}
	if err := json.Unmarshal(body, &entries); err != nil {
		return nil, fmt.Errorf("%s: the file list from %s is not JSON: %v", h.src.text, u, err)
	}
	for _, e := range entries {
		if e.Type == "file" {
			files = append(files, e.Path)
		}
	}
	if err := os.MkdirAll(h.dir, 0o755); err != nil {
		return nil, fmt.Errorf("%s: cache folder: %w", h.src.text, err)
	}
	if err := rundir.WriteJSON(listing, files); err != nil {
		return nil, fmt.Errorf("%s: cache folder: %w", h.src.text, err)
	}
	return h.pick(files)
}

// pick chooses the data files of the source's config and split: files
// whose folder or name is the config (any, when there is no config or it
// is "default") and whose name starts with the split or whose folder is
// the split.
func (h *hub) pick(files []string) ([]string, error) {
	var data, parquet []string
	for _, f := range files {
		ext := dataExt(f)
		if ext == "" {
			continue
		}
		dirs := strings.Split(path.Dir(f), "/")
		base := path.Base(f)
		splitOK := slices.Contains(dirs, h.src.split) || strings.HasPrefix(base, h.src.split+".") || strings.HasPrefix(base, h.src.split+"-") || strings.HasPrefix(base, h.src.split+"_")
		configOK := h.src.config == "" || h.src.config == "default" || slices.Contains(dirs, h.src.config) || strings.HasPrefix(base, h.src.config+"_") || strings.HasPrefix(base, h.src.config+"-")
		if !splitOK || !configOK {
			continue
		}
		if ext == ".parquet" {
			parquet = append(parquet, f)
		} else {
			data = append(data, f)
		}
	}
	slices.Sort(data)
	switch {
	case len(data) > 0:
		return data, nil
	case len(parquet) > 0:
		// runner reads no Parquet: the datasets server gives the rows.
		return []string{parquetRows}, nil
	}
	return nil, fmt.Errorf("%s: no JSONL, JSON or CSV file of config %q and split %q among the repository's %d files; give ?file=PATH", h.src.text, h.src.config, h.src.split, len(files))
}

func dataExt(f string) string {
	for _, e := range []string{".jsonl", ".json", ".csv", ".parquet"} {
		if strings.HasSuffix(strings.ToLower(f), e) {
			return e
		}
	}
	return ""
}

// download fetches a file of the repository into the cache folder, unless
// it is there, and returns its local path.
func (h *hub) download(f string) (string, error) {
	local := filepath.Join(h.dir, filepath.FromSlash(f))
	if info, err := os.Stat(local); err == nil && info.Mode().IsRegular() {
		return local, nil
	}
	var esc []string
	for _, p := range strings.Split(f, "/") {
		esc = append(esc, url.PathEscape(p))
	}
	u := fmt.Sprintf("%s/datasets/%s/resolve/%s/%s", h.endpoint, h.src.repo, url.PathEscape(h.src.revision), strings.Join(esc, "/"))
	body, err := h.get(u)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(local), 0o755); err != nil {
		return "", fmt.Errorf("%s: cache folder: %w", h.src.text, err)
	}
	// Written whole or not at all: a kill leaves no half file to read.
	if err := rundir.WriteFile(local, body); err != nil {
		return "", fmt.Errorf("%s: cache folder: %w", h.src.text, err)
	}
	return local, nil
}

// readHubFile reads a downloaded data file: JSONL (or a JSON array) or CSV.
func readHubFile(local, name string) ([]datasetObject, error) {
	switch dataExt(name) {
	case ".csv":
		return readCSV(local)
	case ".json":
		data, err := os.ReadFile(local)
		if err != nil {
			return nil, err
		}
		if t := bytes.TrimSpace(data); len(t) > 0 && t[0] == '[' {
			dec := json.NewDecoder(bytes.NewReader(t))
			dec.UseNumber()
			var arr []map[string]any
			if err := dec.Decode(&arr); err != nil {
				return nil, fmt.Errorf("%s: %v", name, err)
			}
			out := make([]datasetObject, len(arr))
			for i, o := range arr {
				out[i] = datasetObject{line: i + 1, obj: o}
			}
			return out, nil
		}
	}
	f, err := os.Open(local)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 64<<20)
	var out []datasetObject
	n := 0
	for sc.Scan() {
		n++
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			continue
		}
		dec := json.NewDecoder(strings.NewReader(text))
		dec.UseNumber()
		var obj map[string]any
		if err := dec.Decode(&obj); err != nil || obj == nil {
			if err == nil {
				err = errors.New("not a JSON object")
			}
			return nil, fmt.Errorf("%s:%d: %v", name, n, err)
		}
		out = append(out, datasetObject{line: n, obj: obj})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	return out, nil
}
