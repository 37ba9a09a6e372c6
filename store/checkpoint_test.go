package store_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/kiln-ml/kiln/internal/testutil"
	"github.com/kiln-ml/kiln/store"
	"github.com/kiln-ml/kiln/tensor"
)

// sampleCheckpoint returns a checkpoint with every field set and tensors
// of several dtypes, including a transposed view and a 0-d tensor.
func sampleCheckpoint(dev tensor.Device) store.Checkpoint {
	return store.Checkpoint{
		Model: map[string]*tensor.Tensor{
			"l1.weight": patterned(dev, tensor.Float32, 4, 3),
			"l1.bias":   patterned(dev, tensor.Float32, 4),
			"bn.w64":    patterned(dev, tensor.Float64, 2, 2),
			"emb.half":  patterned(dev, tensor.Float16, 3, 2),
			"emb.bf16":  patterned(dev, tensor.BFloat16, 5),
			"bn.count":  patterned(dev, tensor.Int64),
			"mask":      patterned(dev, tensor.Bool, 2, 3),
			"ids":       patterned(dev, tensor.Int32, 3),
			"bytes":     patterned(dev, tensor.Uint8, 0, 2),
			"t.weight":  patterned(dev, tensor.Float32, 3, 4).Transpose(0, 1),
		},
		Optimizer: map[string]*tensor.Tensor{
			"l1.weight.exp_avg":    patterned(dev, tensor.Float32, 4, 3),
			"l1.weight.exp_avg_sq": patterned(dev, tensor.Float32, 4, 3),
		},
		OptimizerJSON: []byte(`{"kind":"AdamW","lr":0.001,"steps":{"l1.weight":7}}`),
		Schedule:      []byte(`{"kind":"OneCycle","step":7}`),
		RNG:           store.RNGState{Seed: 42, Position: 1<<63 + 5},
		Epoch:         3,
		Step:          700,
		Config:        []byte(`{"batch":64,"name":"ünïcode"}`),
		Metrics:       map[string]float64{"loss": 0.25, "acc": 0.9, "nan": math.NaN(), "inf": math.Inf(1), "ninf": math.Inf(-1)},
		Extra:         []byte(`{"batch":5,"history":[1,2]}`),
	}
}

