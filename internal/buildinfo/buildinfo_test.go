package buildinfo

import (
	"runtime/debug"
	"strings"
	"testing"
)

func TestFromBuildReadsVCSSettings(t *testing.T) {
	bi := &debug.BuildInfo{GoVersion: "go1.99.1", Main: debug.Module{Version: "v1.4.0"}, Settings: []debug.BuildSetting{
		{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "0123456789abcdef"}, {Key: "vcs.modified", Value: "true"},
	}}
	in := fromBuild(bi, true)
	if in.Version != "v1.4.0" || in.Commit != "0123456789abcdef" || !in.Modified || in.Go != "go1.99.1" || in.SpecLanguage != SpecLanguage {
		t.Fatalf("fromBuild = %+v", in)
	}
	text := in.String()
	for _, want := range []string{"runner v1.4.0\n", "commit: 0123456789abcdef+modified\n", "spec language: 1\n", "go: go1.99.1 "} {
		if !strings.Contains(text, want) {
			t.Errorf("String() = %q, want it to hold %q", text, want)
		}
	}
}

func TestFromBuildWithoutVCSSaysSo(t *testing.T) {
	in := fromBuild(&debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, true)
	if in.Version != "devel" || in.Commit != "" || in.CommitLabel() != "" {
		t.Fatalf("fromBuild = %+v", in)
	}
	if !strings.Contains(in.String(), "commit: unknown") {
		t.Errorf("String() = %q, want the commit said unknown", in.String())
	}
	Override = "v9.9.9"
	defer func() { Override = "" }()
	if v := fromBuild(nil, false).Version; v != "v9.9.9" {
		t.Errorf("with Override, Version = %q", v)
	}
}
