package remote_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"testing"

	"github.com/kiln-ml/kiln/backends"
	"github.com/kiln-ml/kiln/backends/cpu"
)

// The conformance suite (the one backends/cuda runs on a GPU) runs every
// Backend primitive, over every dtype it applies to, on a remote device
// served over loopback and on a local CPU backend, and requires the bytes to
// be identical: the server runs the same CPU kernels.

// TestConformanceRemoteCPU runs the suite on remote://127.0.0.1:PORT/cpu:0.
func TestConformanceRemoteCPU(t *testing.T) {
	_, addr := startServer(t, nil)
	dev := dial(t, addr)
	ref := cpu.New(0)
	cases := conformanceCases()
	if len(cases) < 500 {
		t.Fatalf("only %d conformance cases", len(cases))
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := runCase(ref, dev, c); err != nil {
				t.Fatal(err)
			}
		})
	}
	if err := dev.Sync(); err != nil {
		t.Fatalf("device error after the suite: %v", err)
	}
}

// runCase runs c on the reference and the device and compares the bytes.
func runCase(ref, dev backends.Backend, c conformanceCase) error {
	rs, ds := &session{b: ref}, &session{b: dev}
	defer rs.free()
	defer ds.free()
	want := rs.raw(c.run(rs))
	got := ds.raw(c.run(ds))
	if rs.err != nil {
		return fmt.Errorf("cpu: %w", rs.err)
	}
	if ds.err != nil {
		return fmt.Errorf("remote: %w", ds.err)
	}
	if !bytes.Equal(want, got) {
		w, g := decode(c.dtype, want), decode(c.dtype, got)
		for i := range w {
			if math.Float64bits(w[i]) != math.Float64bits(g[i]) {
				return fmt.Errorf("element %d: remote %v, cpu %v", i, g[i], w[i])
			}
		}
		return fmt.Errorf("bytes differ")
	}
	return nil
}

func (s *session) raw(v backends.View) []byte {
	b := make([]byte, v.Buf.Bytes())
	if err := s.b.Read(v.Buf, 0, b); err != nil && s.err == nil {
		s.err = fmt.Errorf("read: %w", err)
	}
	return b
}

func encode(dt backends.DType, vals []float64) []byte {
	out := make([]byte, len(vals)*dt.Size())
	for i, v := range vals {
		p := out[i*dt.Size():]
		switch dt {
		case backends.Float32:
			binary.LittleEndian.PutUint32(p, math.Float32bits(float32(v)))
		case backends.Float64:
			binary.LittleEndian.PutUint64(p, math.Float64bits(v))
		case backends.Float16:
			binary.LittleEndian.PutUint16(p, backends.Float32ToFloat16(float32(v)))
		case backends.BFloat16:
			binary.LittleEndian.PutUint16(p, backends.Float32ToBFloat16(float32(v)))
		case backends.Int64:
			binary.LittleEndian.PutUint64(p, uint64(int64(v)))
		case backends.Int32:
			binary.LittleEndian.PutUint32(p, uint32(int32(v)))
		case backends.Int16:
			binary.LittleEndian.PutUint16(p, uint16(int16(v)))
		case backends.Int8:
			p[0] = uint8(int8(v))
		case backends.Uint8:
			p[0] = uint8(v)
		case backends.Bool:
			if v != 0 {
				p[0] = 1
			} else {
				p[0] = 0
			}
		}
	}
	return out
}

func decode(dt backends.DType, b []byte) []float64 {
	out := make([]float64, len(b)/dt.Size())
	for i := range out {
		p := b[i*dt.Size():]
		switch dt {
		case backends.Float32:
			out[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(p)))
		case backends.Float64:
			out[i] = math.Float64frombits(binary.LittleEndian.Uint64(p))
		case backends.Float16:
			out[i] = float64(backends.Float16ToFloat32(binary.LittleEndian.Uint16(p)))
		case backends.BFloat16:
			out[i] = float64(backends.BFloat16ToFloat32(binary.LittleEndian.Uint16(p)))
		case backends.Int64:
			out[i] = float64(int64(binary.LittleEndian.Uint64(p)))
		case backends.Int32:
			out[i] = float64(int32(binary.LittleEndian.Uint32(p)))
		case backends.Int16:
			out[i] = float64(int16(binary.LittleEndian.Uint16(p)))
		case backends.Int8:
			out[i] = float64(int8(p[0]))
		default:
			out[i] = float64(p[0])
		}
	}
	return out
}

