package strict

import (
	"github.com/kiln-ml/kiln/backends"
)

// enqueueOptional is enqueue for kernels some of whose views are optional
// (no Buf): those are passed through unchecked, the others checked and
// translated as every kernel's views are.
func (s *Backend) enqueueOptional(op string, views []backends.View, fn func(vs []backends.View)) {
	var present []backends.View
	var at []int
	for i, v := range views {
		if v.Buf != nil {
			present, at = append(present, v), append(at, i)
		}
	}
	s.enqueue(op, present, func(vs []backends.View) {
		all := append([]backends.View(nil), views...)
		for k, i := range at {
			all[i] = vs[k]
		}
		fn(all)
	})
}

// AttentionForward implements backends.AttentionFusion by forwarding.
func (s *Backend) AttentionForward(out, lse, q, k, v, mask backends.View, g backends.AttentionGeometry) {
	if f, ok := wrapped[backends.AttentionFusion](s, "attention", "fused attention"); ok {
		s.enqueueOptional("attention", []backends.View{out, lse, q, k, v, mask}, func(vs []backends.View) {
			f.AttentionForward(vs[0], vs[1], vs[2], vs[3], vs[4], vs[5], g)
		})
	}
}

// AttentionBackward implements backends.AttentionFusion by forwarding.
func (s *Backend) AttentionBackward(dq, dk, dv, q, k, v, mask, out, dout, lse backends.View, g backends.AttentionGeometry) {
	if f, ok := wrapped[backends.AttentionFusion](s, "attention grad", "fused attention"); ok {
		s.enqueueOptional("attention grad", []backends.View{dq, dk, dv, q, k, v, mask, out, dout, lse}, func(vs []backends.View) {
			f.AttentionBackward(vs[0], vs[1], vs[2], vs[3], vs[4], vs[5], vs[6], vs[7], vs[8], vs[9], g)
		})
	}
}

// LayerNormForward implements backends.NormFusion by forwarding.
func (s *Backend) LayerNormForward(y, mean, rstd, x, weight, bias backends.View, eps float64) {
	if f, ok := wrapped[backends.NormFusion](s, "layer norm", "fused normalisation"); ok {
		s.enqueueOptional("layer norm", []backends.View{y, mean, rstd, x, weight, bias}, func(vs []backends.View) {
			f.LayerNormForward(vs[0], vs[1], vs[2], vs[3], vs[4], vs[5], eps)
		})
	}
}

// LayerNormBackward implements backends.NormFusion by forwarding.
func (s *Backend) LayerNormBackward(dx, dweight, dbias, dy, x, mean, rstd, weight backends.View) {
	if f, ok := wrapped[backends.NormFusion](s, "layer norm grad", "fused normalisation"); ok {
		s.enqueueOptional("layer norm grad", []backends.View{dx, dweight, dbias, dy, x, mean, rstd, weight}, func(vs []backends.View) {
			f.LayerNormBackward(vs[0], vs[1], vs[2], vs[3], vs[4], vs[5], vs[6], vs[7])
		})
	}
}

// RMSNormForward implements backends.NormFusion by forwarding.
func (s *Backend) RMSNormForward(y, rstd, x, weight backends.View, eps float64) {
	if f, ok := wrapped[backends.NormFusion](s, "rms norm", "fused normalisation"); ok {
		s.enqueueOptional("rms norm", []backends.View{y, rstd, x, weight}, func(vs []backends.View) {
			f.RMSNormForward(vs[0], vs[1], vs[2], vs[3], eps)
		})
	}
}

// RMSNormBackward implements backends.NormFusion by forwarding.
func (s *Backend) RMSNormBackward(dx, dweight, dy, x, rstd, weight backends.View) {
	if f, ok := wrapped[backends.NormFusion](s, "rms norm grad", "fused normalisation"); ok {
		s.enqueueOptional("rms norm grad", []backends.View{dx, dweight, dy, x, rstd, weight}, func(vs []backends.View) {
			f.RMSNormBackward(vs[0], vs[1], vs[2], vs[3], vs[4], vs[5])
		})
	}
}

// EmbeddingForward implements backends.EmbeddingFusion by forwarding.
func (s *Backend) EmbeddingForward(out, w, index backends.View) {
	if f, ok := wrapped[backends.EmbeddingFusion](s, "embedding", "fused embedding"); ok {
		s.enqueue("embedding", []backends.View{out, w, index}, func(vs []backends.View) {
			f.EmbeddingForward(vs[0], vs[1], vs[2])
		})
	}
}

// EmbeddingBackward implements backends.EmbeddingFusion by forwarding.
func (s *Backend) EmbeddingBackward(dw, dy, index backends.View, skip int) {
	if f, ok := wrapped[backends.EmbeddingFusion](s, "embedding grad", "fused embedding gradient"); ok {
		s.enqueue("embedding grad", []backends.View{dw, dy, index}, func(vs []backends.View) {
			f.EmbeddingBackward(vs[0], vs[1], vs[2], skip)
		})
	}
}

// AdamSteps implements backends.MultiAdamFusion by forwarding. Moments
// that are absent (a first step) are views with no buffer and are not
// checked.
func (s *Backend) AdamSteps(ps, gs, ms, vs []backends.View, hs []backends.AdamHyper) {
	f, ok := wrapped[backends.MultiAdamFusion](s, "adam steps", "multi-tensor Adam")
	if !ok {
		return
	}
	n := len(ps)
	views := make([]backends.View, 0, 4*n)
	views = append(views, ps...)
	views = append(views, gs...)
	views = append(views, ms...)
	views = append(views, vs...)
	s.enqueueOptional("adam steps", views, func(all []backends.View) {
		f.AdamSteps(all[:n], all[n:2*n], all[2*n:3*n], all[3*n:], hs)
	})
}

// MatmulBias implements backends.LinearFusion by forwarding.
func (s *Backend) MatmulBias(out, x, w, bias backends.View) {
	if f, ok := wrapped[backends.LinearFusion](s, "matmul bias", "fused linear"); ok {
		s.enqueue("matmul bias", []backends.View{out, x, w, bias}, func(vs []backends.View) {
			f.MatmulBias(vs[0], vs[1], vs[2], vs[3])
		})
	}
}

// MatmulBiasAct implements backends.LinearActFusion by forwarding.
func (s *Backend) MatmulBiasAct(out, pre, x, w, bias backends.View, op backends.UnaryOp) {
	if f, ok := wrapped[backends.LinearActFusion](s, "matmul bias act", "fused linear activation"); ok {
		s.enqueue("matmul bias act", []backends.View{out, pre, x, w, bias}, func(vs []backends.View) {
			f.MatmulBiasAct(vs[0], vs[1], vs[2], vs[3], vs[4], op)
		})
	}
}
