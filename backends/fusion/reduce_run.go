package fusion

import (
	"fmt"
	"math"

	"github.com/kiln-ml/kiln/backends"
)

// redPlan is a reduction tail laid out for the tiles.
type redPlan struct {
	op      backends.ReduceOp
	after   int            // runs after ops [0, after) in each tile
	x       viewPlan       // its input: a scratch slot, or a buffer from x.offset in flat order
	dtype   backends.DType // x's and out's
	rows    int            // reduced elements per output
	outputs int            // outputs
	seg     int            // elements per run: rows, or segmentLen for segmented outputs
	segs    int            // runs per output
	wide    bool           // float32 sums take the CPU's sixteen-lane float64 kernel order

	// bound per group
	xf32   []float32
	xf64   []float64
	outOff int
	of32   []float32
	of64   []float64
	parts  []float64 // per output, per run (segs > 1): the runs' results, combined in order after the tiles
}

// redState is a worker's run in progress of one reduction: the run's
// position and the CPU kernel's accumulators (backends/cpu/reduce.go,
// reduceRun).
type redState struct {
	out, seg, pos, n int
	lanes            [16]float64 // the wide kernel's lanes: element i goes to lane i mod 16
	acc              [4]float64  // the four interleaved accumulators
}

var negInf, posInf = math.Inf(-1), math.Inf(1)

// identity is op's starting value.
func identity(op backends.ReduceOp) float64 {
	switch op {
	case backends.Prod:
		return 1
	case backends.Max:
		return negInf
	case backends.Min:
		return posInf
	}
	return 0
}

// combine is op applied to an accumulator and a value, as the CPU's.
func combine(op backends.ReduceOp, a, v float64) float64 {
	switch op {
	case backends.Sum:
		return a + v
	case backends.Prod:
		return a * v
	case backends.Max:
		return max(a, v)
	}
	return min(a, v)
}

// start begins run seg of output out, of n elements.
func (s *redState) start(op backends.ReduceOp, out, seg, n int) {
	s.out, s.seg, s.pos, s.n = out, seg, 0, n
	s.lanes = [16]float64{}
	id := identity(op)
	s.acc = [4]float64{id, id, id, id}
}

// result finishes the run: (a0∘a1)∘(a2∘a3).
func (s *redState) result(op backends.ReduceOp) float64 {
	return combine(op, combine(op, s.acc[0], s.acc[1]), combine(op, s.acc[2], s.acc[3]))
}

// feed folds the run's next elements x into s in the CPU kernel's order.
func feed[T float32 | float64](s *redState, op backends.ReduceOp, wide bool, x []T) {
	if op == backends.Max || op == backends.Min {
		// NaN-propagating, −0 below +0: the order does not matter
		a := s.acc[0]
		if op == backends.Max {
			for _, v := range x {
				a = max(a, float64(v))
			}
		} else {
			for _, v := range x {
				a = min(a, float64(v))
			}
		}
		s.acc[0] = a
		s.pos += len(x)
		return
	}
	m := 0 // elements summed in the sixteen lanes
	if wide {
		m = s.n &^ 15
	}
	if s.pos < m {
		k := min(len(x), m-s.pos)
		part := x[:k]
		for s.pos%16 != 0 && len(part) > 0 {
			s.lanes[s.pos%16] += float64(part[0])
			part, s.pos = part[1:], s.pos+1
		}
		if whole := len(part) &^ 15; whole > 0 {
			sumLanes(&s.lanes, part[:whole])
			part, s.pos = part[whole:], s.pos+whole
		}
		for _, v := range part {
			s.lanes[s.pos%16] += float64(v)
			s.pos++
		}
		x = x[k:]
		if s.pos == m {
			s.acc[0] = laneTree(&s.lanes)
		}
	}
	if len(x) == 0 {
		return
	}
	// the rest: four interleaved accumulators over whole groups of four,
	// then the first
	t4 := m + (s.n-m)&^3
	a := &s.acc
	for _, v := range x {
		k := 0
		if s.pos < t4 {
			k = (s.pos - m) & 3
		}
		if op == backends.Sum {
			a[k] += float64(v)
		} else {
			a[k] *= float64(v)
		}
		s.pos++
	}
}