// checkSame fails unless got holds what want holds.
func checkSame(t *testing.T, got *store.Checkpoint, want store.Checkpoint) {
	t.Helper()
	for _, pair := range []struct {
		name      string
		got, want map[string]*tensor.Tensor
	}{{"model", got.Model, want.Model}, {"optimizer", got.Optimizer, want.Optimizer}} {
		if len(pair.got) != len(pair.want) {
			t.Errorf("%s: %d tensors, want %d", pair.name, len(pair.got), len(pair.want))
		}
		for n, w := range pair.want {
			g := pair.got[n]
			if g == nil {
				t.Errorf("%s: %s missing", pair.name, n)
				continue
			}
			if g.DType() != w.DType() || !equalInts(g.Shape(), w.Shape()) || !bytes.Equal(g.Bytes(), w.Bytes()) {
				t.Errorf("%s: %s = %s %v, want %s %v", pair.name, n, g.DType(), g.Shape(), w.DType(), w.Shape())
			}
		}
	}
	for _, f := range []struct {
		name      string
		got, want []byte
	}{{"OptimizerJSON", got.OptimizerJSON, want.OptimizerJSON}, {"Schedule", got.Schedule, want.Schedule}, {"Config", got.Config, want.Config}, {"Extra", got.Extra, want.Extra}} {
		if !jsonEqual(f.got, f.want) {
			t.Errorf("%s = %s, want %s", f.name, f.got, f.want)
		}
	}
	if got.RNG != want.RNG || got.Epoch != want.Epoch || got.Step != want.Step {
		t.Errorf("RNG, epoch, step = %+v %d %d, want %+v %d %d", got.RNG, got.Epoch, got.Step, want.RNG, want.Epoch, want.Step)
	}
	if len(got.Metrics) != len(want.Metrics) {
		t.Errorf("metrics %v, want %v", got.Metrics, want.Metrics)
	}
	for k, w := range want.Metrics {
		g, ok := got.Metrics[k]
		if !ok || !(g == w || math.IsNaN(g) && math.IsNaN(w)) {
			t.Errorf("metric %s = %v, want %v", k, g, w)
		}
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// jsonEqual compares two JSON documents by value; nil equals only nil.
func jsonEqual(a, b []byte) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}

func TestCheckpointRoundTrip(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		want := sampleCheckpoint(dev)
		dir := filepath.Join(t.TempDir(), "ckpt")
		if err := store.SaveCheckpoint(dir, want); err != nil {
			t.Fatal(err)
		}
		got, err := store.LoadCheckpoint(dir, dev)
		if err != nil {
			t.Fatal(err)
		}
		checkSame(t, got, want)
		got.Release()

		entries, _ := os.ReadDir(filepath.Dir(dir))
		if len(entries) != 1 {
			t.Errorf("parent holds %d entries, want only the checkpoint", len(entries))
		}
		var man struct {
			Format  string `json:"format"`
			Version int    `json:"version"`
			Created string `json:"created"`
			Files   []struct {
				Name   string `json:"name"`
				Size   int64  `json:"size"`
				SHA256 string `json:"sha256"`
			} `json:"files"`
		}
		raw, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
		if err != nil || json.Unmarshal(raw, &man) != nil {
			t.Fatalf("manifest: %v\n%s", err, raw)
		}
		if man.Format != store.CheckpointFormat || man.Version != store.CheckpointVersion || man.Created == "" || len(man.Files) != 3 {
			t.Errorf("manifest = %+v", man)
		}
		// model.safetensors is a plain safetensors file other tools can read.
		m, _, err := store.ReadSafetensors(filepath.Join(dir, "model.safetensors"), dev)
		if err != nil {
			t.Fatal(err)
		}
		if len(m) != len(want.Model) {
			t.Errorf("model.safetensors holds %d tensors, want %d", len(m), len(want.Model))
		}
		for _, x := range m {
			x.Release()
		}
	})
}

func TestCheckpointEmptyFields(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		dir := filepath.Join(t.TempDir(), "ckpt")
		if err := store.SaveCheckpoint(dir, store.Checkpoint{}); err != nil {
			t.Fatal(err)
		}
		got, err := store.LoadCheckpoint(dir, dev)
		if err != nil {
			t.Fatal(err)
		}
		defer got.Release()
		if len(got.Model) != 0 || len(got.Optimizer) != 0 || got.Config != nil || got.Schedule != nil || got.OptimizerJSON != nil || got.Extra != nil {
			t.Errorf("empty checkpoint loaded as %+v", got)
		}
		// Without Extra, state.json has no "extra" key: the files stay as
		// they were before the field existed.
		state, err := os.ReadFile(filepath.Join(dir, "state.json"))
		if err != nil || strings.Contains(string(state), "extra") {
			t.Errorf("state.json of a checkpoint without Extra: %s (%v)", state, err)
		}
	})
}

func TestCheckpointReplace(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		dir := filepath.Join(t.TempDir(), "ckpt")
		first := sampleCheckpoint(dev)
		if err := store.SaveCheckpoint(dir, first); err != nil {
			t.Fatal(err)
		}
		second := store.Checkpoint{Model: map[string]*tensor.Tensor{"w": patterned(dev, tensor.Float64, 2)}, Epoch: 9}
		if err := store.SaveCheckpoint(dir, second); err != nil {
			t.Fatal(err)
		}
		got, err := store.LoadCheckpoint(dir, dev)
		if err != nil {
			t.Fatal(err)
		}
		checkSame(t, got, second)
		got.Release()
		entries, _ := os.ReadDir(filepath.Dir(dir))
		if len(entries) != 1 {
			t.Errorf("parent holds %d entries after replacing, want 1", len(entries))
		}
	})
}

