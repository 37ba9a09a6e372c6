package onnx

import (
	"fmt"
)

// The recurrent operators become a loop over time per direction, the same
// computation as recurrent: one input projection for every step, then the
// recurrent product and the gates at each step.

func init() {
	translators["LSTM"] = func(t *translation) { translateRecurrent(t, "LSTM", 4) }
	translators["GRU"] = func(t *translation) { translateRecurrent(t, "GRU", 3) }
	translators["RNN"] = func(t *translation) { translateRecurrent(t, "RNN", 1) }
}

func translateRecurrent(t *translation, kind string, gates int) {
	if t.has(4) || t.inRank(0) != 3 {
		t.give() // sequence_lens: the runtime checks it at run time
	}
	if kind == "LSTM" && t.has(7) {
		t.give() // peepholes run in the runtime
	}
	w, r := t.inShape(1), t.inShape(2)
	if len(w) != 3 || len(r) != 3 {
		t.give()
	}
	hidden := int(t.c.attrInt("hidden_size", int64(r[2])))
	dirName := t.c.attrString("direction", "forward")
	dirs := 1
	if dirName == "bidirectional" {
		dirs = 2
	}
	if w[0] != dirs || w[1] != gates*hidden || r[0] != dirs || r[1] != gates*hidden || r[2] != hidden {
		t.give()
	}
	acts := map[string][]string{"LSTM": {"Sigmoid", "Tanh", "Tanh"}, "GRU": {"Sigmoid", "Tanh"}, "RNN": {"Tanh"}}[kind]
	var given []string
	if a := t.c.attr("activations"); a != nil {
		for _, s := range a.Strings {
			given = append(given, string(s))
		}
	}
	layout := t.c.attrInt("layout", 0)
	lbr := kind == "GRU" && t.c.attrInt("linear_before_reset", 0) != 0
	base := t.s.node.Outputs[0]
	if base == "" {
		base = kind
	}
	x := t.g.localName(base + "_x")
	seq := t.g.localName(base + "_seq")
	ys, hs, cs := t.g.localName(base+"_ys"), t.g.localName(base+"_hs"), t.g.localName(base+"_cs")
	xe := t.in(0)
	if layout != 0 {
		xe += ".Transpose(0, 1)"
	}
	t.line("%s := %s", x, xe)
	t.line("%s := %s.Dim(0)", seq, x)
	t.line("var %s, %s, %s []*tensor.Tensor", ys, hs, cs)
	if kind != "LSTM" {
		t.line("_ = %s", cs)
	}
	wIn, rIn := t.in(1), t.in(2)
	gh := gates * hidden
	for d := range dirs {
		act := acts
		if len(given) >= (d+1)*len(acts) {
			act = given[d*len(acts) : (d+1)*len(acts)]
		}
		for _, a := range act {
			if !rnnActivations[a] {
				t.give()
			}
		}
		t.line("{ // direction %d", d)
		t.line("rw := %s.Select(0, %d).T()", rIn, d)
		t.line("xw := %s.Matmul(%s.Select(0, %d).T())", x, wIn, d)
		if t.has(3) {
			t.line("bias := %s.Select(0, %d)", t.in(3), d)
			if lbr {
				t.line("xw = xw.Add(bias.Narrow(0, 0, %d))", gh)
				t.line("rb := bias.Narrow(0, %d, %d)", gh, gh)
			} else {
				t.line("xw = xw.Add(bias.Narrow(0, 0, %d).Add(bias.Narrow(0, %d, %d)))", gh, gh, gh)
			}
		}
		dt := dtypeExpr(t.inDType(0))
		if t.has(5) {
			t.line("h := %s.Select(0, %d)", t.in(5), d)
		} else {
			t.line("h := tensor.ZerosOf(m.dev.Inner(), %s, %s.Dim(1), %d)", dt, x, hidden)
		}
		if kind == "LSTM" {
			if t.has(6) {
				t.line("cell := %s.Select(0, %d)", t.in(6), d)
			} else {
				t.line("cell := tensor.ZerosOf(m.dev.Inner(), %s, %s.Dim(1), %d)", dt, x, hidden)
			}
		}
		t.line("steps := make([]*tensor.Tensor, %s)", seq)
		t.line("for s := range %s {", seq)
		if dirName == "reverse" || d == 1 {
			t.line("step := %s - 1 - s", seq)
		} else {
			t.line("step := s")
		}
		t.line("xt := xw.Select(0, step)")
		H := hidden
		switch kind {
		case "LSTM":
			t.line("g := xt.Add(h.Matmul(rw))")
			t.line("i := g.Narrow(1, 0, %d).%s()", H, act[0])
			t.line("o := g.Narrow(1, %d, %d).%s()", H, H, act[0])
			t.line("f := g.Narrow(1, %d, %d).%s()", 2*H, H, act[0])
			t.line("candidate := g.Narrow(1, %d, %d).%s()", 3*H, H, act[1])
			t.line("cell = f.Mul(cell).Add(i.Mul(candidate))")
			t.line("h = o.Mul(cell.%s())", act[2])
		case "GRU":
			t.line("hr := h.Matmul(rw) // [batch, 3H]: z, r, h parts")
			if lbr {
				t.line("hr = hr.Add(rb)")
			}
			t.line("z := xt.Narrow(1, 0, %d).Add(hr.Narrow(1, 0, %d)).%s()", H, H, act[0])
			t.line("reset := xt.Narrow(1, %d, %d).Add(hr.Narrow(1, %d, %d)).%s()", H, H, H, H, act[0])
			if lbr {
				t.line("candidate := xt.Narrow(1, %d, %d).Add(reset.Mul(hr.Narrow(1, %d, %d))).%s()", 2*H, H, 2*H, H, act[1])
			} else {
				t.line("candidate := xt.Narrow(1, %d, %d).Add(reset.Mul(h).Matmul(rw.Narrow(1, %d, %d))).%s()", 2*H, H, 2*H, H, act[1])
			}
			t.line("h = candidate.Add(z.Mul(h.Sub(candidate))) // (1−z)·ĥ + z·h")
		default:
			t.line("h = xt.Add(h.Matmul(rw)).%s()", act[0])
		}
		t.line("steps[step] = h")
		t.line("}")
		t.line("%s = append(%s, tensor.Stack(steps, 0))", ys, ys)
		t.line("%s = append(%s, h)", hs, hs)
		if kind == "LSTM" {
			t.line("%s = append(%s, cell)", cs, cs)
		}
		t.line("}")
	}
	y, yh, yc := fmt.Sprintf("tensor.Stack(%s, 1)", ys), fmt.Sprintf("tensor.Stack(%s, 0)", hs), fmt.Sprintf("tensor.Stack(%s, 0)", cs)
	if layout != 0 {
		y += ".Permute(2, 0, 1, 3)"
		yh += ".Transpose(0, 1)"
		yc += ".Transpose(0, 1)"
	}
	outs := []string{y, yh, yc}
	for k := range t.s.node.Outputs {
		if k < len(outs) && (kind == "LSTM" || k < 2) {
			t.out(k, outs[k])
		} else if t.s.node.Outputs[k] != "" {
			t.give()
		}
	}

}
