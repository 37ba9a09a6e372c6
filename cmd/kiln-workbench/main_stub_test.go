//go:build !desktop

package main

import (
	"strings"
	"testing"
)

func TestStubExplainsHowToBuild(t *testing.T) {
	var out strings.Builder
	if code := stub(&out); code != 2 {
		t.Errorf("exit status %d, want 2", code)
	}
	for _, want := range []string{"make desktop", "-tags desktop,production,webkit2_41", "libwebkit2gtk-4.1-dev", "kiln workbench --browser"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("message lacks %q:\n%s", want, out.String())
		}
	}
}