func TestCheckpointSaveErrors(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		released := patterned(dev, tensor.Float32, 2)
		released.Release()
		cases := []struct {
			name string
			c    store.Checkpoint
			want string
		}{
			{"nil model tensor", store.Checkpoint{Model: map[string]*tensor.Tensor{"w": nil}}, "nil"},
			{"released optimizer tensor", store.Checkpoint{Optimizer: map[string]*tensor.Tensor{"w": released}}, "released"},
			{"invalid config JSON", store.Checkpoint{Config: []byte("{")}, "Config"},
			{"invalid schedule JSON", store.Checkpoint{Schedule: []byte("nope")}, "Schedule"},
			{"invalid optimizer JSON", store.Checkpoint{OptimizerJSON: []byte("[1,")}, "OptimizerJSON"},
			{"invalid extra JSON", store.Checkpoint{Extra: []byte("{]")}, "Extra"},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				parent := t.TempDir()
				dir := filepath.Join(parent, "ckpt")
				prev := store.Checkpoint{Epoch: 1}
				if err := store.SaveCheckpoint(dir, prev); err != nil {
					t.Fatal(err)
				}
				err := store.SaveCheckpoint(dir, tc.c)
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("err = %v, want one mentioning %q", err, tc.want)
				}
				got, err := store.LoadCheckpoint(dir, dev)
				if err != nil {
					t.Fatalf("previous checkpoint no longer loads: %v", err)
				}
				got.Release()
				if got.Epoch != 1 {
					t.Errorf("epoch %d, want the previous checkpoint's 1", got.Epoch)
				}
				if entries, _ := os.ReadDir(parent); len(entries) != 1 {
					t.Errorf("failed save left %d entries in the parent, want 1", len(entries))
				}
			})
		}
	})
}

// rewriteManifest edits dir's manifest.json through edit.
func rewriteManifest(t *testing.T, dir string, edit func(m map[string]any)) {
	t.Helper()
	p := filepath.Join(dir, "manifest.json")
	raw, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	raw, _ = json.Marshal(m)
	if err := os.WriteFile(p, raw, 0o644); err != nil {
		t.Fatal(err)
	}
}

// fileEntry returns the manifest entry for name.
func fileEntry(m map[string]any, name string) map[string]any {
	for _, f := range m["files"].([]any) {
		if e := f.(map[string]any); e["name"] == name {
			return e
		}
	}
	return nil
}

// setState replaces state.json with content and fixes the manifest to
// match, so only the parser sees the problem.
func setState(t *testing.T, dir, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "state.json"), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(content))
	rewriteManifest(t, dir, func(m map[string]any) {
		e := fileEntry(m, "state.json")
		e["size"] = len(content)
		e["sha256"] = hex.EncodeToString(sum[:])
	})
}

