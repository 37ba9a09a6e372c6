package store_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/kiln-ml/kiln/backends"
	"github.com/kiln-ml/kiln/internal/testutil"
	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/store"
	"github.com/kiln-ml/kiln/tensor"
)

// The tests build GGUF files byte by byte from the format's definition
// (llama.cpp's gguf.md and ggml's block layouts), independently of the
// writer, and check the reader's values against numbers computed from the
// quants and scales they packed.

var le = binary.LittleEndian

// ggufFile assembles a version 3 file with one tensor of raw data.
func ggufFile(name string, ne []uint64, typ uint32, data []byte, kv func([]byte) ([]byte, int)) []byte {
	str := func(b []byte, s string) []byte { return append(le.AppendUint64(b, uint64(len(s))), s...) }
	b := append([]byte("GGUF"), 0, 0, 0, 0)
	le.PutUint32(b[4:], 3)
	b = le.AppendUint64(b, 1)
	var meta []byte
	nkv := 0
	if kv != nil {
		meta, nkv = kv(nil)
	}
	b = le.AppendUint64(b, uint64(nkv))
	b = append(b, meta...)
	b = str(b, name)
	b = le.AppendUint32(b, uint32(len(ne)))
	for _, n := range ne {
		b = le.AppendUint64(b, n)
	}
	b = le.AppendUint32(b, typ)
	b = le.AppendUint64(b, 0)
	for len(b)%32 != 0 {
		b = append(b, 0)
	}
	return append(b, data...)
}

// dequant decodes the single tensor of a file built by ggufFile.
func dequant(t *testing.T, file []byte) ([]float32, []int) {
	t.Helper()
	f, err := store.DecodeGGUF(file)
	if err != nil {
		t.Fatal(err)
	}
	q, err := f.Raw(f.Tensors[0].Name)
	if err != nil {
		t.Fatal(err)
	}
	v, err := q.Dequantize()
	if err != nil {
		t.Fatal(err)
	}
	return v, q.Shape
}

func h(f float32) []byte { return le.AppendUint16(nil, backends.Float32ToFloat16(f)) }

// hq is f as float16 and back: the scale the decoder sees.
func hq(f float32) float32 { return backends.Float16ToFloat32(backends.Float32ToFloat16(f)) }

func expectEqual(t *testing.T, what string, got, want []float32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range got {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("%s: value %d = %v, want %v", what, i, got[i], want[i])
		}
	}
}

func TestGGUFDequantizePlainTypes(t *testing.T) {
	vals := []float32{1.5, -2.25, 0, 65504, -0.000061035156, 3.140625}
	var f32, f16, bf16 []byte
	for _, v := range vals {
		f32 = le.AppendUint32(f32, math.Float32bits(v))
		f16 = append(f16, h(v)...)
		bf16 = le.AppendUint16(bf16, uint16(math.Float32bits(v)>>16))
	}
	got, shape := dequant(t, ggufFile("w", []uint64{3, 2}, 0, f32, nil))
	expectEqual(t, "F32", got, vals)
	if !reflect.DeepEqual(shape, []int{2, 3}) {
		t.Errorf("shape %v: ne [3 2] is Kiln's [2 3]", shape)
	}
	got, _ = dequant(t, ggufFile("w", []uint64{6}, 1, f16, nil))
	expectEqual(t, "F16", got, vals) // every value is exact in float16
	got, _ = dequant(t, ggufFile("w", []uint64{6}, 30, bf16, nil))
	want := make([]float32, len(vals))
	for i, v := range vals {
		want[i] = math.Float32frombits(math.Float32bits(v) &^ 0xffff)
	}
	expectEqual(t, "BF16", got, want)
}

