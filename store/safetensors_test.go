package store_test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/kiln-ml/kiln/backends"
	"github.com/kiln-ml/kiln/internal/testutil"
	"github.com/kiln-ml/kiln/store"
	"github.com/kiln-ml/kiln/tensor"
)

// patterned returns a tensor of dtype and shape whose bytes follow a fixed
// pattern (0/1 for Bool, so every value is valid).
func patterned(dev tensor.Device, dtype tensor.DType, shape ...int) *tensor.Tensor {
	n := 1
	for _, s := range shape {
		n *= s
	}
	raw := make([]byte, n*dtype.Size())
	for i := range raw {
		if dtype == tensor.Bool {
			raw[i] = byte(i % 2)
		} else {
			raw[i] = byte(i*37 + 11)
		}
	}
	if len(shape) == 0 {
		flat := tensor.FromBytes(dev, dtype, raw, 1)
		defer flat.Release()
		return flat.Reshape()
	}
	return tensor.FromBytes(dev, dtype, raw, shape...)
}

func TestSafetensorsRoundTrip(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		tensors := map[string]*tensor.Tensor{}
		for _, dt := range backends.DTypes() {
			tensors[dt.String()+".matrix"] = patterned(dev, dt, 2, 3)
			tensors[dt.String()+".scalar"] = patterned(dev, dt)
			tensors[dt.String()+".empty"] = patterned(dev, dt, 0, 3)
			tensors[dt.String()+".transposed"] = patterned(dev, dt, 3, 4).Transpose(0, 1)
		}
		md := map[string]string{"format": "pt", "note": "ünïcode \"quoted\"", "empty": ""}
		path := filepath.Join(t.TempDir(), "model.safetensors")
		if err := store.WriteSafetensors(path, tensors, md); err != nil {
			t.Fatal(err)
		}
		got, gotMD, err := store.ReadSafetensors(path, dev)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(tensors) {
			t.Fatalf("read %d tensors, wrote %d", len(got), len(tensors))
		}
		for name, want := range tensors {
			g := got[name]
			if g == nil {
				t.Errorf("%s: missing after round trip", name)
				continue
			}
			if g.DType() != want.DType() || !slices.Equal(g.Shape(), want.Shape()) {
				t.Errorf("%s: read %s %v, wrote %s %v", name, g.DType(), g.Shape(), want.DType(), want.Shape())
				continue
			}
			if !bytes.Equal(g.Bytes(), want.Bytes()) {
				t.Errorf("%s: bytes differ after round trip", name)
			}
		}
		if len(gotMD) != len(md) {
			t.Errorf("metadata %v, wrote %v", gotMD, md)
		}
		for k, v := range md {
			if gotMD[k] != v {
				t.Errorf("metadata[%q] = %q, wrote %q", k, gotMD[k], v)
			}
		}
		if err := dev.Sync(); err != nil {
			t.Fatal(err)
		}
	})
}

// TestSafetensorsLayout checks the exact bytes Encode writes, as the
// reference writer lays them out: metadata first, tensors ordered by
// element size (largest first) then name, compact JSON padded with spaces
// to 8, so that every tensor starts aligned to its element size.
func TestSafetensorsLayout(t *testing.T) {
	dev := tensor.CPU()
	tensor.Scope(func() {
		a := tensor.FromBytes(dev, tensor.Uint8, []byte{1, 2, 3}, 3)
		b := tensor.FromFloat32s(dev, []float32{1, -2}, 2)
		c := tensor.FromInt64s(dev, []int64{7}, 1).Reshape()
		var buf bytes.Buffer
		if err := store.Encode(&buf, map[string]*tensor.Tensor{"a": a, "b": b, "c": c}, map[string]string{"k": "v"}); err != nil {
			t.Fatal(err)
		}
		header := `{"__metadata__":{"k":"v"},` +
			`"c":{"dtype":"I64","shape":[],"data_offsets":[0,8]},` +
			`"b":{"dtype":"F32","shape":[2],"data_offsets":[8,16]},` +
			`"a":{"dtype":"U8","shape":[3],"data_offsets":[16,19]}}`
		for len(header)%8 != 0 {
			header += " "
		}
		want := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
		want = append(want, header...)
		want = binary.LittleEndian.AppendUint64(want, 7)
		want = binary.LittleEndian.AppendUint32(want, math.Float32bits(1))
		want = binary.LittleEndian.AppendUint32(want, math.Float32bits(-2))
		want = append(want, 1, 2, 3)
		if !bytes.Equal(buf.Bytes(), want) {
			t.Errorf("encoded\n%q\nwant\n%q", buf.Bytes(), want)
		}
	})
}

