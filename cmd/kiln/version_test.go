package main

import (
	"bytes"
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

// `kiln version` and `kiln --version` print the release, module, Go
// version and platform, backends and CPU.
func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}, {"-version"}} {
		code, stdout, stderr := kiln(args...)
		if code != 0 || stderr != "" {
			t.Fatalf("kiln %v: status %d, stderr %q", args, code, stderr)
		}
		for _, line := range []string{
			`^kiln ` + regexp.QuoteMeta(version) + `$`,
			`^module    \S+ \S+$`,
			`^go        go1\.\d+\S* ` + runtime.GOOS + `/` + runtime.GOARCH + `$`,
			`^backends  (\w+, )*cpu(, \w+)* \(see 'kiln devices'\)$`,
			`^backends  .*\bstrict\b`,
			`^cpu       \S.*$`,
		} {
			if !regexp.MustCompile(`(?m)` + line).MatchString(stdout) {
				t.Errorf("kiln %v: no line matching %s:\n%s", args, line, stdout)
			}
		}
	}
}

// The module version and VCS settings Go records are shown; without them
// the version is (devel) and there is no revision line.
func TestVersionFromBuildInfo(t *testing.T) {
	for _, c := range []struct {
		name string
		info *debug.BuildInfo
		says []string
		not  string
	}{
		{"released", &debug.BuildInfo{GoVersion: "go1.26.1", Main: debug.Module{Path: "github.com/kiln-ml/kiln", Version: "v0.3.0"}},
			[]string{"module    github.com/kiln-ml/kiln v0.3.0\n", "go        go1.26.1 "}, "revision"},
		{"built from a checkout", &debug.BuildInfo{Main: debug.Module{Path: "github.com/kiln-ml/kiln", Version: "(devel)"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.time", Value: "2026-01-02T03:04:05Z"}, {Key: "vcs.modified", Value: "true"}}},
			[]string{"module    github.com/kiln-ml/kiln (devel)\n", "revision  abc123 (2026-01-02T03:04:05Z, with uncommitted changes)\n"}, ""},
		{"clean checkout", &debug.BuildInfo{Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.modified", Value: "false"}}},
			[]string{"revision  abc123\n"}, "uncommitted"},
		{"no build info", nil, []string{"module    github.com/kiln-ml/kiln (devel)\n", "go        " + runtime.Version()}, "revision"},
	} {
		var b bytes.Buffer
		printVersion(&b, c.info)
		for _, s := range c.says {
			if !strings.Contains(b.String(), s) {
				t.Errorf("%s: output lacks %q:\n%s", c.name, s, b.String())
			}
		}
		if c.not != "" && strings.Contains(b.String(), c.not) {
			t.Errorf("%s: output says %q:\n%s", c.name, c.not, b.String())
		}
	}
}
