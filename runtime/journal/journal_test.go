package journal

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// line returns a well-formed journal line for seq.
func line(seq int64, typ string) string {
	return fmt.Sprintf(`{"seq":%d,"time":"2025-01-02T03:04:05Z","type":%q}`+"\n", seq, typ)
}

func TestScan(t *testing.T) {
	big := strings.Repeat("x", 200<<10) // longer than the reader's buffer
	bigLine := fmt.Sprintf(`{"seq":2,"time":"2025-01-02T03:04:05Z","type":"output","data":%q}`+"\n", big)
	tests := []struct {
		name     string
		in       string
		wantSeqs []int64
		wantTorn bool
		errLine  int // 0: no error
	}{
		{name: "empty", in: ""},
		{name: "intact", in: line(1, "a") + line(2, "b"), wantSeqs: []int64{1, 2}},
		{name: "gaps in seq allowed", in: line(1, "a") + line(5, "b"), wantSeqs: []int64{1, 5}},
		{name: "partial last line", in: line(1, "a") + `{"seq":2,"ty`, wantSeqs: []int64{1}, wantTorn: true},
		{name: "valid last line without newline", in: line(1, "a") + strings.TrimSuffix(line(2, "b"), "\n"), wantSeqs: []int64{1}, wantTorn: true},
		{name: "invalid last line with newline", in: line(1, "a") + "\x00\x00garbage\n", wantSeqs: []int64{1}, wantTorn: true},
		{name: "empty last line", in: line(1, "a") + "\n", wantSeqs: []int64{1}, wantTorn: true},
		{name: "only a torn line", in: `{"seq":1`, wantTorn: true},
		{name: "invalid middle line", in: line(1, "a") + "garbage\n" + line(2, "b"), errLine: 2},
		{name: "invalid first line", in: "{\n" + line(1, "a"), errLine: 1},
		{name: "empty middle line", in: line(1, "a") + "\n" + line(2, "b"), errLine: 2},
		{name: "invalid line before torn line", in: line(1, "a") + "garbage\n" + `{"seq":2`, errLine: 2},
		{name: "seq goes back", in: line(1, "a") + line(2, "b") + line(2, "c"), errLine: 3},
		{name: "seq zero", in: line(0, "a"), errLine: 1},
		{name: "missing type", in: line(1, "a") + `{"seq":2,"time":"2025-01-02T03:04:05Z"}` + "\n", errLine: 2},
		{name: "wrong field type", in: line(1, "a") + `{"seq":"2","type":"b"}` + "\n" + line(3, "c"), errLine: 2},
		{name: "large line", in: line(1, "a") + bigLine + line(3, "c"), wantSeqs: []int64{1, 2, 3}},
		{name: "large torn line", in: line(1, "a") + bigLine[:len(bigLine)-10], wantSeqs: []int64{1}, wantTorn: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var seqs []int64
			torn, err := Scan(strings.NewReader(tt.in), func(e Event) error {
				seqs = append(seqs, e.Seq)
				return nil
			})
			if tt.errLine != 0 {
				var le *LineError
				if !errors.As(err, &le) {
					t.Fatalf("err = %v, want a *LineError", err)
				}
				if le.Line != tt.errLine {
					t.Fatalf("error on line %d (%v), want line %d", le.Line, err, tt.errLine)
				}
				if !strings.HasPrefix(err.Error(), fmt.Sprintf("line %d: ", tt.errLine)) {
					t.Fatalf("error %q does not name line %d", err, tt.errLine)
				}
				return
			}
			if err != nil {
				t.Fatalf("Scan: %v", err)
			}
			if torn != tt.wantTorn {
				t.Errorf("torn = %v, want %v", torn, tt.wantTorn)
			}
			if fmt.Sprint(seqs) != fmt.Sprint(tt.wantSeqs) {
				t.Errorf("seqs = %v, want %v", seqs, tt.wantSeqs)
			}
		})
	}
}

func TestScanLargeLineContent(t *testing.T) {
	big := strings.Repeat("0123456789", 50<<10)
	in := fmt.Sprintf(`{"seq":1,"time":"2025-01-02T03:04:05Z","type":"output","data":%q}`+"\n", big) + line(2, "b")
	var got []Event
	if _, err := Scan(strings.NewReader(in), func(e Event) error {
		got = append(got, e)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || string(got[0].Data) != fmt.Sprintf("%q", big) || got[1].Type != "b" {
		t.Fatalf("large line not read back intact (%d events)", len(got))
	}
}

func TestScanStopsOnCallbackError(t *testing.T) {
	stop := errors.New("stop")
	calls := 0
	_, err := Scan(strings.NewReader(line(1, "a")+line(2, "b")+line(3, "c")), func(e Event) error {
		calls++
		if e.Seq == 2 {
			return stop
		}
		return nil
	})
	if err != stop {
		t.Fatalf("err = %v, want the callback's error unchanged", err)
	}
	if calls != 2 {
		t.Fatalf("callback ran %d times, want 2", calls)
	}
}

func TestScanReadError(t *testing.T) {
	boom := errors.New("disk on fire")
	r := io.MultiReader(strings.NewReader(line(1, "a")), iotest.ErrReader(boom))
	if _, err := Scan(r, nil); !errors.Is(err, boom) {
		t.Fatalf("err = %v, want it to wrap the read error", err)
	}
}
