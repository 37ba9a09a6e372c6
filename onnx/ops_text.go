package onnx

import (
	"errors"
	"math"
	"strconv"
	"strings"

	"github.com/kiln-ml/kiln/tensor"
)

// Text operators run on the host: their inputs are token ids (or
// strings), and their outputs feed a model as features.

func init() {
	ops["TfIdfVectorizer"] = hostOp(tfIdfVectorizer)
}

// tfIdfVectorizer counts the n-grams of pool_int64s in each row of X
// (skipping up to max_skip_count tokens between an n-gram's items) and
// weighs the counts by mode: TF (counts), IDF (weights where present),
// TFIDF (counts times weights).
func tfIdfVectorizer(c *call) []*hostTensor {
	x := c.h(0)
	if x.i == nil {
		c.fail(tensor.ErrDType, "input of type %s: Kiln counts integer tokens", x.dtype)
	}
	rows, width := 1, 0
	switch len(x.shape) {
	case 1:
		width = x.shape[0]
	case 2:
		rows, width = x.shape[0], x.shape[1]
	default:
		c.fail(tensor.ErrShape, "input %v must be [C] or [N, C]", x.shape)
	}
	minN, maxN := int(c.attrInt("min_gram_length", 1)), int(c.attrInt("max_gram_length", 1))
	skip := int(c.attrInt("max_skip_count", 0))
	mode := c.attrString("mode", "TF")
	counts, indexes, pool := c.attrInts("ngram_counts"), c.attrInts("ngram_indexes"), c.attrInts("pool_int64s")
	var weights []float32
	if a := c.attr("weights"); a != nil {
		weights = a.Floats
	}
	if minN < 1 || maxN < minN || skip < 0 || len(counts) < maxN {
		c.fail(tensor.ErrArgument, "min_gram_length %d, max_gram_length %d, max_skip_count %d and %d ngram_counts do not fit", minN, maxN, skip, len(counts))
	}
	// Map each n-gram (as its tokens) to its output column.
	type gram struct {
		n    int
		toks [8]int64
	}
	cols := map[gram]int{}
	ordinal := 0
	outWidth := 0
	for _, v := range indexes {
		outWidth = max(outWidth, int(v)+1)
	}
	for n := 1; n <= len(counts); n++ {
		start := int(counts[n-1])
		end := len(pool)
		if n < len(counts) {
			end = int(counts[n])
		}
		if start < 0 || end > len(pool) || start > end || (end-start)%n != 0 {
			c.fail(tensor.ErrArgument, "ngram_counts %v do not fit %d pool entries", counts, len(pool))
		}
		for p := start; p < end; p += n {
			if ordinal >= len(indexes) {
				c.fail(tensor.ErrArgument, "%d ngram_indexes for more n-grams in the pool", len(indexes))
			}
			if n <= 8 {
				var g gram
				g.n = n
				copy(g.toks[:], pool[p:p+n])
				cols[g] = int(indexes[ordinal])
			}
			ordinal++
		}
	}
	out := newHost(tensor.Float32, []int{rows, outWidth})
	if len(x.shape) == 1 {
		out.shape = []int{outWidth}
	}
	for r := range rows {
		row := x.i[r*width : (r+1)*width]
		cnt := make([]float64, outWidth)
		for i := range row {
			for n := max(minN, 1); n <= min(maxN, 8); n++ {
				for s := 0; s <= skip; s++ {
					if n == 1 && s > 0 {
						break
					}
					if i+(n-1)*(s+1) >= len(row) {
						break
					}
					var g gram
					g.n = n
					for q := range n {
						g.toks[q] = row[i+q*(s+1)]
					}
					if col, ok := cols[g]; ok {
						cnt[col]++
					}
				}
			}
		}
		for col, v := range cnt {
			w := 1.0
			if col < len(weights) {
				w = float64(weights[col])
			}
			switch mode {
			case "IDF":
				if v > 0 {
					v = w
				}
			case "TFIDF":
				v *= w
			}
			out.set(r*outWidth+col, v)
		}
	}
	return hosts(out)
}

func init() {
	ops["StringNormalizer"] = hostOp(stringNormalizer)
}

// castStrings converts between string tensors and numbers, on the host:
// numbers print as the shortest decimal that reads back the same
// (NaN, INF and -INF for the special values); strings parse as Go's
// strconv does, case-insensitive "inf", "+inf" and "nan" included.
func castStrings(c *call, x *hostTensor, dt tensor.DType) *hostTensor {
	switch {
	case x.dtype == dtypeString && dt == dtypeString:
		return x
	case dt == dtypeString:
		out := &hostTensor{dtype: dtypeString, shape: append([]int{}, x.shape...), s: make([]string, x.size())}
		bits := 64
		if x.dtype == tensor.Float32 || x.dtype == tensor.Float16 || x.dtype == tensor.BFloat16 {
			bits = 32
		}
		for k := range x.size() {
			v := x.at(k)
			switch {
			case math.IsNaN(v):
				out.s[k] = "NaN"
			case math.IsInf(v, 1):
				out.s[k] = "INF"
			case math.IsInf(v, -1):
				out.s[k] = "-INF"
			case x.f == nil:
				out.s[k] = strconv.FormatInt(x.i[k], 10)
			default:
				out.s[k] = strconv.FormatFloat(v, 'g', -1, bits)
			}
		}
		return out
	}
	out := newHost(dt, x.shape)
	for k, s := range x.s {
		v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			c.fail(tensor.ErrArgument, "element %d %q is not a number", k, s)
		}
		if dt.IsFloat() {
			out.set(k, v)
		} else if n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64); err == nil {
			out.setInt(k, n)
		} else {
			out.set(k, v)
		}
	}
	return out
}

// stringNormalizer removes stopwords from a [C] or [1, C] string tensor
// and changes the case of what is left.
func stringNormalizer(c *call) []*hostTensor {
	x := c.h(0)
	if x.dtype != dtypeString {
		c.fail(tensor.ErrDType, "input of type %s, want strings", x.dtype)
	}
	if len(x.shape) != 1 && !(len(x.shape) == 2 && x.shape[0] == 1) {
		c.fail(tensor.ErrShape, "input %v must be [C] or [1, C]", x.shape)
	}
	sensitive := c.attrInt("is_case_sensitive", 0) != 0
	stop := map[string]bool{}
	if a := c.attr("stopwords"); a != nil {
		for _, w := range a.Strings {
			if sensitive {
				stop[string(w)] = true
			} else {
				stop[strings.ToLower(string(w))] = true
			}
		}
	}
	action := c.attrString("case_change_action", "NONE")
	var kept []string
	for _, s := range x.s {
		key := s
		if !sensitive {
			key = strings.ToLower(s)
		}
		if stop[key] {
			continue
		}
		switch action {
		case "LOWER":
			s = strings.ToLower(s)
		case "UPPER":
			s = strings.ToUpper(s)
		case "NONE":
		default:
			c.fail(tensor.ErrArgument, "case_change_action %q", action)
		}
		kept = append(kept, s)
	}
	if len(kept) == 0 {
		kept = []string{""}
	}
	shape := []int{len(kept)}
	if len(x.shape) == 2 {
		shape = []int{1, len(kept)}
	}
	return hosts(&hostTensor{dtype: dtypeString, shape: shape, s: kept})
}