func TestCheckpointCorruption(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		flip := func(name string, at int) func(t *testing.T, dir string) {
			return func(t *testing.T, dir string) {
				p := filepath.Join(dir, name)
				b, err := os.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				if at < 0 {
					at += len(b)
				}
				b[at] ^= 0x40
				os.WriteFile(p, b, 0o644)
			}
		}
		truncate := func(name string) func(t *testing.T, dir string) {
			return func(t *testing.T, dir string) {
				p := filepath.Join(dir, name)
				fi, _ := os.Stat(p)
				os.Truncate(p, fi.Size()/2)
			}
		}
		remove := func(name string) func(t *testing.T, dir string) {
			return func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, name)) }
		}
		cases := []struct {
			name       string
			corrupt    func(t *testing.T, dir string)
			file, what string
		}{
			{"truncated model", truncate("model.safetensors"), "model.safetensors", "truncated"},
			{"truncated optimizer", truncate("optimizer.safetensors"), "optimizer.safetensors", "truncated"},
			{"truncated state", truncate("state.json"), "state.json", "truncated"},
			{"grown model", func(t *testing.T, dir string) {
				f, _ := os.OpenFile(filepath.Join(dir, "model.safetensors"), os.O_APPEND|os.O_WRONLY, 0)
				f.Write([]byte{0})
				f.Close()
			}, "model.safetensors", "manifest says"},
			{"flipped byte in model data", flip("model.safetensors", -1), "model.safetensors", "checksum mismatch"},
			{"flipped byte in model header", flip("model.safetensors", 10), "model.safetensors", "checksum mismatch"},
			{"flipped byte in optimizer", flip("optimizer.safetensors", -3), "optimizer.safetensors", "checksum mismatch"},
			{"flipped byte in state", flip("state.json", 5), "state.json", "checksum mismatch"},
			{"deleted model", remove("model.safetensors"), "model.safetensors", "missing"},
			{"deleted optimizer", remove("optimizer.safetensors"), "optimizer.safetensors", "missing"},
			{"deleted state", remove("state.json"), "state.json", "missing"},
			{"deleted manifest", remove("manifest.json"), "manifest.json", "missing"},
			{"manifest not JSON", func(t *testing.T, dir string) {
				os.WriteFile(filepath.Join(dir, "manifest.json"), []byte("{\"format\":"), 0o644)
			}, "manifest.json", "bad JSON"},
			{"manifest trailing data", func(t *testing.T, dir string) {
				p := filepath.Join(dir, "manifest.json")
				b, _ := os.ReadFile(p)
				os.WriteFile(p, append(b, "{}"...), 0o644)
			}, "manifest.json", "bad JSON"},
			{"manifest too large", func(t *testing.T, dir string) {
				os.WriteFile(filepath.Join(dir, "manifest.json"), bytes.Repeat([]byte(" "), 2<<20), 0o644)
			}, "manifest.json", "larger than"},
			{"wrong version", func(t *testing.T, dir string) {
				rewriteManifest(t, dir, func(m map[string]any) { m["version"] = 99 })
			}, "manifest.json", "unknown version 99"},
			{"wrong format", func(t *testing.T, dir string) {
				rewriteManifest(t, dir, func(m map[string]any) { m["format"] = "other" })
			}, "manifest.json", "format"},
			{"unknown manifest field", func(t *testing.T, dir string) {
				rewriteManifest(t, dir, func(m map[string]any) { m["extra"] = 1 })
			}, "manifest.json", "bad JSON"},
			{"manifest omits a file", func(t *testing.T, dir string) {
				rewriteManifest(t, dir, func(m map[string]any) { m["files"] = m["files"].([]any)[:2] })
			}, "manifest.json", "does not list"},
			{"manifest lists a file twice", func(t *testing.T, dir string) {
				rewriteManifest(t, dir, func(m map[string]any) { m["files"] = append(m["files"].([]any), m["files"].([]any)[0]) })
			}, "manifest.json", "twice"},
			{"manifest lists an unknown file", func(t *testing.T, dir string) {
				rewriteManifest(t, dir, func(m map[string]any) {
					m["files"] = append(m["files"].([]any), map[string]any{"name": "../escape", "size": 0, "sha256": strings.Repeat("0", 64)})
				})
			}, "manifest.json", "unknown file"},
			{"malformed sha256", func(t *testing.T, dir string) {
				rewriteManifest(t, dir, func(m map[string]any) { fileEntry(m, "state.json")["sha256"] = "xyz" })
			}, "manifest.json", "malformed sha256"},
			{"negative size", func(t *testing.T, dir string) {
				rewriteManifest(t, dir, func(m map[string]any) { fileEntry(m, "state.json")["size"] = -1 })
			}, "manifest.json", "negative size"},
			{"wrong checksum in manifest", func(t *testing.T, dir string) {
				rewriteManifest(t, dir, func(m map[string]any) { fileEntry(m, "model.safetensors")["sha256"] = strings.Repeat("ab", 32) })
			}, "model.safetensors", "checksum mismatch"},
			{"state not JSON", func(t *testing.T, dir string) { setState(t, dir, "{\"epoch\": 1") }, "state.json", "bad JSON"},
			{"state wrong type", func(t *testing.T, dir string) { setState(t, dir, `{"epoch":"one"}`) }, "state.json", "bad JSON"},
			{"state bad metric", func(t *testing.T, dir string) { setState(t, dir, `{"metrics":{"loss":"lots"}}`) }, "state.json", "bad JSON"},
			{"state negative step", func(t *testing.T, dir string) { setState(t, dir, `{"step":-4}`) }, "state.json", "negative"},
			{"state unknown field", func(t *testing.T, dir string) { setState(t, dir, `{"surprise":1}`) }, "state.json", "bad JSON"},
			{"model replaced by a directory", func(t *testing.T, dir string) {
				p := filepath.Join(dir, "model.safetensors")
				os.Remove(p)
				os.Mkdir(p, 0o755)
			}, "model.safetensors", "not a regular file"},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				dir := filepath.Join(t.TempDir(), "ckpt")
				var err error
				tensor.Scope(func() { err = store.SaveCheckpoint(dir, sampleCheckpoint(dev)) })
				if err != nil {
					t.Fatal(err)
				}
				tc.corrupt(t, dir)
				got, err := store.LoadCheckpoint(dir, dev)
				if err == nil {
					got.Release()
					t.Fatal("corrupt checkpoint loaded")
				}
				if got != nil {
					t.Errorf("a checkpoint came back with the error")
				}
				if !errors.Is(err, store.ErrCorrupt) {
					t.Errorf("err = %v, want one wrapping ErrCorrupt", err)
				}
				if msg := err.Error(); !strings.Contains(msg, tc.file) || !strings.Contains(msg, tc.what) {
					t.Errorf("err = %q, want one naming %s and %q", msg, tc.file, tc.what)
				}
			})
		}
	})
}