func TestGGUFDequantize32Blocks(t *testing.T) {
	// quants 0..31 shuffled, so every position and nibble half is checked
	q := make([]int, 32)
	for i := range q {
		q[i] = (i*7 + 3) % 32
	}
	d, m := float32(0.375), float32(-1.5)
	t.Run("Q8_0", func(t *testing.T) {
		blk := h(d)
		want := make([]float32, 32)
		for i := range 32 {
			v := int8(q[i]*8 - 128)
			blk = append(blk, byte(v))
			want[i] = float32(v) * hq(d)
		}
		got, _ := dequant(t, ggufFile("w", []uint64{32}, 8, blk, nil))
		expectEqual(t, "Q8_0", got, want)
	})
	nibbles := func(q []int) []byte { // value j in the low nibble of byte j, value j+16 in its high nibble
		qs := make([]byte, 16)
		for j := range 16 {
			qs[j] = byte(q[j]&15) | byte(q[j+16]&15)<<4
		}
		return qs
	}
	highBits := func(q []int) []byte { // the fifth bit of value j is bit j of a little-endian uint32
		var qh uint32
		for j := range 32 {
			qh |= uint32(q[j]>>4&1) << j
		}
		return le.AppendUint32(nil, qh)
	}
	for _, c := range []struct {
		name  string
		typ   uint32
		block func() []byte
		value func(q int) float32
	}{
		{"Q4_0", 2, func() []byte { return append(h(d), nibbles(q)...) }, func(q int) float32 { return float32(q%16-8) * hq(d) }},
		{"Q4_1", 3, func() []byte { return append(append(h(d), h(m)...), nibbles(q)...) },
			func(q int) float32 { return float32(q%16)*hq(d) + hq(m) }},
		{"Q5_0", 6, func() []byte { return append(append(h(d), highBits(q)...), nibbles(q)...) },
			func(q int) float32 { return float32(q-16) * hq(d) }},
		{"Q5_1", 7, func() []byte { return append(append(append(h(d), h(m)...), highBits(q)...), nibbles(q)...) },
			func(q int) float32 { return float32(q)*hq(d) + hq(m) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			want := make([]float32, 32)
			for i := range 32 {
				want[i] = c.value(q[i])
			}
			got, _ := dequant(t, ggufFile("w", []uint64{32}, c.typ, c.block(), nil))
			expectEqual(t, c.name, got, want)
		})
	}
}

func TestGGUFDequantizeQ4K(t *testing.T) {
	d, dmin := float32(0.0625), float32(0.03125)
	var sc, mn [8]int
	for i := range 8 {
		sc[i], mn[i] = (i*13+5)%64, (i*29+11)%64 // every 6-bit position used
	}
	// 12 bytes: scales and mins 0-3 in the low 6 bits of bytes 0-3 and
	// 4-7; 4-7 split: low nibbles in bytes 8-11, high 2 bits in the top
	// bits of bytes 0-3 (scales) and 4-7 (mins).
	packed := make([]byte, 12)
	for j := range 4 {
		packed[j] = byte(sc[j]) | byte(sc[j+4]>>4)<<6
		packed[j+4] = byte(mn[j]) | byte(mn[j+4]>>4)<<6
		packed[j+8] = byte(sc[j+4]&15) | byte(mn[j+4]&15)<<4
	}
	quant := func(e int) int { return (e*5 + e/7) % 16 }
	qs := make([]byte, 128)
	want := make([]float32, 256)
	for e := range 256 {
		g, sub, l := e/64, e%64/32, e%32
		if sub == 0 {
			qs[32*g+l] |= byte(quant(e))
		} else {
			qs[32*g+l] |= byte(quant(e)) << 4
		}
		i := 2*g + sub
		want[e] = hq(d)*float32(sc[i])*float32(quant(e)) - hq(dmin)*float32(mn[i])
	}
	blk := append(append(append(h(d), h(dmin)...), packed...), qs...)
	got, _ := dequant(t, ggufFile("w", []uint64{256}, 12, blk, nil))
	expectEqual(t, "Q4_K", got, want)
}

func TestGGUFDequantizeQ6K(t *testing.T) {
	d := float32(0.01171875)
	var sc [16]int8
	for i := range sc {
		sc[i] = int8(i*17 - 120)
	}
	quant := func(e int) int { return (e*37 + 11) % 64 }
	ql, qh := make([]byte, 128), make([]byte, 64)
	want := make([]float32, 256)
	for e := range 256 {
		half, r := e/128, e%128
		k, l := r/32, r%32 // quarter k of the half, position l
		q := quant(e)
		lo := 64*half + l + 32*(k&1)
		if k < 2 {
			ql[lo] |= byte(q & 15)
		} else {
			ql[lo] |= byte(q&15) << 4
		}
		qh[32*half+l] |= byte(q>>4) << (2 * k)
		s := sc[8*half+l/16+2*k]
		want[e] = hq(d) * float32(s) * float32(q-32)
	}
	scb := make([]byte, 16)
	for i, s := range sc {
		scb[i] = byte(s)
	}
	blk := append(append(append(ql, qh...), scb...), h(d)...)
	got, _ := dequant(t, ggufFile("w", []uint64{256}, 14, blk, nil))
	expectEqual(t, "Q6_K", got, want)
}

