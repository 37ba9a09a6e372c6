package tensor

// autocastInputs returns ts cast to the autocast dtype when one of them is
// on an Autocast view and some floating-point input has another dtype;
// ok is false when nothing needs casting. The casts are recorded (To), so
// gradients flow back to the original dtypes; they are released with the
// enclosing Scope, like any intermediate.
func autocastInputs(ts ...*Tensor) (out []*Tensor, ok bool) {
	var dt DType
	found := false
	for _, t := range ts {
		if t != nil && t.dev.casting {
			dt, found = t.dev.autocast, true
			break
		}
	}
	if !found {
		return nil, false
	}
	need := false
	for _, t := range ts {
		if t.dtype.IsFloat() && t.dtype != dt {
			need = true
		}
	}
	if !need {
		return nil, false
	}
	out = make([]*Tensor, len(ts))
	for i, t := range ts {
		out[i] = t
		if t.dtype.IsFloat() && t.dtype != dt {
			out[i] = t.To(dt)
			out[i].dev.autocast, out[i].dev.casting = dt, true
		}
	}
	return out, true
}