// A manifest with valid checksums over a malformed safetensors file (as a
// buggy writer could produce) still fails with ErrCorrupt, loading nothing.
func TestCheckpointConsistentButBadSafetensors(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		dir := filepath.Join(t.TempDir(), "ckpt")
		if err := store.SaveCheckpoint(dir, sampleCheckpoint(dev)); err != nil {
			t.Fatal(err)
		}
		bad := []byte("\x08\x00\x00\x00\x00\x00\x00\x00{\"a\":1} ")
		os.WriteFile(filepath.Join(dir, "optimizer.safetensors"), bad, 0o644)
		sum := sha256.Sum256(bad)
		rewriteManifest(t, dir, func(m map[string]any) {
			e := fileEntry(m, "optimizer.safetensors")
			e["size"] = len(bad)
			e["sha256"] = hex.EncodeToString(sum[:])
		})
		got, err := store.LoadCheckpoint(dir, dev)
		if err == nil || got != nil || !errors.Is(err, store.ErrCorrupt) || !strings.Contains(err.Error(), "optimizer.safetensors") {
			t.Fatalf("got %v, %v; want ErrCorrupt naming optimizer.safetensors", got, err)
		}
	})
}

func TestCheckpointExtraFilesAllowed(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		dir := filepath.Join(t.TempDir(), "ckpt")
		want := sampleCheckpoint(dev)
		if err := store.SaveCheckpoint(dir, want); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, "README.md"), []byte("notes"), 0o644)
		os.Mkdir(filepath.Join(dir, "extra"), 0o755)
		got, err := store.LoadCheckpoint(dir, dev)
		if err != nil {
			t.Fatal(err)
		}
		checkSame(t, got, want)
		got.Release()
	})
}

