package sweep

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/debate-runner/runner/runtime/cache"
)

// gsm8kTest are GSM8K-shaped items: a question and an answer whose last
// line is "#### N".
const gsm8kTest = `{"question": "Janet has 3 ducks and buys 4 more. How many ducks?", "answer": "3 + 4 = <<3+4=7>>7\n#### 7"}
{"question": "A shop sells 1,000 pens a day for 2 days. How many pens?", "answer": "1000 * 2 = <<1000*2=2000>>2000\n#### 2,000"}
{"question": "Tom had 10 apples and ate 3. How many are left?", "answer": "10 - 3 = 7\n#### 7"}
`

// fakeHub serves files in the Hugging Face hub's layout: the recursive
// tree listing of a dataset repository and its files under resolve/.
type fakeHub struct {
	*httptest.Server
	mu       sync.Mutex
	requests []string
	files    map[string]string
	// rows are the datasets server's rows by "CONFIG/SPLIT", JSON objects.
	rows map[string][]string
}

func newFakeHub(t *testing.T, repo string, files map[string]string) *fakeHub {
	h := &fakeHub{files: files}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		h.requests = append(h.requests, r.URL.Path)
		h.mu.Unlock()
		switch {
		case r.URL.Path == "/api/datasets/"+repo+"/tree/main" && r.URL.Query().Get("recursive") == "true":
			var entries []string
			for p := range files {
				entries = append(entries, fmt.Sprintf(`{"type":"file","path":%q,"size":%d}`, p, len(files[p])))
			}
			entries = append(entries, `{"type":"directory","path":"main"}`)
			fmt.Fprint(w, "["+strings.Join(entries, ",")+"]")
		case r.URL.Path == "/rows" && r.URL.Query().Get("dataset") == repo && h.rows != nil:
			q := r.URL.Query()
			key := q.Get("config") + "/" + q.Get("split")
			all, ok := h.rows[key]
			if !ok {
				http.NotFound(w, r)
				return
			}
			offset, _ := strconv.Atoi(q.Get("offset"))
			length, _ := strconv.Atoi(q.Get("length"))
			var page []string
			for i := offset; i < min(offset+length, len(all)); i++ {
				page = append(page, fmt.Sprintf(`{"row_idx":%d,"row":%s,"truncated_cells":[]}`, i, all[i]))
			}
			fmt.Fprintf(w, `{"features":[],"rows":[%s],"num_rows_total":%d,"num_rows_per_page":100,"partial":false}`, strings.Join(page, ","), len(all))
		case strings.HasPrefix(r.URL.Path, "/datasets/"+repo+"/resolve/main/"):
			body, ok := files[strings.TrimPrefix(r.URL.Path, "/datasets/"+repo+"/resolve/main/")]
			if !ok {
				http.NotFound(w, r)
				return
			}
			fmt.Fprint(w, body)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(h.Close)
	return h
}

func (h *fakeHub) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.requests)
}

// TestHubDatasetGSM8K reads a GSM8K-shaped dataset through the hub loader
// from a local server in the hub's layout: the config's and split's file
// is picked from the listing, the "#### N" answer becomes the expected
// number, the files land in the cache folder, a second read makes no
// request, and with the server gone a fresh cache says clearly that the
// dataset cannot be downloaded.
func TestHubDatasetGSM8K(t *testing.T) {
	hub := newFakeHub(t, "openai/gsm8k", map[string]string{
		"README.md":           "# GSM8K",
		"main/train.jsonl":    `{"question": "train item", "answer": "#### 1"}` + "\n",
		"main/test.jsonl":     gsm8kTest,
		"socratic/test.jsonl": `{"question": "socratic item", "answer": "#### 2"}` + "\n",
	})
	cacheDir := t.TempDir()
	t.Setenv(cache.EnvDir, cacheDir)
	t.Setenv(HFEndpointEnv, hub.URL)
	const source = "hf:openai/gsm8k:main:test?transform=number"
	lines, unused, err := ReadDataset(questionPlan(), source)
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != 3 || len(unused) != 0 {
		t.Fatalf("lines %+v, unused %v", lines, unused)
	}
	for i, want := range []int{7, 2000, 7} {
		if lines[i].Expected != want || lines[i].Line != i+1 || !strings.Contains(fmt.Sprint(lines[i].Inputs["question"]), "?") {
			t.Errorf("item %d: %+v, want expected %d", i+1, lines[i], want)
		}
	}
	if hub.count() != 2 {
		t.Errorf("%d requests (%v), want the listing and one file", hub.count(), hub.requests)
	}
	if _, err := os.Stat(filepath.Join(cacheDir, "datasets", "hf", "openai", "gsm8k", "main", "main", "test.jsonl")); err != nil {
		t.Errorf("the file is not in the cache folder: %v", err)
	}
	again, _, err := ReadDataset(questionPlan(), source)
	if err != nil || fmt.Sprint(again) != fmt.Sprint(lines) {
		t.Fatalf("second read: %v, %+v", err, again)
	}
	if hub.count() != 2 {
		t.Errorf("the second read made %d request(s); the cache should answer it", hub.count()-2)
	}

	// A field mapping: the spec's input "problem" from column question,
	// the expected answer from column answer, and the first two items.
	plan := questionPlan()
	plan.Inputs[0].Name = "problem"
	mapped, unused, err := ReadDataset(plan, "hf:openai/gsm8k:main:test?input.problem=question&expected=answer&transform=number&n=2")
	if err != nil {
		t.Fatal(err)
	}
	if len(mapped) != 2 || mapped[1].Expected != 2000 || !strings.HasPrefix(fmt.Sprint(mapped[1].Inputs["problem"]), "A shop") || len(unused) != 0 {
		t.Errorf("mapped %+v, unused %v", mapped, unused)
	}

	// Offline: no server, nothing cached.
	hub.Close()
	t.Setenv(cache.EnvDir, t.TempDir())
	_, _, err = ReadDataset(questionPlan(), source)
	if err == nil || !strings.Contains(err.Error(), "--dataset: hf:openai/gsm8k:main:test") || !strings.Contains(err.Error(), "cannot download it from "+hub.URL+" (offline?)") || !strings.Contains(err.Error(), "not in the cache folder") {
		t.Errorf("offline error: %v", err)
	}
}