func TestSafetensorsOpenLazy(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		w := patterned(dev, tensor.Float32, 4, 5)
		ids := patterned(dev, tensor.Int64, 3)
		path := filepath.Join(t.TempDir(), "m.safetensors")
		if err := store.WriteSafetensors(path, map[string]*tensor.Tensor{"w": w, "ids": ids}, nil); err != nil {
			t.Fatal(err)
		}
		f, err := store.OpenSafetensors(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if got := f.Names(); !slices.Equal(got, []string{"ids", "w"}) {
			t.Errorf("Names() = %v", got)
		}
		info, ok := f.Info("w")
		if !ok || info.DType != tensor.Float32 || info.FileDType != "F32" || !info.Supported || !slices.Equal(info.Shape, []int{4, 5}) || info.Size != 80 {
			t.Errorf("Info(w) = %+v, %v", info, ok)
		}
		if _, ok := f.Info("nope"); ok {
			t.Error("Info(nope) reported a tensor")
		}
		if md := f.Metadata(); len(md) != 0 {
			t.Errorf("Metadata() = %v, want empty", md)
		}
		g, err := f.Tensor("w", dev)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(g.Bytes(), w.Bytes()) {
			t.Error("Tensor(w) bytes differ")
		}
		if _, err := f.Tensor("nope", dev); !errors.Is(err, store.ErrNotFound) || !strings.Contains(err.Error(), `"nope"`) {
			t.Errorf("Tensor(nope) error = %v, want ErrNotFound naming it", err)
		}
	})
}