func TestCheckpointMissingDirectory(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		_, err := store.LoadCheckpoint(filepath.Join(t.TempDir(), "nope"), dev)
		if err == nil || !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("err = %v, want one wrapping os.ErrNotExist", err)
		}
	})
}

// TestCheckpointInterruptedSave simulates crashes at each point of a save:
// leftover temporary and set-aside directories (complete or half written)
// never affect loading the checkpoint in place, and the next save removes
// them.
func TestCheckpointInterruptedSave(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		parent := t.TempDir()
		dir := filepath.Join(parent, "ckpt")
		prev := sampleCheckpoint(dev)
		if err := store.SaveCheckpoint(dir, prev); err != nil {
			t.Fatal(err)
		}
		// A save that crashed while writing: a half-written temp directory.
		half := filepath.Join(parent, ".ckpt.tmp-123")
		os.Mkdir(half, 0o755)
		os.WriteFile(filepath.Join(half, "model.safetensors"), []byte("partial"), 0o644)
		// A save that crashed after writing everything but before the rename.
		full := filepath.Join(parent, ".ckpt.tmp-456")
		if err := store.SaveCheckpoint(full, store.Checkpoint{Epoch: 77}); err != nil {
			t.Fatal(err)
		}
		// A save that crashed after removing the previous one aside.
		aside := filepath.Join(parent, ".ckpt.old-789")
		os.Mkdir(aside, 0o755)
		// Another checkpoint whose name shares a prefix is left alone.
		other := filepath.Join(parent, "ckpt2")
		if err := store.SaveCheckpoint(other, store.Checkpoint{Epoch: 5}); err != nil {
			t.Fatal(err)
		}
		otherTmp := filepath.Join(parent, ".ckpt2.tmp-1")
		os.Mkdir(otherTmp, 0o755)

		got, err := store.LoadCheckpoint(dir, dev)
		if err != nil {
			t.Fatalf("previous checkpoint does not load beside leftovers: %v", err)
		}
		checkSame(t, got, prev)
		got.Release()

		next := store.Checkpoint{Epoch: 4, Model: map[string]*tensor.Tensor{"w": patterned(dev, tensor.Float32, 3)}}
		if err := store.SaveCheckpoint(dir, next); err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{half, full, aside} {
			if _, err := os.Stat(p); !os.IsNotExist(err) {
				t.Errorf("leftover %s not removed by the next save", filepath.Base(p))
			}
		}
		if _, err := os.Stat(otherTmp); err != nil {
			t.Errorf("another checkpoint's temp directory was removed: %v", err)
		}
		got, err = store.LoadCheckpoint(dir, dev)
		if err != nil {
			t.Fatal(err)
		}
		checkSame(t, got, next)
		got.Release()
	})
}

