package onnx

import (
	"fmt"

	"github.com/kiln-ml/kiln/tensor"
)

// Recurrent operators (RNN, GRU, LSTM) unrolled over time with Kiln ops:
// the input projection X·Wᵀ for every step is one product, then each step
// adds the recurrent product and applies the gates. Gradients flow through
// the unrolled steps to W, R, B and the initial states.

func init() {
	role := func(k int, _ int64, _ map[string]*AttributeProto) role {
		if k == 4 {
			return roleStatic // sequence_lens
		}
		return roleData
	}
	ops["LSTM"] = &opDef{role: role, run: func(c *call) []*value { return recurrent(c, "LSTM", 4) }, check: checkRecurrent}
	ops["GRU"] = &opDef{role: role, run: func(c *call) []*value { return recurrent(c, "GRU", 3) }, check: checkRecurrent}
	ops["RNN"] = &opDef{role: role, run: func(c *call) []*value { return recurrent(c, "RNN", 1) }, check: checkRecurrent}
}

var rnnActivations = map[string]bool{"Sigmoid": true, "Tanh": true, "Relu": true}

func checkRecurrent(n *NodeProto, attrs map[string]*AttributeProto, _ int64) string {
	if a := attrs["activations"]; a != nil {
		for _, s := range a.Strings {
			if !rnnActivations[string(s)] {
				return "activation " + string(s)
			}
		}
	}
	if a := attrs["clip"]; a != nil {
		return "clip"
	}
	if a := attrs["input_forget"]; a != nil && a.I != 0 {
		return "input_forget=1"
	}
	return ""
}

func activate(name string, x *tensor.Tensor) *tensor.Tensor {
	switch name {
	case "Sigmoid":
		return x.Sigmoid()
	case "Tanh":
		return x.Tanh()
	case "Relu":
		return x.Relu()
	}
	panic(fmt.Sprintf("onnx: activation %s passed the load check", name))
}