// session holds the buffers of one case on one backend.
type session struct {
	b    backends.Backend
	bufs []backends.Buffer
	err  error // first failure
}

func (s *session) tensor(dt backends.DType, vals []float64, shape ...int) backends.View {
	buf, err := s.b.Alloc(dt, len(vals))
	if err != nil {
		panic(err) // the suite's inputs are tiny: a failure here is a broken device
	}
	s.bufs = append(s.bufs, buf)
	s.b.Write(buf, 0, encode(dt, vals))
	return backends.Contiguous(buf, dt, shape...)
}

func (s *session) empty(dt backends.DType, shape ...int) backends.View {
	v := s.tensor(dt, make([]float64, backends.NumElements(shape)), shape...)
	return v
}

func (s *session) free() {
	for _, b := range s.bufs {
		s.b.Free(b)
	}
}

// values returns n deterministic inputs: in [lo, hi), or small integers
// for integer dtypes.
func values(dt backends.DType, n int, lo, hi float64, salt int) []float64 {
	out := make([]float64, n)
	for i := range out {
		u := backends.RandomValue(backends.Uniform, uint64(salt)+99, uint64(i), 0, 1)
		switch {
		case dt == backends.Bool:
			out[i] = math.Floor(u * 2)
		case dt == backends.Uint8:
			out[i] = 1 + math.Floor(u*9)
		case dt.IsInt():
			out[i] = math.Floor(u*19) - 9
			if out[i] == 0 {
				out[i] = 3
			}
		default:
			out[i] = lo + (hi-lo)*u
		}
	}
	return out
}

// conformanceCase builds inputs on a session, runs one primitive and returns
// the view holding the result.
type conformanceCase struct {
	name  string
	dtype backends.DType // tolerance is by this dtype
	run   func(s *session) backends.View
}

var floats = []backends.DType{backends.Float32, backends.Float64, backends.Float16, backends.BFloat16}

// domain returns an input range where op is defined and well conditioned.
func domain(op backends.UnaryOp) (lo, hi float64) {
	switch op {
	case backends.Log, backends.Sqrt, backends.Rsqrt, backends.PowConst, backends.Recip, backends.Log1p:
		return 0.25, 2
	case backends.Tan:
		return -1, 1
	case backends.Asin, backends.Acos, backends.Atanh:
		return -0.9, 0.9
	case backends.Acosh:
		return 1.1, 3
	}
	return -3, 3
}