// FuzzLoadCheckpointManifest feeds arbitrary manifest.json and state.json
// contents to LoadCheckpoint. In the manifest, STATE_SIZE and STATE_SHA
// stand for the real size and SHA-256 of the state input, so the fuzzer
// reaches the state parser too. Loading must never panic, and either fail
// without a checkpoint or return a complete one.
func FuzzLoadCheckpointManifest(f *testing.F) {
	dev := tensor.CPU()
	base := f.TempDir()
	src := filepath.Join(base, "src")
	c := sampleCheckpoint(dev)
	if err := store.SaveCheckpoint(src, c); err != nil {
		f.Fatal(err)
	}
	c.Release()
	manifest, _ := os.ReadFile(filepath.Join(src, "manifest.json"))
	state, _ := os.ReadFile(filepath.Join(src, "state.json"))
	sum := sha256.Sum256(state)
	template := strings.Replace(string(manifest), hex.EncodeToString(sum[:]), "STATE_SHA", 1)
	template = strings.Replace(template, `"size": `+strconv.Itoa(len(state))+",", `"size": STATE_SIZE,`, 1)
	f.Add([]byte(template), state)
	f.Add([]byte(template), []byte(`{"epoch":1,"metrics":{"x":"NaN"},"config":null}`))
	f.Add([]byte(template), []byte(`{"epoch":1e400}`))
	f.Add([]byte(`{"format":"kiln-checkpoint","version":1,"files":[]}`), []byte(`{}`))
	f.Add([]byte(`{"version":2}`), []byte(`[]`))
	f.Add([]byte(`null`), []byte(`null`))

	model, _ := os.ReadFile(filepath.Join(src, "model.safetensors"))
	optim, _ := os.ReadFile(filepath.Join(src, "optimizer.safetensors"))
	n := 0
	f.Fuzz(func(t *testing.T, manifest, state []byte) {
		n++
		dir := filepath.Join(base, "c"+strconv.Itoa(n))
		os.Mkdir(dir, 0o755)
		defer os.RemoveAll(dir)
		sum := sha256.Sum256(state)
		m := bytes.ReplaceAll(manifest, []byte("STATE_SHA"), []byte(hex.EncodeToString(sum[:])))
		m = bytes.ReplaceAll(m, []byte("STATE_SIZE"), []byte(strconv.Itoa(len(state))))
		for name, b := range map[string][]byte{"manifest.json": m, "state.json": state, "model.safetensors": model, "optimizer.safetensors": optim} {
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		got, err := store.LoadCheckpoint(dir, dev)
		if err != nil {
			if got != nil {
				t.Fatalf("error %v came with a checkpoint", err)
			}
			if !errors.Is(err, store.ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		if len(got.Model) != 10 || len(got.Optimizer) != 2 || got.Metrics == nil {
			t.Fatalf("loaded a partial checkpoint: %d model, %d optimizer tensors", len(got.Model), len(got.Optimizer))
		}
		got.Release()
	})
}

// TestCheckpointCrashBetweenRenames simulates a save stopped after the
// previous checkpoint was set aside and before the new one was renamed in:
// LoadCheckpoint finds the newest complete one, and the next save puts
// things back in order.
func TestCheckpointCrashBetweenRenames(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		cases := []struct {
			name      string
			newState  string // "complete", "partial" or "none"
			wantEpoch int
		}{
			{"new checkpoint complete", "complete", 2},
			{"new checkpoint partial", "partial", 1},
			{"new checkpoint gone", "none", 1},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				parent := t.TempDir()
				dir := filepath.Join(parent, "ckpt")
				if err := store.SaveCheckpoint(dir, store.Checkpoint{Epoch: 1}); err != nil {
					t.Fatal(err)
				}
				tmp := filepath.Join(parent, ".ckpt.tmp-42")
				switch tc.newState {
				case "complete":
					if err := store.SaveCheckpoint(tmp, store.Checkpoint{Epoch: 2}); err != nil {
						t.Fatal(err)
					}
				case "partial":
					os.Mkdir(tmp, 0o755)
					os.WriteFile(filepath.Join(tmp, "model.safetensors"), []byte("par"), 0o644)
				}
				if err := os.Rename(dir, filepath.Join(parent, ".ckpt.old-42")); err != nil {
					t.Fatal(err)
				}
				got, err := store.LoadCheckpoint(dir, dev)
				if err != nil {
					t.Fatal(err)
				}
				got.Release()
				if got.Epoch != tc.wantEpoch {
					t.Errorf("loaded epoch %d, want %d", got.Epoch, tc.wantEpoch)
				}
				// A failing save moves the survivor back and keeps it.
				if err := store.SaveCheckpoint(dir, store.Checkpoint{Model: map[string]*tensor.Tensor{"w": nil}}); err == nil {
					t.Fatal("saving a nil tensor succeeded")
				}
				if _, err := os.Stat(filepath.Join(dir, "manifest.json")); err != nil {
					t.Fatalf("survivor not moved back into place: %v", err)
				}
				got, err = store.LoadCheckpoint(dir, dev)
				if err != nil {
					t.Fatal(err)
				}
				got.Release()
				if got.Epoch != tc.wantEpoch {
					t.Errorf("after a failed save loaded epoch %d, want %d", got.Epoch, tc.wantEpoch)
				}
				if err := store.SaveCheckpoint(dir, store.Checkpoint{Epoch: 3}); err != nil {
					t.Fatal(err)
				}
				got, err = store.LoadCheckpoint(dir, dev)
				if err != nil {
					t.Fatal(err)
				}
				got.Release()
				if got.Epoch != 3 {
					t.Errorf("after the next save loaded epoch %d, want 3", got.Epoch)
				}
				if entries, _ := os.ReadDir(parent); len(entries) != 1 {
					t.Errorf("parent holds %d entries, want 1", len(entries))
				}
			})
		}
	})
}