func TestSafetensorsFileShrinksAfterOpen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "shrink.safetensors")
	if err := os.WriteFile(path, validFile(t), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := store.OpenSafetensors(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	info, _ := f.Info("a") // the last tensor in the file: smallest elements
	st, _ := os.Stat(path)
	if err := os.Truncate(path, st.Size()-info.Size/2); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Tensor("a", tensor.CPU()); !errors.Is(err, store.ErrCorrupt) || !strings.Contains(err.Error(), `file ends before tensor "a"`) {
		t.Errorf("Tensor(a) on a shrunk file: %v, want ErrCorrupt saying the file ends early", err)
	}
}

func TestSafetensorsUnsupportedDType(t *testing.T) {
	data := rawFile(`{"small":{"dtype":"U16","shape":[3],"data_offsets":[0,6]},"x":{"dtype":"U8","shape":[1],"data_offsets":[6,7]}}`, 7)
	path := filepath.Join(t.TempDir(), "u16.safetensors")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := store.OpenSafetensors(path)
	if err != nil {
		t.Fatalf("a file with a U16 tensor should open: %v", err)
	}
	defer f.Close()
	if info, _ := f.Info("small"); info.Supported || info.FileDType != "U16" {
		t.Errorf("Info(small) = %+v", info)
	}
	if x, err := f.Tensor("x", tensor.CPU()); err != nil {
		t.Errorf("Tensor(x): %v", err)
	} else {
		x.Release()
	}
	if _, err := f.Tensor("small", tensor.CPU()); !errors.Is(err, store.ErrUnsupported) || !strings.Contains(err.Error(), "U16") {
		t.Errorf("Tensor(small) error = %v, want ErrUnsupported naming U16", err)
	}
	if m, _, err := store.ReadSafetensors(path, tensor.CPU()); !errors.Is(err, store.ErrUnsupported) || m != nil {
		t.Errorf("ReadSafetensors = %v, %v; want nil map and ErrUnsupported", m, err)
	}
}

// rawFile builds a safetensors file from a header and n data bytes.
func rawFile(header string, n int) []byte {
	out := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
	out = append(out, header...)
	return append(out, make([]byte, n)...)
}

func validFile(t *testing.T) []byte {
	t.Helper()
	var buf bytes.Buffer
	tensor.Scope(func() {
		dev := tensor.CPU()
		err := store.Encode(&buf, map[string]*tensor.Tensor{
			"a": patterned(dev, tensor.Float32, 2, 2),
			"b": patterned(dev, tensor.Int64, 3),
		}, map[string]string{"format": "pt"})
		if err != nil {
			t.Fatal(err)
		}
	})
	return buf.Bytes()
}

func TestSafetensorsCorrupt(t *testing.T) {
	valid := validFile(t)
	f32 := func(name string, shape string, b, e int) string {
		return `"` + name + `":{"dtype":"F32","shape":` + shape + `,"data_offsets":[` + strconv.Itoa(b) + `,` + strconv.Itoa(e) + `]}`
	}
	hugeLen := binary.LittleEndian.AppendUint64(nil, 200<<20)
	cases := []struct {
		name string
		data []byte
		want string
	}{
		{"empty file", nil, "shorter than the 8-byte header length"},
		{"short length", []byte{1, 0, 0}, "shorter than the 8-byte header length"},
		{"header length past EOF", append(binary.LittleEndian.AppendUint64(nil, 100), "{}"...), "header length 100 runs past the end of the file"},
		{"header too large", append(hugeLen, "{}"...), "exceeds the"},
		{"header not an object", rawFile(`[1,2,3] `, 0), "does not start with a JSON object"},
		{"bad JSON", rawFile(`{"a":{"dtype":`, 0), "bad JSON"},
		{"unknown dtype", rawFile(`{"a":{"dtype":"F7","shape":[1],"data_offsets":[0,4]}}`, 4), `tensor "a": unknown dtype "F7"`},
		{"missing field", rawFile(`{"a":{"dtype":"F32","shape":[1]}}`, 4), "needs dtype, shape and data_offsets"},
		{"shape/offset size mismatch", rawFile(`{`+f32("a", "[2,3]", 0, 20)+`}`, 20), "shape [2 3] needs 24 bytes but data_offsets [0, 20] hold 20"},
		{"negative dimension", rawFile(`{`+f32("a", "[-1]", 0, 4)+`}`, 4), "negative dimension"},
		{"shape overflow", rawFile(`{`+f32("a", "[1099511627776,1099511627776]", 0, 4)+`}`, 4), "too large"},
		{"fractional offset", rawFile(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0.5,4]}}`, 4), `bad JSON entry for tensor "a"`},
		{"three offsets", rawFile(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4,8]}}`, 4), "must hold two numbers"},
		{"reversed offsets", rawFile(`{`+f32("a", "[0]", 8, 0)+`}`, 8), "not an ordered range"},
		{"overlapping tensors", rawFile(`{`+f32("a", "[2]", 0, 8)+`,`+f32("b", "[2]", 4, 12)+`}`, 12), `overlaps tensor "a"`},
		{"gap between tensors", rawFile(`{`+f32("a", "[1]", 0, 4)+`,`+f32("b", "[1]", 8, 12)+`}`, 12), "gap in the data section"},
		{"data past EOF", rawFile(`{`+f32("a", "[2]", 0, 8)+`}`, 4), "runs past the end of the file"},
		{"bytes after the last tensor", rawFile(`{`+f32("a", "[1]", 0, 4)+`}`, 8), "4 bytes after the last tensor"},
		{"duplicate names", rawFile(`{`+f32("a", "[1]", 0, 4)+`,`+f32("a", "[1]", 4, 8)+`}`, 8), `duplicate header entry "a"`},
		{"metadata not strings", rawFile(`{"__metadata__":{"epoch":3}}`, 0), "bad __metadata__"},
		{"data after the JSON object", rawFile(`{}  x`, 0), "unexpected data after the JSON header"},
		{"bool byte other than 0 or 1", append(rawFile(`{"m":{"dtype":"BOOL","shape":[2],"data_offsets":[0,2]}}`, 0), 1, 2), `BOOL tensor "m" holds byte 2 at element 1`},
		{"truncated file", valid[:len(valid)-3], "runs past the end of the file"},
		{"truncated header", valid[:20], "runs past the end of the file"},
	}
	dir := t.TempDir()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, md, err := store.Decode("bad.safetensors", c.data, tensor.CPU())
			if !errors.Is(err, store.ErrCorrupt) {
				t.Fatalf("Decode error = %v, want ErrCorrupt", err)
			}
			if m != nil || md != nil {
				t.Errorf("Decode returned %v, %v alongside an error", m, md)
			}
			if !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "bad.safetensors") {
				t.Errorf("Decode error %q does not name the file and %q", err, c.want)
			}
			path := filepath.Join(dir, strings.NewReplacer(" ", "_", "/", "_").Replace(c.name)+".safetensors")
			if err := os.WriteFile(path, c.data, 0o644); err != nil {
				t.Fatal(err)
			}
			m, _, err = store.ReadSafetensors(path, tensor.CPU())
			if !errors.Is(err, store.ErrCorrupt) || m != nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("ReadSafetensors = %v, %v; want nil and ErrCorrupt naming %s and %q", m, err, path, c.want)
			}
		})
	}
	// The valid file itself decodes, so each case fails for its own defect.
	m, _, err := store.Decode("good", valid, tensor.CPU())
	if err != nil {
		t.Fatalf("valid file: %v", err)
	}
	for _, x := range m {
		x.Release()
	}
}