func TestGGUFMetadataAndLayout(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.gguf")
	meta := map[string]any{
		"general.architecture": "llama", "general.name": "tiny", "llama.context_length": uint32(2048),
		"general.file_type": int32(7), "x.i64": int64(-5), "x.u64": uint64(1 << 40), "x.f32": float32(0.5),
		"x.f64": 0.25, "x.bool": true, "tokenizer.ggml.tokens": []string{"<s>", "</s>", "hi"},
		"x.nested": []any{[]any{int32(1), int32(2)}, []any{int32(3)}},
	}
	vals := make([]float32, 64)
	for i := range vals {
		vals[i] = float32(i) / 8
	}
	if err := store.WriteGGUF(path, meta, []store.GGUFTensor{
		{Name: "a", Shape: []int{2, 32}, Type: store.GGMLF32, Values: vals},
		{Name: "b", Shape: []int{64}, Type: store.GGMLF16, Values: vals},
	}); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(path)
	if string(raw[:4]) != "GGUF" || le.Uint32(raw[4:]) != 3 || le.Uint64(raw[8:]) != 2 || le.Uint64(raw[16:]) != uint64(len(meta)+1) {
		t.Fatalf("header %x", raw[:24])
	}
	f, err := store.OpenGGUF(path)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"general.architecture": "llama", "general.name": "tiny", "llama.context_length": int64(2048),
		"general.file_type": int64(7), "x.i64": int64(-5), "x.u64": uint64(1 << 40), "x.f32": 0.5, "x.f64": 0.25,
		"x.bool": true, "tokenizer.ggml.tokens": []any{"<s>", "</s>", "hi"},
		"x.nested": []any{[]any{int64(1), int64(2)}, []any{int64(3)}}, "general.alignment": int64(32),
	}
	if !reflect.DeepEqual(f.Metadata, want) {
		t.Errorf("metadata %v\nwant %v", f.Metadata, want)
	}
	for _, ti := range f.Tensors {
		if (ti.Offset)%32 != 0 {
			t.Errorf("tensor %s at unaligned offset %d", ti.Name, ti.Offset)
		}
	}
	a, _ := f.Info("a")
	if !reflect.DeepEqual(a.Shape, []int{2, 32}) || a.Type != store.GGMLF32 || a.Size != 256 {
		t.Errorf("tensor a: %+v", a)
	}
}

func TestGGUFRoundTrip(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		vals := make([]float32, 4*64)
		for i := range vals {
			vals[i] = float32(math.Sin(float64(i)*0.37)) * float32(1+i%5)
		}
		for _, typ := range []store.GGMLType{store.GGMLF32, store.GGMLF16, store.GGMLBF16, store.GGMLQ8_0} {
			t.Run(typ.String(), func(t *testing.T) {
				path := filepath.Join(t.TempDir(), "t.gguf")
				if err := store.WriteGGUF(path, nil, []store.GGUFTensor{{Name: "w", Shape: []int{4, 64}, Type: typ, Values: vals}}); err != nil {
					t.Fatal(err)
				}
				f, err := store.OpenGGUF(path)
				if err != nil {
					t.Fatal(err)
				}
				var got []float32
				tensor.Scope(func() {
					x, err := f.Tensor("w", dev)
					if err != nil {
						t.Fatal(err)
					}
					got = x.Float32s()
				})
				for i, v := range vals {
					var want float32
					tol := float32(0)
					switch typ {
					case store.GGMLF32:
						want = v
					case store.GGMLF16:
						want = hq(v)
					case store.GGMLBF16:
						want = backends.BFloat16ToFloat32(backends.Float32ToBFloat16(v))
					case store.GGMLQ8_0:
						// |x − q·d| ≤ d/2 from rounding, plus 127·|d − f16(d)| ≤ 127·d·2⁻¹¹
						var amax float32
						for _, u := range vals[i/32*32 : i/32*32+32] {
							amax = max(amax, float32(math.Abs(float64(u))))
						}
						d := amax / 127
						want, tol = v, d/2+127*d/2048+1e-7
					}
					if diff := float32(math.Abs(float64(got[i] - want))); diff > tol {
						t.Fatalf("value %d: %v, want %v (±%v)", i, got[i], want, tol)
					}
				}
			})
		}
	})
}

