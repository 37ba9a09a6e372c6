package viz

import (
	"strings"
	"testing"
)

func TestSessionPreloadSendsTheLibraryOnce(t *testing.T) {
	if !HasLibrary() {
		s := NewSession()
		if s.Preload() != nil {
			t.Fatal("Preload without a library returned a bundle")
		}
		return
	}
	lib, _ := library()
	s := NewSession()
	first := s.Preload()
	if first == nil || !strings.Contains(first[mimeHTML], lib) || first[mimePlain] == "" {
		t.Fatalf("first Preload does not carry the library (%d bytes of HTML)", len(first[mimeHTML]))
	}
	if !s.Sent() {
		t.Error("Sent is false after Preload")
	}
	if again := s.Preload(); again != nil {
		t.Errorf("second Preload returned %d bytes", len(again[mimeHTML]))
	}
	// A display rendered after the preload, and its updates, stay small.
	for i := range 2 {
		html := s.RenderDisplay(Line(nil, []float64{1, 2, 3}), "dash")[mimeHTML]
		if strings.Contains(html, lib) || len(html) > 100<<10 {
			t.Errorf("render %d after Preload is %d bytes: it carries the library", i, len(html))
		}
	}
	s.Reset()
	if s.Preload() == nil {
		t.Error("Preload after Reset returned nothing")
	}
}