func TestWriteSafetensorsErrors(t *testing.T) {
	dev := tensor.CPU()
	dir := t.TempDir()
	path := filepath.Join(dir, "keep.safetensors")
	tensor.Scope(func() {
		good := map[string]*tensor.Tensor{"w": patterned(dev, tensor.Float32, 2)}
		if err := store.WriteSafetensors(path, good, nil); err != nil {
			t.Fatal(err)
		}
		before, _ := os.ReadFile(path)
		released := patterned(dev, tensor.Float32, 2)
		released.Release()
		cases := []struct {
			name    string
			tensors map[string]*tensor.Tensor
			want    string
		}{
			{"nil tensor", map[string]*tensor.Tensor{"w": nil}, `"w" is nil`},
			{"released tensor", map[string]*tensor.Tensor{"w": released}, `"w" was released`},
			{"reserved name", map[string]*tensor.Tensor{"__metadata__": good["w"]}, "reserved"},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				err := store.WriteSafetensors(path, c.tensors, nil)
				if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), path) {
					t.Fatalf("error = %v, want one naming %s and %q", err, path, c.want)
				}
				after, _ := os.ReadFile(path)
				if !bytes.Equal(before, after) {
					t.Error("a failed write changed the existing file")
				}
				entries, _ := os.ReadDir(dir)
				if len(entries) != 1 {
					t.Errorf("directory holds %d entries after a failed write, want only the original file", len(entries))
				}
			})
		}
	})
	if err := store.WriteSafetensors(filepath.Join(dir, "no", "such", "dir.safetensors"), nil, nil); err == nil {
		t.Error("writing into a missing directory succeeded")
	}
}

// fixtureFile is fixture.json, written by testdata/gen_safetensors.py.
type fixtureFile struct {
	Metadata map[string]string `json:"metadata"`
	Tensors  map[string]struct {
		DType string         `json:"dtype"`
		Shape []int          `json:"shape"`
		Data  []fixtureValue `json:"data"`
	} `json:"tensors"`
}

// fixtureValue is one value another tool printed: a JSON number, or one
// of the strings "nan", "inf", "-inf".
type fixtureValue string

func (v *fixtureValue) UnmarshalJSON(b []byte) error {
	*v = fixtureValue(strings.Trim(string(b), `"`))
	return nil
}

