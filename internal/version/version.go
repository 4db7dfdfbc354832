// Package version is the version of rwc this binary is, as sessions name
// themselves in pg_stat_activity (application_name is cut at 63 bytes, so
// it is kept short).
package version

import (
	"fmt"
	"runtime/debug"
	"strings"
)

// release is set by a release build:
// go build -ldflags "-X github.com/rwc-dev/rwc/internal/version.release=0.4.0".
var release string

// String is the release ("0.4.0"), else what the build recorded: the
// module's version for go install rwc@v0.4.0, else the commit it was built
// from ("0.0.0-118dc86abcde", "+dirty" with uncommitted changes), else
// "dev".
func String() string {
	if release != "" {
		return strings.TrimPrefix(release, "v")
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "dev"
	}
	return fromBuild(info)
}

func fromBuild(info *debug.BuildInfo) string {
	v := info.Main.Version
	if v != "" && v != "(devel)" && !isPseudo(v) {
		return strings.TrimPrefix(v, "v")
	}
	var rev, dirty string
	for _, s := range info.Settings {
		switch {
		case s.Key == "vcs.revision" && len(s.Value) >= 12:
			rev = s.Value[:12]
		case s.Key == "vcs.modified" && s.Value == "true":
			dirty = "+dirty"
		}
	}
	if rev == "" {
		return "dev"
	}
	return "0.0.0-" + rev + dirty
}

// isPseudo reports a Go pseudo-version (v0.0.0-20261201122918-118dc86abcde,
// maybe +dirty): a commit, not a release, and too long to show whole.
func isPseudo(v string) bool {
	v, _, _ = strings.Cut(v, "+")
	parts := strings.Split(v, "-")
	if len(parts) < 3 {
		return false
	}
	stamp := parts[len(parts)-2]
	if i := strings.LastIndex(stamp, "."); i >= 0 {
		stamp = stamp[i+1:]
	}
	return len(stamp) == 14 && len(parts[len(parts)-1]) == 12
}

// Long is what rwc --version prints: the version (String), then the
// module's version, the commit the binary was built from (with "+dirty"
// when the work tree had uncommitted changes) and the Go version, each as
// the build recorded it ("unknown" when it did not).
func Long() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		info = &debug.BuildInfo{}
	}
	return long(String(), info)
}

func long(v string, info *debug.BuildInfo) string {
	module := info.Main.Version
	if module == "" {
		module = "unknown"
	}
	commit, dirty, at := "unknown", "", ""
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			commit = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "+dirty"
			}
		case "vcs.time":
			at = " (" + s.Value + ")"
		}
	}
	goVersion := info.GoVersion
	if goVersion == "" {
		goVersion = "unknown"
	}
	return fmt.Sprintf("rwc %s\nmodule: %s %s\ncommit: %s%s%s\ngo:     %s\n", v, modulePath(info), module, commit, dirty, at, goVersion)
}

func modulePath(info *debug.BuildInfo) string {
	if info.Main.Path != "" {
		return info.Main.Path
	}
	return "github.com/rwc-dev/rwc"
}
