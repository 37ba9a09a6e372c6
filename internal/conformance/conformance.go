package conformance

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/kiln-ml/kiln/backends"
)

// Encode returns vals as the bytes of dtype dt, little-endian.
func Encode(dt backends.DType, vals []float64) []byte {
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

// Decode returns the values of the little-endian bytes b of dtype dt.
func Decode(dt backends.DType, b []byte) []float64 {
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

// Session holds the buffers of one case on one backend; Free releases
// them. Err is the first failure of a read.
type Session struct {
	B    backends.Backend
	bufs []backends.Buffer
	Err  error // first failure
}

// Tensor returns a contiguous view of shape on a new buffer holding vals.
func (s *Session) Tensor(dt backends.DType, vals []float64, shape ...int) backends.View {
	buf, err := s.B.Alloc(dt, len(vals))
	if err != nil {
		panic(err) // the suite's inputs are tiny: a failure here is a broken device
	}
	s.bufs = append(s.bufs, buf)
	s.B.Write(buf, 0, Encode(dt, vals))
	return backends.Contiguous(buf, dt, shape...)
}

// Empty returns a contiguous view of shape on a new zeroed buffer.
func (s *Session) Empty(dt backends.DType, shape ...int) backends.View {
	v := s.Tensor(dt, make([]float64, backends.NumElements(shape)), shape...)
	return v
}

// Read returns the values of v's whole buffer (recording a failure in Err).
func (s *Session) Read(v backends.View) []float64 {
	b := make([]byte, v.Buf.Bytes())
	if err := s.B.Read(v.Buf, 0, b); err != nil && s.Err == nil {
		s.Err = fmt.Errorf("read: %w", err)
	}
	return Decode(v.DType, b)
}

// Raw returns the bytes of v's whole buffer (recording a failure in Err).
func (s *Session) Raw(v backends.View) []byte {
	b := make([]byte, v.Buf.Bytes())
	if err := s.B.Read(v.Buf, 0, b); err != nil && s.Err == nil {
		s.Err = fmt.Errorf("read: %w", err)
	}
	return b
}

// Free frees the session's buffers.
func (s *Session) Free() {
	for _, b := range s.bufs {
		s.B.Free(b)
	}
}

// Values returns n deterministic inputs: in [lo, hi), or small integers
// for integer dtypes.
func Values(dt backends.DType, n int, lo, hi float64, salt int) []float64 {
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

// Case builds inputs on a Session, runs one primitive and returns
// the view holding the result.
type Case struct {
	Name  string
	DType backends.DType // the dtype that sets a tolerance
	Run   func(s *Session) backends.View
}

var floats = []backends.DType{backends.Float32, backends.Float64, backends.Float16, backends.BFloat16}

// Domain returns an input range where op is defined and well conditioned.
func Domain(op backends.UnaryOp) (lo, hi float64) {
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

// Cases returns the suite, named "kind/op/dtype" ("unary/exp/float32").
func Cases() []Case {
	var cs []Case
	add := func(dt backends.DType, format string, args ...any) func(func(*Session) backends.View) {
		return func(run func(*Session) backends.View) {
			cs = append(cs, Case{Name: fmt.Sprintf(format, args...), DType: dt, Run: run})
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
		lo, hi := Domain(u)
		for _, dt := range all {
			if dt == backends.Bool || (!dt.IsFloat() && !def.IntSafe) || (dt == backends.Uint8 && u == backends.Neg) {
				continue
			}
			outT := dt
			if def.Predicate {
				outT = backends.Bool
			}
			add(dt, "unary/%s/%s", def.Name, dt)(func(s *Session) backends.View {
				x := s.Tensor(dt, Values(dt, 24, lo, hi, op), 4, 6)
				out := s.Empty(outT, 4, 6)
				s.B.Unary(u, out, x, p0, p1)
				return out
			})
			if dt.IsFloat() && !def.Predicate {
				add(dt, "unarygrad/%s/%s", def.Name, dt)(func(s *Session) backends.View {
					x := s.Tensor(dt, Values(dt, 24, lo, hi, op), 4, 6)
					g := s.Tensor(dt, Values(dt, 24, -1, 1, 7), 4, 6)
					out := s.Empty(dt, 4, 6)
					s.B.UnaryGrad(u, out, x, g, p0, p1)
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
			add(dt, "binary/%s/%s", def.Name, dt)(func(s *Session) backends.View {
				a := s.Tensor(dt, Values(dt, 12, lo, hi, op), 3, 4)
				bv := s.Tensor(dt, Values(dt, 4, lo, hi, op+50), 1, 4)
				bv.Strides = []int{0, 1} // broadcast a row
				bv.Shape = []int{3, 4}
				out := s.Empty(outT, 3, 4)
				s.B.Binary(bop, out, a, bv)
				return out
			})
			for _, rev := range []bool{false, true} {
				add(dt, "scalar/%s/%s/reverse=%v", def.Name, dt, rev)(func(s *Session) backends.View {
					a := s.Tensor(dt, Values(dt, 12, lo, hi, op), 3, 4)
					out := s.Empty(outT, 3, 4)
					s.B.BinaryScalar(bop, out, a, 2, rev)
					return out
				})
			}
		}
	}
	for _, dt := range all {
		add(dt, "fill/%s", dt)(func(s *Session) backends.View {
			out := s.Empty(dt, 5, 3)
			s.B.Fill(out, 1)
			return out
		})
		for _, from := range all {
			tol := dt
			if from == backends.BFloat16 || from == backends.Float16 {
				tol = from
			}
			add(tol, "copy/%s<-%s/transposed", dt, from)(func(s *Session) backends.View {
				in := Values(from, 12, -3, 3, 5)
				if !dt.IsFloat() {
					for i := range in { // float-to-integer casts of fractions are not compared
						in[i] = math.Abs(math.Round(in[i]))
					}
				}
				x := s.Tensor(from, in, 3, 4)
				xt := backends.View{Buf: x.Buf, DType: from, Shape: []int{4, 3}, Strides: []int{1, 4}}
				out := s.Empty(dt, 4, 3)
				s.B.Copy(out, xt)
				return out
			})
		}
		add(dt, "where/%s", dt)(func(s *Session) backends.View {
			c := s.Tensor(backends.Bool, Values(backends.Bool, 12, 0, 1, 3), 3, 4)
			a := s.Tensor(dt, Values(dt, 12, -3, 3, 4), 3, 4)
			b := s.Tensor(dt, Values(dt, 12, -3, 3, 6), 3, 4)
			out := s.Empty(dt, 3, 4)
			s.B.Where(out, c, a, b)
			return out
		})
		add(dt, "gather/%s", dt)(func(s *Session) backends.View {
			x := s.Tensor(dt, Values(dt, 12, -3, 3, 8), 3, 4)
			idx := s.Tensor(backends.Int64, []float64{3, 0, 1, 1, 2, 2, 0, 3, 3}, 3, 3)
			out := s.Empty(dt, 3, 3)
			s.B.Gather(out, x, idx, 1)
			return out
		})
		for _, addMode := range []bool{false, true} {
			if addMode && dt == backends.Bool {
				continue
			}
			add(dt, "scatter/%s/add=%v", dt, addMode)(func(s *Session) backends.View {
				out := s.Tensor(dt, Values(dt, 12, -3, 3, 9), 4, 3)
				idx := s.Tensor(backends.Int64, []float64{0, 1, 2, 3, 0, 1}, 2, 3)
				if addMode {
					idx = s.Tensor(backends.Int64, []float64{0, 1, 2, 0, 1, 2}, 2, 3) // duplicates accumulate
				}
				src := s.Tensor(dt, Values(dt, 6, -3, 3, 10), 2, 3)
				s.B.Scatter(out, idx, src, 0, addMode)
				return out
			})
		}
		if dt == backends.Bool {
			continue
		}
		for _, rop := range []backends.ReduceOp{backends.Sum, backends.Prod, backends.Max, backends.Min} {
			for _, axes := range [][]int{{0}, {2}, {0, 2}, {0, 1, 2}} {
				add(dt, "reduce/%s/%s/axes%v", rop, dt, axes)(func(s *Session) backends.View {
					x := s.Tensor(dt, Values(dt, 24, 0.5, 1.5, 11), 2, 3, 4)
					shape := []int{2, 3, 4}
					for _, a := range axes {
						shape[a] = 1
					}
					out := s.Empty(dt, shape...)
					s.B.Reduce(rop, out, x, axes)
					return out
				})
			}
		}
		for _, rop := range []backends.ReduceOp{backends.ArgMax, backends.ArgMin} {
			add(backends.Int64, "argreduce/%s/%s", rop, dt)(func(s *Session) backends.View {
				x := s.Tensor(dt, Values(dt, 24, -3, 3, 12), 4, 6)
				out := s.Empty(backends.Int64, 4, 1)
				s.B.ArgReduce(rop, out, x, 1)
				return out
			})
		}
		for _, rop := range []backends.ReduceOp{backends.Sum, backends.Prod} {
			add(dt, "scan/%s/%s", rop, dt)(func(s *Session) backends.View {
				x := s.Tensor(dt, Values(dt, 24, 0.5, 1.5, 13), 4, 6)
				out := s.Empty(dt, 4, 6)
				s.B.Scan(rop, out, x, 0)
				return out
			})
		}
		for _, desc := range []bool{false, true} {
			for _, part := range []string{"values", "indices"} {
				add(dt, "sort/%s/descending=%v/%s", dt, desc, part)(func(s *Session) backends.View {
					x := s.Tensor(dt, Values(dt, 24, -3, 3, 14), 4, 6)
					vals := s.Empty(dt, 4, 6)
					idx := s.Empty(backends.Int64, 4, 6)
					s.B.Sort(vals, idx, x, 1, desc)
					if part == "values" {
						return vals
					}
					return idx
				})
			}
		}
	}
	for _, dt := range floats {
		add(dt, "matmul/%s/batched-transposed", dt)(func(s *Session) backends.View {
			a := s.Tensor(dt, Values(dt, 2*5*7, -1, 1, 15), 2, 5, 7)
			b := s.Tensor(dt, Values(dt, 7*19, -1, 1, 16), 19, 7) // used transposed and broadcast
			bt := backends.View{Buf: b.Buf, DType: dt, Shape: []int{2, 7, 19}, Strides: []int{0, 1, 7}}
			out := s.Empty(dt, 2, 5, 19)
			s.B.Matmul(out, a, bt)
			return out
		})
		add(dt, "matmul/%s/square", dt)(func(s *Session) backends.View {
			a := s.Tensor(dt, Values(dt, 33*33, -1, 1, 17), 33, 33)
			b := s.Tensor(dt, Values(dt, 33*33, -1, 1, 18), 33, 33)
			out := s.Empty(dt, 33, 33)
			s.B.Matmul(out, a, b)
			return out
		})
		g := backends.ConvGeometry{N: 2, C: 3, H: 5, W: 6, KH: 3, KW: 2, StrideH: 2, StrideW: 1, PadTop: 1, PadLeft: 1,
			DilationH: 1, DilationW: 2, OutH: 3, OutW: 5}
		add(dt, "im2col/%s", dt)(func(s *Session) backends.View {
			x := s.Tensor(dt, Values(dt, 2*3*5*6, -1, 1, 19), 2, 3, 5, 6)
			out := s.Empty(dt, 2, 3*3*2, 3*5)
			s.B.Im2Col(out, x, g)
			return out
		})
		add(dt, "col2im/%s", dt)(func(s *Session) backends.View {
			cols := s.Tensor(dt, Values(dt, 2*18*15, -1, 1, 20), 2, 18, 15)
			out := s.Empty(dt, 2, 3, 5, 6)
			s.B.Col2Im(out, cols, g)
			return out
		})
		for k := backends.Uniform; k <= backends.RandInt; k++ {
			add(dt, "random/%d/%s", k, dt)(func(s *Session) backends.View {
				out := s.Empty(dt, 7, 9)
				p0, p1 := 0.0, 1.0
				if k == backends.Bernoulli {
					p0 = 0.3
				} else if k == backends.RandInt {
					p0, p1 = -5, 5
				}
				s.B.Random(out, k, 1234, 99, p0, p1)
				return out
			})
		}
	}
	return cs
}