func conformanceCases() []conformanceCase {
	var cs []conformanceCase
	add := func(dt backends.DType, format string, args ...any) func(func(*session) backends.View) {
		return func(run func(*session) backends.View) {
			cs = append(cs, conformanceCase{name: fmt.Sprintf(format, args...), dtype: dt, run: run})
		}
	}
	all := backends.DTypes()
	for op := range backends.UnaryOps {
		u := backends.UnaryOp(op)
		def := backends.UnaryOps[u]
		p0, p1 := 0.5, 2.0
		switch u {
		case backends.Clamp:
			p0, p1 = -1, 1.5
		case backends.Softplus:
			p0, p1 = 1.5, 3
		case backends.PowConst:
			p0 = 1.5
		}
		lo, hi := domain(u)
		for _, dt := range all {
			if dt == backends.Bool || (!dt.IsFloat() && !def.IntSafe) || (dt == backends.Uint8 && u == backends.Neg) {
				continue
			}
			outT := dt
			if def.Predicate {
				outT = backends.Bool
			}
			add(dt, "unary/%s/%s", def.Name, dt)(func(s *session) backends.View {
				x := s.tensor(dt, values(dt, 24, lo, hi, op), 4, 6)
				out := s.empty(outT, 4, 6)
				s.b.Unary(u, out, x, p0, p1)
				return out
			})
			if dt.IsFloat() && !def.Predicate {
				add(dt, "unarygrad/%s/%s", def.Name, dt)(func(s *session) backends.View {
					x := s.tensor(dt, values(dt, 24, lo, hi, op), 4, 6)
					g := s.tensor(dt, values(dt, 24, -1, 1, 7), 4, 6)
					out := s.empty(dt, 4, 6)
					s.b.UnaryGrad(u, out, x, g, p0, p1)
					return out
				})
			}
		}
	}
	for op := range backends.BinaryOps {
		bop := backends.BinaryOp(op)
		def := backends.BinaryOps[bop]
		logical := bop == backends.And || bop == backends.Or || bop == backends.Xor
		for _, dt := range all {
			if dt == backends.Bool && !def.Predicate {
				continue
			}
			if !dt.IsFloat() && (bop == backends.Div || bop == backends.Pow || bop == backends.Atan2) {
				continue
			}
			if dt == backends.Uint8 && bop == backends.Sub {
				continue
			}
			if logical && dt != backends.Bool && !dt.IsFloat() {
				continue
			}
			outT := dt
			if def.Predicate {
				outT = backends.Bool
			}
			lo, hi := -3.0, 3.0
			if bop == backends.Pow {
				lo = 0.25
			}
			add(dt, "binary/%s/%s", def.Name, dt)(func(s *session) backends.View {
				a := s.tensor(dt, values(dt, 12, lo, hi, op), 3, 4)
				bv := s.tensor(dt, values(dt, 4, lo, hi, op+50), 1, 4)
				bv.Strides = []int{0, 1} // broadcast a row
				bv.Shape = []int{3, 4}
				out := s.empty(outT, 3, 4)
				s.b.Binary(bop, out, a, bv)
				return out
			})
			for _, rev := range []bool{false, true} {
				add(dt, "scalar/%s/%s/reverse=%v", def.Name, dt, rev)(func(s *session) backends.View {
					a := s.tensor(dt, values(dt, 12, lo, hi, op), 3, 4)
					out := s.empty(outT, 3, 4)
					s.b.BinaryScalar(bop, out, a, 2, rev)
					return out
				})
			}
		}
	}
	for _, dt := range all {
		add(dt, "fill/%s", dt)(func(s *session) backends.View {
			out := s.empty(dt, 5, 3)
			s.b.Fill(out, 1)
			return out
		})
		for _, from := range all {
			tol := dt
			if from == backends.BFloat16 || from == backends.Float16 {
				tol = from
			}
			add(tol, "copy/%s<-%s/transposed", dt, from)(func(s *session) backends.View {
				in := values(from, 12, -3, 3, 5)
				if !dt.IsFloat() {
					for i := range in { // float-to-integer casts of fractions are not compared
						in[i] = math.Abs(math.Round(in[i]))
					}
				}
				x := s.tensor(from, in, 3, 4)
				xt := backends.View{Buf: x.Buf, DType: from, Shape: []int{4, 3}, Strides: []int{1, 4}}
				out := s.empty(dt, 4, 3)
				s.b.Copy(out, xt)
				return out
			})
		}
		add(dt, "where/%s", dt)(func(s *session) backends.View {
			c := s.tensor(backends.Bool, values(backends.Bool, 12, 0, 1, 3), 3, 4)
			a := s.tensor(dt, values(dt, 12, -3, 3, 4), 3, 4)
			b := s.tensor(dt, values(dt, 12, -3, 3, 6), 3, 4)
			out := s.empty(dt, 3, 4)
			s.b.Where(out, c, a, b)
			return out
		})
		add(dt, "gather/%s", dt)(func(s *session) backends.View {
			x := s.tensor(dt, values(dt, 12, -3, 3, 8), 3, 4)
			idx := s.tensor(backends.Int64, []float64{3, 0, 1, 1, 2, 2, 0, 3, 3}, 3, 3)
			out := s.empty(dt, 3, 3)
			s.b.Gather(out, x, idx, 1)
			return out
		})
		for _, addMode := range []bool{false, true} {
			if addMode && dt == backends.Bool {
				continue
			}
			add(dt, "scatter/%s/add=%v", dt, addMode)(func(s *session) backends.View {
				out := s.tensor(dt, values(dt, 12, -3, 3, 9), 4, 3)
				idx := s.tensor(backends.Int64, []float64{0, 1, 2, 3, 0, 1}, 2, 3)
				if addMode {
					idx = s.tensor(backends.Int64, []float64{0, 1, 2, 0, 1, 2}, 2, 3) // duplicates accumulate
				}
				src := s.tensor(dt, values(dt, 6, -3, 3, 10), 2, 3)
				s.b.Scatter(out, idx, src, 0, addMode)
				return out
			})
		}
		if dt == backends.Bool {
			continue
		}
		for _, rop := range []backends.ReduceOp{backends.Sum, backends.Prod, backends.Max, backends.Min} {
			for _, axes := range [][]int{{0}, {2}, {0, 2}, {0, 1, 2}} {
				add(dt, "reduce/%s/%s/axes%v", rop, dt, axes)(func(s *session) backends.View {
					x := s.tensor(dt, values(dt, 24, 0.5, 1.5, 11), 2, 3, 4)
					shape := []int{2, 3, 4}
					for _, a := range axes {
						shape[a] = 1
					}
					out := s.empty(dt, shape...)
					s.b.Reduce(rop, out, x, axes)
					return out
				})
			}
		}
		for _, rop := range []backends.ReduceOp{backends.ArgMax, backends.ArgMin} {
			add(backends.Int64, "argreduce/%s/%s", rop, dt)(func(s *session) backends.View {
				x := s.tensor(dt, values(dt, 24, -3, 3, 12), 4, 6)
				out := s.empty(backends.Int64, 4, 1)
				s.b.ArgReduce(rop, out, x, 1)
				return out
			})
		}
		for _, rop := range []backends.ReduceOp{backends.Sum, backends.Prod} {
			add(dt, "scan/%s/%s", rop, dt)(func(s *session) backends.View {
				x := s.tensor(dt, values(dt, 24, 0.5, 1.5, 13), 4, 6)
				out := s.empty(dt, 4, 6)
				s.b.Scan(rop, out, x, 0)
				return out
			})
		}
		for _, desc := range []bool{false, true} {
			for _, part := range []string{"values", "indices"} {
				add(dt, "sort/%s/descending=%v/%s", dt, desc, part)(func(s *session) backends.View {
					x := s.tensor(dt, values(dt, 24, -3, 3, 14), 4, 6)
					vals := s.empty(dt, 4, 6)
					idx := s.empty(backends.Int64, 4, 6)
					s.b.Sort(vals, idx, x, 1, desc)
					if part == "values" {
						return vals
					}
					return idx
				})
			}
		}
	}
	for _, dt := range floats {
		add(dt, "matmul/%s/batched-transposed", dt)(func(s *session) backends.View {
			a := s.tensor(dt, values(dt, 2*5*7, -1, 1, 15), 2, 5, 7)
			b := s.tensor(dt, values(dt, 7*19, -1, 1, 16), 19, 7) // used transposed and broadcast
			bt := backends.View{Buf: b.Buf, DType: dt, Shape: []int{2, 7, 19}, Strides: []int{0, 1, 7}}
			out := s.empty(dt, 2, 5, 19)
			s.b.Matmul(out, a, bt)
			return out
		})
		add(dt, "matmul/%s/square", dt)(func(s *session) backends.View {
			a := s.tensor(dt, values(dt, 33*33, -1, 1, 17), 33, 33)
			b := s.tensor(dt, values(dt, 33*33, -1, 1, 18), 33, 33)
			out := s.empty(dt, 33, 33)
			s.b.Matmul(out, a, b)
			return out
		})
		g := backends.ConvGeometry{N: 2, C: 3, H: 5, W: 6, KH: 3, KW: 2, StrideH: 2, StrideW: 1, PadTop: 1, PadLeft: 1,
			DilationH: 1, DilationW: 2, OutH: 3, OutW: 5}
		add(dt, "im2col/%s", dt)(func(s *session) backends.View {
			x := s.tensor(dt, values(dt, 2*3*5*6, -1, 1, 19), 2, 3, 5, 6)
			out := s.empty(dt, 2, 3*3*2, 3*5)
			s.b.Im2Col(out, x, g)
			return out
		})
		add(dt, "col2im/%s", dt)(func(s *session) backends.View {
			cols := s.tensor(dt, values(dt, 2*18*15, -1, 1, 20), 2, 18, 15)
			out := s.empty(dt, 2, 3, 5, 6)
			s.b.Col2Im(out, cols, g)
			return out
		})
		for k := backends.Uniform; k <= backends.RandInt; k++ {
			add(dt, "random/%d/%s", k, dt)(func(s *session) backends.View {
				out := s.empty(dt, 7, 9)
				p0, p1 := 0.0, 1.0
				if k == backends.Bernoulli {
					p0 = 0.3
				} else if k == backends.RandInt {
					p0, p1 = -5, 5
				}
				s.b.Random(out, k, 1234, 99, p0, p1)
				return out
			})
		}
	}
	return cs
}