func TestHubDatasetErrors(t *testing.T) {
	hub := newFakeHub(t, "org/pq", map[string]string{
		"data/test-00000-of-00001.parquet": "PAR1",
		"data/train.csv":                   "question,expected\nq,1\n",
	})
	t.Setenv(cache.EnvDir, t.TempDir())
	t.Setenv(HFEndpointEnv, hub.URL)
	t.Setenv(HFRowsEnv, hub.URL)
	for _, tc := range []struct{ source, want string }{
		{"hf:org/pq:default:test", "/rows?dataset=org%2Fpq&config=default&split=test&offset=0&length=100 answered 404"},
		{"hf:org/pq:default:test?revision=v2", "answered 404: no such dataset, revision or file"},
		{"hf:org/pq::validation", `no JSONL, JSON or CSV file of config "" and split "validation"`},
		{"hf:org/missing:main:test", "answered 404: no such dataset"},
		{"hf:nope", "expected hf:OWNER/NAME[:CONFIG[:SPLIT]]"},
		{"hf:org/pq::train?expected=nothere", `item 1 has no column "nothere" (its columns: expected, question)`},
		{"hf:org/pq::train?colour=red", `unknown parameter "colour"`},
	} {
		_, _, err := ReadDataset(questionPlan(), tc.source)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.source, err, tc.want)
		}
	}
	// A CSV split reads as a CSV file does.
	lines, _, err := ReadDataset(questionPlan(), "hf:org/pq::train")
	if err != nil || len(lines) != 1 || lines[0].Expected != 1 {
		t.Errorf("CSV split: %v %+v", err, lines)
	}
}

// TestHubDatasetParquetRows reads a split published only as Parquet
// through the datasets server's rows, page by page, once.
func TestHubDatasetParquetRows(t *testing.T) {
	hub := newFakeHub(t, "openai/gsm8k", map[string]string{"main/test-00000-of-00001.parquet": "PAR1"})
	var rows []string
	for i := range 150 {
		rows = append(rows, fmt.Sprintf(`{"question":"What is %d+1?","answer":"%d + 1 = %d\n#### %d"}`, i, i, i+1, i+1))
	}
	hub.rows = map[string][]string{"main/test": rows}
	t.Setenv(cache.EnvDir, t.TempDir())
	t.Setenv(HFEndpointEnv, hub.URL)
	t.Setenv(HFRowsEnv, hub.URL)
	const source = "hf:openai/gsm8k:main:test?transform=number"
	lines, _, err := ReadDataset(questionPlan(), source)
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != 150 || lines[149].Expected != 150 || lines[149].Line != 150 || lines[0].Inputs["question"] != "What is 0+1?" {
		t.Fatalf("%d lines, last %+v", len(lines), lines[len(lines)-1])
	}
	if hub.count() != 3 {
		t.Errorf("%d requests (%v): want the listing and two pages", hub.count(), hub.requests)
	}
	if _, _, err := ReadDataset(questionPlan(), source+"&n=5"); err != nil || hub.count() != 3 {
		t.Errorf("second read: %v, %d requests", err, hub.count())
	}
}
