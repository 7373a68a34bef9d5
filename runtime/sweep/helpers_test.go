package sweep

import "github.com/debate-runner/runner/internal/runtest"

// testKey is the API key tests configure.
const testKey = "sk-sweep-test-key-0123456789"

var noSleep = runtest.NoSleep

// envFor points the default endpoint at url with the test key.
func envFor(url string) func(string) string { return runtest.Env(url, testKey) }
