package spectest

import (
	"encoding/xml"
	"fmt"
	"io"
	"strings"
	"time"
)

// WriteFile prints a file's results the way go test prints a package's:
// with verbose, a === RUN and --- PASS line per case; always, --- FAIL
// with the reasons for each failed case, then one ok or FAIL line for the
// file.
func WriteFile(w io.Writer, f FileResult, verbose bool) {
	if f.Err != nil {
		fmt.Fprintf(w, "%s\nFAIL\t%s\t[setup failed]\n", indent(f.Err.Error(), ""), f.Path)
		return
	}
	for _, c := range f.Cases {
		name := f.Path + "/" + c.ID
		if verbose {
			fmt.Fprintf(w, "=== RUN   %s\n", name)
		}
		switch {
		case !c.Passed:
			fmt.Fprintf(w, "--- FAIL: %s (%s)\n", name, seconds(c.Duration))
			for _, fl := range c.Failures {
				fmt.Fprintf(w, "    %s: %s\n", fl.Where, fl.Message)
				if fl.Detail != "" {
					fmt.Fprintln(w, indent(fl.Detail, "        "))
				}
			}
		case verbose:
			fmt.Fprintf(w, "--- PASS: %s (%s)\n", name, seconds(c.Duration))
		}
		for _, n := range c.Notes {
			if verbose || !c.Passed || strings.HasPrefix(n, "wrote ") {
				fmt.Fprintf(w, "    note: %s\n", n)
			}
		}
		if verbose || !c.Passed {
			if c.RunDir != "" {
				fmt.Fprintf(w, "    run: %s\n", c.RunDir)
			}
		}
	}
	standIns, calls := 0, 0
	for _, c := range f.Cases {
		standIns += c.StandIns
		calls += c.Calls
	}
	extra := fmt.Sprintf("%d cases", len(f.Cases))
	if len(f.Cases) == 1 {
		extra = "1 case"
	}
	if standIns > 0 {
		extra += fmt.Sprintf(", %d of %d calls answered with stand-ins", standIns, calls)
	}
	if len(f.Cases) == 0 {
		extra = "no cases to run"
	}
	if f.Failed() {
		fmt.Fprintf(w, "FAIL\t%s\t%s\t(%s)\n", f.Path, seconds(f.Duration), extra)
		return
	}
	fmt.Fprintf(w, "ok  \t%s\t%s\t(%s)\n", f.Path, seconds(f.Duration), extra)
}

func seconds(d time.Duration) string { return fmt.Sprintf("%.2fs", d.Seconds()) }

func indent(s, prefix string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = prefix + l
	}
	return strings.Join(lines, "\n")
}

// JUnit XML, as CI systems read it: a suite per test file, a test case per
// case, a failure element per failed case.
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Errors   int         `xml:"errors,attr"`
	Time     string      `xml:"time,attr"`
	Cases    []junitCase `xml:"testcase"`
	Error    *junitFault `xml:"error,omitempty"`
}

type junitCase struct {
	Name      string      `xml:"name,attr"`
	Classname string      `xml:"classname,attr"`
	Time      string      `xml:"time,attr"`
	Failure   *junitFault `xml:"failure,omitempty"`
	SystemOut string      `xml:"system-out,omitempty"`
}

type junitFault struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Text    string `xml:",chardata"`
}

// WriteJUnit writes the results as JUnit XML.
func WriteJUnit(w io.Writer, files []FileResult) error {
	var all junitSuites
	var total time.Duration
	for _, f := range files {
		s := junitSuite{Name: f.Path, Time: secs(f.Duration)}
		total += f.Duration
		if f.Err != nil {
			s.Errors = 1
			s.Error = &junitFault{Message: firstLine(f.Err.Error()), Type: "setup", Text: f.Err.Error()}
			all.Errors++
		}
		for _, c := range f.Cases {
			jc := junitCase{Name: c.ID, Classname: f.Path, Time: secs(c.Duration)}
			if len(c.Notes) > 0 {
				jc.SystemOut = strings.Join(c.Notes, "\n")
			}
			s.Tests++
			if !c.Passed {
				s.Failures++
				var text strings.Builder
				for _, fl := range c.Failures {
					fmt.Fprintf(&text, "%s: %s\n", fl.Where, fl.Message)
					if fl.Detail != "" {
						fmt.Fprintln(&text, indent(fl.Detail, "    "))
					}
				}
				jc.Failure = &junitFault{Message: c.Failures[0].Message, Type: "assertion", Text: text.String()}
			}
			s.Cases = append(s.Cases, jc)
		}
		all.Tests += s.Tests
		all.Failures += s.Failures
		all.Suites = append(all.Suites, s)
	}
	all.Time = secs(total)
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(all); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

func secs(d time.Duration) string { return fmt.Sprintf("%.3f", d.Seconds()) }
