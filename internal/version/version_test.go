package version

import (
	"runtime/debug"
	"testing"
)

func TestFromBuild(t *testing.T) {
	for _, c := range []struct {
		main     string
		settings []debug.BuildSetting
		want     string
	}{
		{"v0.4.0", nil, "0.4.0"},
		{"(devel)", nil, "dev"},
		{"", nil, "dev"},
		{"(devel)", []debug.BuildSetting{{Key: "vcs.revision", Value: "118dc86abcdef0123456789"}}, "0.0.0-118dc86abcde"},
		{"v0.0.0-20261201122918-118dc86abcde+dirty", []debug.BuildSetting{{Key: "vcs.revision", Value: "118dc86abcdef0123456789"}, {Key: "vcs.modified", Value: "true"}}, "0.0.0-118dc86abcde+dirty"},
		{"v0.4.1-0.20261201122918-118dc86abcde", []debug.BuildSetting{{Key: "vcs.revision", Value: "118dc86abcdef0123456789"}}, "0.0.0-118dc86abcde"},
	} {
		info := &debug.BuildInfo{Main: debug.Module{Version: c.main}, Settings: c.settings}
		if got := fromBuild(info); got != c.want {
			t.Errorf("fromBuild(%q, %v) = %q, want %q", c.main, c.settings, got, c.want)
		}
	}
}

func TestLong(t *testing.T) {
	info := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/rwc-dev/rwc", Version: "v0.4.0"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "118dc86abcdef0123456789"}, {Key: "vcs.modified", Value: "true"}, {Key: "vcs.time", Value: "2026-12-01T12:29:18Z"}}}
	want := "rwc 0.4.0\nmodule: github.com/rwc-dev/rwc v0.4.0\ncommit: 118dc86abcdef0123456789+dirty (2026-12-01T12:29:18Z)\ngo:     go1.26.8\n"
	if got := long("0.4.0", info); got != want {
		t.Errorf("long = %q, want %q", got, want)
	}
	want = "rwc dev\nmodule: github.com/rwc-dev/rwc unknown\ncommit: unknown\ngo:     unknown\n"
	if got := long("dev", &debug.BuildInfo{}); got != want {
		t.Errorf("long without build info = %q, want %q", got, want)
	}
}