// number decodes a fixture value.
func number(t *testing.T, n fixtureValue) float64 {
	t.Helper()
	switch n {
	case "nan":
		return math.NaN()
	case "inf":
		return math.Inf(1)
	case "-inf":
		return math.Inf(-1)
	}
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil {
		t.Fatalf("fixture value %q: %v", n, err)
	}
	return f
}

// checkValues compares got exactly against values another tool printed.
func checkValues(t *testing.T, name string, got *tensor.Tensor, fileDType string, shape []int, data []fixtureValue) {
	t.Helper()
	if !slices.Equal(got.Shape(), shape) {
		t.Errorf("%s: shape %v, want %v", name, got.Shape(), shape)
		return
	}
	if len(data) != got.NumElements() {
		t.Errorf("%s: %d values, want %d", name, got.NumElements(), len(data))
		return
	}
	if fileDType == "I64" {
		ints := got.Int64s()
		for i, n := range data {
			if w, err := strconv.ParseInt(string(n), 10, 64); err != nil || ints[i] != w {
				t.Errorf("%s[%d] = %d, want %s", name, i, ints[i], n)
			}
		}
		return
	}
	fs := got.Float64s()
	for i, n := range data {
		w := number(t, n)
		if fs[i] != w && !(math.IsNaN(w) && math.IsNaN(fs[i])) {
			t.Errorf("%s[%d] = %v, want %v", name, i, fs[i], w)
		}
	}
}

var fileDTypes = map[string]tensor.DType{
	"F32": tensor.Float32, "F64": tensor.Float64, "F16": tensor.Float16, "BF16": tensor.BFloat16,
	"I64": tensor.Int64, "I32": tensor.Int32, "I16": tensor.Int16, "I8": tensor.Int8, "U8": tensor.Uint8,
	"BOOL": tensor.Bool,
}

// TestSafetensorsReadsTorchFixture reads a file laid out as the reference
// writer does with torch's bytes (testdata/gen_safetensors.py) and checks
// every value exactly against what torch printed.
func TestSafetensorsReadsTorchFixture(t *testing.T) {
	raw, err := os.ReadFile("testdata/fixture.json")
	if err != nil {
		t.Fatal(err)
	}
	var fx fixtureFile
	if err := json.Unmarshal(raw, &fx); err != nil {
		t.Fatal(err)
	}
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		got, md, err := store.ReadSafetensors("testdata/fixture.safetensors", dev)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(fx.Tensors) {
			t.Errorf("read %d tensors, fixture has %d", len(got), len(fx.Tensors))
		}
		for name, want := range fx.Tensors {
			g := got[name]
			if g == nil {
				t.Errorf("%s: missing", name)
				continue
			}
			if g.DType() != fileDTypes[want.DType] {
				t.Errorf("%s: dtype %s, want %s", name, g.DType(), want.DType)
				continue
			}
			checkValues(t, name, g, want.DType, want.Shape, want.Data)
		}
		for k, v := range fx.Metadata {
			if md[k] != v {
				t.Errorf("metadata[%q] = %q, want %q", k, md[k], v)
			}
		}
	})
}

