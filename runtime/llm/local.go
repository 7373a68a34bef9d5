package llm

import (
	"net"
	"net/url"
	"strings"
)

// IsLocal reports whether baseURL points at this machine (localhost, a
// *.localhost name, a loopback address, or the unspecified address that
// local servers such as Ollama are often reached through). Such endpoints
// typically run without an API key.
func IsLocal(baseURL string) bool {
	u, err := url.Parse(baseURL)
	if err != nil {
		return false
	}
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && (ip.IsLoopback() || ip.IsUnspecified())
}