// laneTree adds the sixteen lanes as the CPU's kernel does: four vectors
// of four added pairwise ((v0+v1)+(v2+v3)), then the vector's halves, then
// its two lanes.
func laneTree(l *[16]float64) float64 {
	var z [4]float64
	for k := range z {
		z[k] = (l[k] + l[4+k]) + (l[8+k] + l[12+k])
	}
	return (z[0] + z[2]) + (z[1] + z[3])
}

// sumLanes adds x (a multiple of sixteen long, starting at lane 0) into
// the lanes: lane k gets x[k], x[k+16], … in order.
func sumLanes[T float32 | float64](l *[16]float64, x []T) {
	if xf, ok := any(x).([]float32); ok && sumLanesF32(l, xf) {
		return
	}
	for ; len(x) >= 16; x = x[16:] {
		for k := range 16 {
			l[k] += float64(x[k])
		}
	}
}

// reduceTile folds the cnt elements of reduction r's input in the tile
// that starts at flat element f0 into w's runs, storing each run's result
// when it completes. It reports false when a scratch buffer is missing.
func (w *worker) reduceTile(r, f0, cnt int) bool {
	rp := &w.p.reds[r]
	if rp.dtype == backends.Float32 {
		var x []float32
		if rp.x.slot >= 0 {
			if x = w.f32[rp.x.slot]; len(x) < cnt {
				return false
			}
		} else {
			x = rp.xf32[rp.x.offset+f0:]
		}
		reduceRuns(w, rp, &w.runs[r], f0, x[:cnt])
		return true
	}
	var x []float64
	if rp.x.slot >= 0 {
		if x = w.f64[rp.x.slot]; len(x) < cnt {
			return false
		}
	} else {
		x = rp.xf64[rp.x.offset+f0:]
	}
	reduceRuns(w, rp, &w.runs[r], f0, x[:cnt])
	return true
}

// reduceRuns folds x, the elements from flat element f0, into the runs
// they belong to, in order.
func reduceRuns[T float32 | float64](w *worker, rp *redPlan, s *redState, f0 int, x []T) {
	for len(x) > 0 {
		j, q := f0/rp.rows, f0%rp.rows
		seg := q / rp.seg
		off := q - seg*rp.seg
		n := min(rp.seg, rp.rows-seg*rp.seg)
		if off == 0 {
			s.start(rp.op, j, seg, n)
		} else if s.out != j || s.seg != seg || s.pos != off {
			panic(fmt.Sprintf("fusion: reduction run of output %d segment %d resumed at %d out of order", j, seg, off))
		}
		take := min(len(x), n-off)
		feed(s, rp.op, rp.wide, x[:take])
		if s.pos == n {
			v := s.result(rp.op)
			if rp.segs > 1 {
				rp.parts[j*rp.segs+seg] = v
			} else {
				rp.store(j, v)
			}
		}
		x, f0 = x[take:], f0+take
	}
}

// store writes output j.
func (rp *redPlan) store(j int, v float64) {
	if rp.dtype == backends.Float32 {
		rp.of32[rp.outOff+j] = float32(v)
	} else {
		rp.of64[rp.outOff+j] = v
	}
}

// finish combines the runs of segmented outputs in order, as the CPU does.
func (rp *redPlan) finish() {
	if rp.segs <= 1 {
		return
	}
	for j := range rp.outputs {
		a := rp.parts[j*rp.segs]
		for s := 1; s < rp.segs; s++ {
			a = combine(rp.op, a, rp.parts[j*rp.segs+s])
		}
		rp.store(j, a)
	}
}