// TestSafetensorsReadByTorch writes a file with Kiln and has PyTorch parse
// it independently (testdata/read_with_torch.py). It runs only where
// Debian's /usr/bin/python3 has torch.
func TestSafetensorsReadByTorch(t *testing.T) {
	const python = "/usr/bin/python3"
	if err := exec.Command(python, "-c", "import torch").Run(); err != nil {
		t.Skipf("skipping: %s cannot import torch (%v)", python, err)
	}
	dev := tensor.CPU()
	tensor.Scope(func() {
		tensors := map[string]*tensor.Tensor{}
		for _, dt := range backends.DTypes() {
			tensors[dt.String()+".matrix"] = patterned(dev, dt, 2, 3)
			tensors[dt.String()+".scalar"] = patterned(dev, dt)
			tensors[dt.String()+".empty"] = patterned(dev, dt, 0, 3)
			tensors[dt.String()+".transposed"] = patterned(dev, dt, 3, 4).Transpose(0, 1)
		}
		md := map[string]string{"format": "pt", "epoch": "3"}
		path := filepath.Join(t.TempDir(), "kiln.safetensors")
		if err := store.WriteSafetensors(path, tensors, md); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(python, "testdata/read_with_torch.py", path).Output()
		if err != nil {
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				t.Fatalf("torch could not read Kiln's file: %v\n%s", err, ee.Stderr)
			}
			t.Fatal(err)
		}
		var parsed struct {
			Metadata   map[string]string `json:"metadata"`
			HeaderLen  int               `json:"header_len"`
			Misaligned []string          `json:"misaligned"`
			Tensors    map[string]struct {
				DType string         `json:"dtype"`
				Shape []int          `json:"shape"`
				Data  []fixtureValue `json:"data"`
			} `json:"tensors"`
		}
		dec := json.NewDecoder(bytes.NewReader(out))
		dec.UseNumber()
		if err := dec.Decode(&parsed); err != nil {
			t.Fatalf("parsing torch's output: %v\n%s", err, out)
		}
		if parsed.HeaderLen%8 != 0 {
			t.Errorf("header length %d is not a multiple of 8", parsed.HeaderLen)
		}
		if len(parsed.Misaligned) != 0 {
			t.Errorf("tensors not aligned to their element size in the file: %v", parsed.Misaligned)
		}
		if len(parsed.Metadata) != len(md) || parsed.Metadata["epoch"] != "3" || parsed.Metadata["format"] != "pt" {
			t.Errorf("torch read metadata %v, wrote %v", parsed.Metadata, md)
		}
		if len(parsed.Tensors) != len(tensors) {
			t.Errorf("torch read %d tensors, wrote %d", len(parsed.Tensors), len(tensors))
		}
		for name, want := range tensors {
			p, ok := parsed.Tensors[name]
			if !ok {
				t.Errorf("%s: torch did not find it", name)
				continue
			}
			if fileDTypes[p.DType] != want.DType() {
				t.Errorf("%s: torch read dtype %s, wrote %s", name, p.DType, want.DType())
				continue
			}
			checkValues(t, name, want, p.DType, p.Shape, p.Data)
		}
	})
}

