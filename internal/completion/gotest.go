package completion

// GoTestFlags turns go test's single-dash -run into --run in runner test's
// command line (args), so that the habit of go test users works.
func GoTestFlags(args []string) []string {
	if len(args) == 0 || args[0] != "test" {
		return args
	}
	out := append([]string(nil), args...)
	for i, a := range out {
		switch {
		case a == "--":
			return out
		case a == "-run":
			out[i] = "--run"
		case len(a) > 5 && a[:5] == "-run=":
			out[i] = "-" + a
		}
	}
	return out
}