// SaveCheckpoint replaces only checkpoints and empty directories, never a
// file or a directory of other things.
func TestCheckpointRefusesToReplaceOtherData(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		cases := []struct {
			name    string
			prepare func(path string)
			ok      bool
		}{
			{"a file", func(p string) { os.WriteFile(p, []byte("precious"), 0o644) }, false},
			{"a directory of other files", func(p string) {
				os.Mkdir(p, 0o755)
				os.WriteFile(filepath.Join(p, "notes.txt"), []byte("precious"), 0o644)
			}, false},
			{"an empty directory", func(p string) { os.Mkdir(p, 0o755) }, true},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				parent := t.TempDir()
				p := filepath.Join(parent, "target")
				tc.prepare(p)
				err := store.SaveCheckpoint(p, store.Checkpoint{Epoch: 1})
				if tc.ok {
					if err != nil {
						t.Fatal(err)
					}
					got, err := store.LoadCheckpoint(p, dev)
					if err != nil {
						t.Fatal(err)
					}
					got.Release()
					return
				}
				if err == nil || !strings.Contains(err.Error(), "refusing") {
					t.Fatalf("err = %v, want a refusal", err)
				}
				if entries, _ := os.ReadDir(parent); len(entries) != 1 {
					t.Errorf("refused save left %d entries in the parent, want 1", len(entries))
				}
				if _, err := os.Stat(p); err != nil {
					t.Errorf("refused save removed the target: %v", err)
				}
			})
		}
	})
}

func ExampleSaveCheckpoint() {
	parent, err := os.MkdirTemp("", "kiln-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(parent)
	dir := filepath.Join(parent, "epoch-3")

	dev := tensor.CPU()
	tensor.Scope(func() {
		err := store.SaveCheckpoint(dir, store.Checkpoint{
			Model:         map[string]*tensor.Tensor{"l1.bias": tensor.FromFloat32s(dev, []float32{0.5, -0.5}, 2)},
			Optimizer:     map[string]*tensor.Tensor{"l1.bias.exp_avg": tensor.FromFloat32s(dev, []float32{0.01, 0.02}, 2)},
			OptimizerJSON: []byte(`{"kind":"AdamW","lr":0.001,"steps":{"l1.bias":300}}`),
			RNG:           store.RNGState{Seed: 1, Position: 4096},
			Epoch:         3,
			Step:          300,
			Metrics:       map[string]float64{"valid_loss": 0.125},
		})
		if err != nil {
			panic(err)
		}
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			fmt.Println(e.Name())
		}

		c, err := store.LoadCheckpoint(dir, dev)
		if err != nil {
			panic(err)
		}
		defer c.Release()
		fmt.Println(c.Epoch, c.Step, c.RNG.Position, c.Metrics["valid_loss"], c.Model["l1.bias"].Float32s())
	})
	// Output:
	// manifest.json
	// model.safetensors
	// optimizer.safetensors
	// state.json
	// 3 300 4096 0.125 [0.5 -0.5]
}