func FuzzReadSafetensors(f *testing.F) {
	var buf bytes.Buffer
	tensor.Scope(func() {
		dev := tensor.CPU()
		ts := map[string]*tensor.Tensor{}
		for _, dt := range backends.DTypes() {
			ts[dt.String()] = patterned(dev, dt, 2)
		}
		ts["scalar"] = patterned(dev, tensor.Float32)
		ts["empty"] = patterned(dev, tensor.Int32, 0)
		if err := store.Encode(&buf, ts, map[string]string{"k": "v"}); err != nil {
			f.Fatal(err)
		}
	})
	f.Add(buf.Bytes())
	if fx, err := os.ReadFile("testdata/fixture.safetensors"); err == nil {
		f.Add(fx)
	}
	f.Add([]byte{})
	f.Add(rawFile(`{}`, 0))
	f.Add(rawFile(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`, 8))
	f.Add(rawFile(`{"a":{"dtype":"I8","shape":[2],"data_offsets":[0,2]},"__metadata__":{"x":"y"}}`, 2))
	f.Fuzz(func(t *testing.T, data []byte) {
		dev := tensor.CPU()
		m, md, err := store.Decode("fuzz", data, dev)
		if err != nil {
			if !errors.Is(err, store.ErrCorrupt) && !errors.Is(err, store.ErrUnsupported) {
				t.Fatalf("error wraps neither ErrCorrupt nor ErrUnsupported: %v", err)
			}
			if m != nil || md != nil {
				t.Fatal("tensors returned alongside an error")
			}
			return
		}
		defer func() {
			for _, x := range m {
				x.Release()
			}
		}()
		// What decodes re-encodes, and decodes to the same tensors.
		var again bytes.Buffer
		if err := store.Encode(&again, m, md); err != nil {
			t.Fatalf("re-encoding a decoded file: %v", err)
		}
		m2, _, err := store.Decode("again", again.Bytes(), dev)
		if err != nil {
			t.Fatalf("decoding Kiln's re-encoding: %v", err)
		}
		for name, x := range m2 {
			if y := m[name]; y == nil || y.DType() != x.DType() || !slices.Equal(y.Shape(), x.Shape()) || !bytes.Equal(y.Bytes(), x.Bytes()) {
				t.Errorf("%s changed through a re-encoding", name)
			}
			x.Release()
		}
	})
}

// TestSafetensorsLazyLargeFile opens a file declaring a 4 GiB tensor (a
// sparse file, so the test writes only the header and a few bytes) and
// reads the small tensor after it, from several goroutines at once:
// OpenSafetensors and Tensor must not touch the big tensor's bytes.
func TestSafetensorsLazyLargeFile(t *testing.T) {
	const big = 4 << 30
	header := `{"big":{"dtype":"U8","shape":[` + strconv.Itoa(big) + `],"data_offsets":[0,` + strconv.Itoa(big) + `]},` +
		`"small":{"dtype":"I32","shape":[2],"data_offsets":[` + strconv.Itoa(big) + `,` + strconv.Itoa(big+8) + `]}}`
	path := filepath.Join(t.TempDir(), "big.safetensors")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	head := rawFile(header, 0)
	small := binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32(nil, 42), 0xfffffff9) // 42, -7
	if _, err := f.Write(head); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(small, int64(len(head))+big); err != nil {
		t.Skipf("cannot write a sparse 4 GiB file here: %v", err)
	}
	f.Close()

	sf, err := store.OpenSafetensors(path)
	if err != nil {
		t.Fatal(err)
	}
	defer sf.Close()
	if info, _ := sf.Info("big"); info.Size != big {
		t.Fatalf("Info(big).Size = %d", info.Size)
	}
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		errs := make(chan error, 4)
		for range 4 {
			go func() {
				var got []int64
				var err error
				tensor.Scope(func() {
					var x *tensor.Tensor
					if x, err = sf.Tensor("small", dev); err == nil {
						got = x.Int64s()
					}
				})
				if err == nil && !slices.Equal(got, []int64{42, -7}) {
					err = errors.New("Tensor(small) = " + fmtInts(got) + ", want [42 -7]")
				}
				errs <- err
			}()
		}
		for range 4 {
			if err := <-errs; err != nil {
				t.Error(err)
			}
		}
	})
}

func fmtInts(v []int64) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.FormatInt(x, 10)
	}
	return "[" + strings.Join(s, " ") + "]"
}

// TestSafetensorsInt8Int16 saves I8 and I16 tensors holding both extremes
// and negative values, and checks the dtype names in the header and the
// values read back.
func TestSafetensorsInt8Int16(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		i8 := []int8{-128, -1, 0, 1, 127, -77}
		i16 := []int16{-32768, -300, -1, 0, 255, 32767}
		tensors := map[string]*tensor.Tensor{
			"a": tensor.FromInt8s(dev, i8, 2, 3),
			"b": tensor.FromInt16s(dev, i16, 3, 2),
		}
		path := filepath.Join(t.TempDir(), "ints.safetensors")
		if err := store.WriteSafetensors(path, tensors, nil); err != nil {
			t.Fatal(err)
		}
		f, err := store.OpenSafetensors(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		for name, want := range map[string]string{"a": "I8", "b": "I16"} {
			if info, _ := f.Info(name); !info.Supported || info.FileDType != want {
				t.Errorf("Info(%s) = %+v, want a supported %s", name, info, want)
			}
		}
		got, _, err := store.ReadSafetensors(path, dev)
		if err != nil {
			t.Fatal(err)
		}
		wants := map[string][]int64{"a": {-128, -1, 0, 1, 127, -77}, "b": {-32768, -300, -1, 0, 255, 32767}}
		dts := map[string]tensor.DType{"a": tensor.Int8, "b": tensor.Int16}
		for name, want := range wants {
			g := got[name]
			if g == nil || g.DType() != dts[name] {
				t.Errorf("%s: read %v, want %s", name, g, dts[name])
				continue
			}
			if vals := g.Int64s(); !slices.Equal(vals, want) {
				t.Errorf("%s = %v, want %v", name, vals, want)
			}
		}
	})
}