func TestSaveLoadModelGGUF(t *testing.T) {
	testutil.ForEachDevice(t, func(t *testing.T, dev tensor.Device) {
		path := filepath.Join(t.TempDir(), "model.gguf")
		dev.Seed(3)
		var src, dst *nn.Linear
		tensor.NoScope(func() { src, dst = nn.NewLinear(dev, 64, 3), nn.NewLinear(dev, 64, 3) })
		defer nn.Release(src)
		defer nn.Release(dst)
		// llama.cpp-style names: "Weight" → "blk.0.ffn.weight"
		m := store.NameMap{Rules: []store.NameRule{{From: "blk.0.ffn.", To: ""}}}
		if err := m.SaveGGUF(src, path, store.GGMLF32, map[string]any{"general.architecture": "kiln-test"}); err != nil {
			t.Fatal(err)
		}
		f, err := store.OpenGGUF(path)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Join(f.Names(), ",") != "blk.0.ffn.bias,blk.0.ffn.weight" {
			t.Fatalf("names %v", f.Names())
		}
		if err := m.Load(dst, path); err != nil {
			t.Fatal(err)
		}
		if !dst.Weight.AllClose(src.Weight.Tensor, 0, 0) || !dst.Bias.AllClose(src.Bias.Tensor, 0, 0) {
			t.Error("weights differ after the F32 round trip")
		}
		// Q8_0 keeps the bias (3 values, not a 32-block row) as F32.
		if err := store.SaveModelGGUF(src, path, store.GGMLQ8_0, nil); err != nil {
			t.Fatal(err)
		}
		f, _ = store.OpenGGUF(path)
		if w, _ := f.Info("weight"); w.Type != store.GGMLQ8_0 {
			t.Errorf("weight stored as %v", w.Type)
		}
		if b, _ := f.Info("bias"); b.Type != store.GGMLF32 {
			t.Errorf("bias stored as %v", b.Type)
		}
		if err := store.LoadModel(dst, path); err != nil {
			t.Fatal(err)
		}
		if !dst.Weight.AllClose(src.Weight.Tensor, 0, 0.02) {
			t.Error("Q8_0 weights too far from the originals")
		}
		// A model of another shape is refused by name, nothing loaded.
		var other *nn.Linear
		tensor.NoScope(func() { other = nn.NewLinear(dev, 32, 3) })
		defer nn.Release(other)
		if err := store.LoadModel(other, path); !errors.Is(err, nn.ErrStateDict) || !strings.Contains(err.Error(), "weight") {
			t.Errorf("loading into a mismatched model: %v", err)
		}
	})
}