// recurrent runs an RNN, GRU or LSTM node with gates gate matrices.
func recurrent(c *call, kind string, gates int) []*value {
	x, w, r := c.t(0), c.t(1), c.t(2)
	layout := c.attrInt("layout", 0)
	if x.Dims() != 3 {
		c.fail(tensor.ErrShape, "X %v must be [seq, batch, input]", x.Shape())
	}
	if layout != 0 {
		x = x.Transpose(0, 1)
	}
	seq, batch := x.Dim(0), x.Dim(1)
	hidden := int(c.attrInt("hidden_size", int64(r.Dim(r.Dims()-1))))
	dirName := c.attrString("direction", "forward")
	dirs := 1
	if dirName == "bidirectional" {
		dirs = 2
	}
	if w.Dims() != 3 || w.Dim(0) != dirs || w.Dim(1) != gates*hidden || r.Dims() != 3 || r.Dim(0) != dirs || r.Dim(1) != gates*hidden || r.Dim(2) != hidden {
		c.fail(tensor.ErrShape, "W %v and R %v do not fit %d direction(s), %d gates and hidden size %d", w.Shape(), r.Shape(), dirs, gates, hidden)
	}
	if c.has(4) {
		for _, l := range c.ints(4) {
			if int(l) != seq {
				c.fail(tensor.ErrArgument, "sequence_lens %v: Kiln runs full-length sequences only (length %d)", c.ints(4), seq)
			}
		}
	}
	acts := map[string][]string{"LSTM": {"Sigmoid", "Tanh", "Tanh"}, "GRU": {"Sigmoid", "Tanh"}, "RNN": {"Tanh"}}[kind]
	var given []string
	if a := c.attr("activations"); a != nil {
		for _, s := range a.Strings {
			given = append(given, string(s))
		}
	}
	var ys, hs, cs []*tensor.Tensor
	for d := range dirs {
		act := acts
		if len(given) >= (d+1)*len(acts) {
			act = given[d*len(acts) : (d+1)*len(acts)]
		}
		wd, rd := w.Select(0, d), r.Select(0, d)
		// Input projection for every step at once: [seq, batch, gates·H].
		xw := x.Matmul(wd.T())
		var rb *tensor.Tensor
		lbr := kind == "GRU" && c.attrInt("linear_before_reset", 0) != 0
		if c.has(3) {
			bd := c.t(3).Select(0, d)
			wb, rbias := bd.Narrow(0, 0, gates*hidden), bd.Narrow(0, gates*hidden, gates*hidden)
			if lbr {
				xw = xw.Add(wb)
				rb = rbias
			} else {
				xw = xw.Add(wb.Add(rbias))
			}
		}
		var h, cell *tensor.Tensor
		if c.has(5) {
			h = c.t(5).Select(0, d)
		} else {
			h = tensor.ZerosOf(c.dev.Inner(), x.DType(), batch, hidden)
		}
		if kind == "LSTM" {
			if c.has(6) {
				cell = c.t(6).Select(0, d)
			} else {
				cell = tensor.ZerosOf(c.dev.Inner(), x.DType(), batch, hidden)
			}
		}
		var pi, po, pf *tensor.Tensor // LSTM peepholes
		if kind == "LSTM" && c.has(7) {
			pd := c.t(7).Select(0, d)
			pi, po, pf = pd.Narrow(0, 0, hidden), pd.Narrow(0, hidden, hidden), pd.Narrow(0, 2*hidden, hidden)
		}
		steps := make([]*tensor.Tensor, seq)
		reverse := dirName == "reverse" || d == 1
		for s := range seq {
			t := s
			if reverse {
				t = seq - 1 - s
			}
			xt := xw.Select(0, t)
			switch kind {
			case "LSTM":
				g := xt.Add(h.Matmul(rd.T()))
				gi, go_, gf := g.Narrow(1, 0, hidden), g.Narrow(1, hidden, hidden), g.Narrow(1, 2*hidden, hidden)
				if pi != nil {
					// Peepholes: the input and forget gates see the
					// previous cell, the output gate the new one.
					gi, gf = gi.Add(cell.Mul(pi)), gf.Add(cell.Mul(pf))
				}
				i := activate(act[0], gi)
				f := activate(act[0], gf)
				cc := activate(act[1], g.Narrow(1, 3*hidden, hidden))
				cell = f.Mul(cell).Add(i.Mul(cc))
				if po != nil {
					go_ = go_.Add(cell.Mul(po))
				}
				o := activate(act[0], go_)
				h = o.Mul(activate(act[2], cell))
			case "GRU":
				hr := h.Matmul(rd.T()) // [batch, 3H]: z, r, h parts
				if rb != nil {
					hr = hr.Add(rb)
				}
				z := activate(act[0], xt.Narrow(1, 0, hidden).Add(hr.Narrow(1, 0, hidden)))
				rg := activate(act[0], xt.Narrow(1, hidden, hidden).Add(hr.Narrow(1, hidden, hidden)))
				var cand *tensor.Tensor
				if lbr {
					cand = xt.Narrow(1, 2*hidden, hidden).Add(rg.Mul(hr.Narrow(1, 2*hidden, hidden)))
				} else {
					rh := rd.Narrow(0, 2*hidden, hidden)
					cand = xt.Narrow(1, 2*hidden, hidden).Add(rg.Mul(h).Matmul(rh.T()))
				}
				ht := activate(act[1], cand)
				h = ht.Add(z.Mul(h.Sub(ht))) // (1−z)·ĥ + z·h
			default:
				h = activate(act[0], xt.Add(h.Matmul(rd.T())))
			}
			steps[t] = h
		}
		ys = append(ys, tensor.Stack(steps, 0)) // [seq, batch, H]
		hs = append(hs, h)
		if cell != nil {
			cs = append(cs, cell)
		}
	}
	y := tensor.Stack(ys, 1) // [seq, dirs, batch, H]
	yh := tensor.Stack(hs, 0)
	if layout != 0 {
		y = y.Permute(2, 0, 1, 3)
		yh = yh.Transpose(0, 1)
	}
	res := []*value{{t: y}, {t: yh}}
	if kind == "LSTM" {
		yc := tensor.Stack(cs, 0)
		if layout != 0 {
			yc = yc.Transpose(0, 1)
		}
		res = append(res, &value{t: yc})
	}
	return res
}