func TestGGUFCorrupt(t *testing.T) {
	good := ggufFile("w", []uint64{32}, 8, append(h(1), make([]byte, 32)...), func(b []byte) ([]byte, int) {
		b = append(le.AppendUint64(b, 4), "name"...)
		b = le.AppendUint32(b, 8)
		b = append(le.AppendUint64(b, 2), "hi"...)
		return b, 1
	})
	if _, err := store.DecodeGGUF(good); err != nil {
		t.Fatalf("the base file: %v", err)
	}
	// Every truncation is an error, never a panic.
	for n := range len(good) - 1 {
		if _, err := store.DecodeGGUF(good[:n]); err == nil {
			t.Fatalf("truncated to %d bytes: accepted", n)
		}
	}
	edit := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), good...)) }
	headerEnd := 24 // after magic, version, counts
	for _, c := range []struct {
		name string
		file []byte
		want error
		msg  string
	}{
		{"bad magic", edit(func(b []byte) []byte { b[0] = 'X'; return b }), store.ErrCorrupt, "magic"},
		{"version 1", edit(func(b []byte) []byte { le.PutUint32(b[4:], 1); return b }), store.ErrUnsupported, "version 1"},
		{"big-endian", edit(func(b []byte) []byte { binary.BigEndian.PutUint32(b[4:], 3); return b }), store.ErrUnsupported, "big-endian"},
		{"version 9", edit(func(b []byte) []byte { le.PutUint32(b[4:], 9); return b }), store.ErrUnsupported, "version 9"},
		{"huge tensor count", edit(func(b []byte) []byte { le.PutUint64(b[8:], 1<<60); return b }), store.ErrCorrupt, "tensor count"},
		{"huge metadata count", edit(func(b []byte) []byte { le.PutUint64(b[16:], 1<<60); return b }), store.ErrCorrupt, "metadata count"},
		{"huge key length", edit(func(b []byte) []byte { le.PutUint64(b[headerEnd:], 1<<62); return b }), store.ErrCorrupt, "string length"},
		{"unknown value type", edit(func(b []byte) []byte { le.PutUint32(b[headerEnd+12:], 99); return b }), store.ErrCorrupt, "value type 99"},
		{"unknown ggml type", edit(func(b []byte) []byte {
			i := strings.Index(string(b), "\x01\x00\x00\x00\x00\x00\x00\x00w") + 9 + 4 + 8
			le.PutUint32(b[i:], 77)
			return b
		}), store.ErrUnsupported, "ggml type 77"},
		{"misaligned offset", edit(func(b []byte) []byte {
			i := strings.Index(string(b), "\x01\x00\x00\x00\x00\x00\x00\x00w") + 9 + 4 + 8 + 4
			le.PutUint64(b[i:], 3)
			return b
		}), store.ErrCorrupt, "not aligned"},
		{"data past the end", good[:len(good)-1], store.ErrCorrupt, "truncated"},
		{"not whole blocks", edit(func(b []byte) []byte {
			i := strings.Index(string(b), "\x01\x00\x00\x00\x00\x00\x00\x00w") + 9 + 4
			le.PutUint64(b[i:], 31)
			return b
		}), store.ErrCorrupt, "blocks"},
		{"bool out of range", func() []byte {
			return ggufFile("w", []uint64{1}, 0, make([]byte, 4), func(b []byte) ([]byte, int) {
				b = append(le.AppendUint64(b, 1), "b"...)
				return append(le.AppendUint32(b, 7), 2), 1
			})
		}(), store.ErrCorrupt, "bool"},
		{"arrays nested too deep", func() []byte {
			return ggufFile("w", []uint64{1}, 0, make([]byte, 4), func(b []byte) ([]byte, int) {
				b = append(le.AppendUint64(b, 1), "a"...)
				b = le.AppendUint32(b, 9)
				for range 10 {
					b = le.AppendUint32(b, 9)
					b = le.AppendUint64(b, 1)
				}
				return le.AppendUint32(b, 0), 1
			})
		}(), store.ErrCorrupt, "nested"},
	} {
		_, err := store.DecodeGGUF(c.file)
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: %v, want %v mentioning %q", c.name, err, c.want, c.msg)
		}
	}
	// A type Kiln lists but does not decode is readable raw, refused decoded.
	f, err := store.DecodeGGUF(ggufFile("w", []uint64{256}, 10, make([]byte, 84), nil))
	if err != nil {
		t.Fatal(err)
	}
	q, _ := f.Raw("w")
	if _, err := q.Dequantize(); !errors.Is(err, store.ErrUnsupported) || !strings.Contains(err.Error(), "Q2_K") {
		t.Errorf("Q2_K: %v", err)
	}
	if len(q.Data) != 84 {
		t.Errorf("raw Q2_K block: %d bytes", len(q.Data))
	}
}

// FuzzGGUF decodes arbitrary bytes: an error or a file, never a panic; every
// tensor of an accepted file dequantizes (or is refused) and re-encodes.
func FuzzGGUF(f *testing.F) {
	f.Add(ggufFile("w", []uint64{32}, 8, append(h(1), make([]byte, 32)...), nil))
	f.Add(ggufFile("w", []uint64{2, 2}, 0, make([]byte, 16), nil))
	f.Add(ggufFile("w", []uint64{256}, 12, make([]byte, 144), nil))
	f.Add(ggufFile("w", []uint64{256}, 14, make([]byte, 210), nil))
	f.Add([]byte("GGUF\x03\x00\x00\x00"))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte) {
		g, err := store.DecodeGGUF(b)
		if err != nil {
			return
		}
		var out []store.GGUFTensor
		for _, name := range g.Names() {
			q, err := g.Raw(name)
			if err != nil {
				t.Fatalf("listed tensor %q: %v", name, err)
			}
			v, err := q.Dequantize()
			if err != nil || len(v) > 1<<16 {
				continue
			}
			out = append(out, store.GGUFTensor{Name: name, Shape: q.Shape, Type: store.GGMLF32, Values: v})
		}
		path := filepath.Join(dir, fmt.Sprintf("f%d.gguf", len(b)))
		if err := store.WriteGGUF(path, nil, out); err != nil {
			t.Fatalf("re-encoding: %v", err)
		}
		if _, err := store.OpenGGUF(path); err != nil {
			t.Fatalf("reading the re-encoded file: %v", err)
		}
	})
}
