//go:build !kiln_novulkan && !js && !wasip1

package vulkan

import (
	"slices"

	"github.com/kiln-ml/kiln/backends"
)

// gemmTile is the edge of the output tile one workgroup of the GEMM
// shaders computes (shaders/matmul.glsl: 16×16 threads, 4×4 each).
const gemmTile = 64

// Matmul implements backends.Backend with the tiled GEMM of
// shaders/matmul.glsl: 64×64 output tiles through shared memory, batch in
// the third grid dimension, every operand read through its strides (a
// transposed or broadcast operand is never copied). On a device that
// reports subgroup shuffles in compute shaders, Float32, Float16 and
// BFloat16 products use shaders/matmul_subgroup.comp instead (8×subgroup
// tiles, A's values passed between invocations by subgroupShuffle). Float32, Float16 and
// BFloat16 multiply and sum in float32 and round once to the output;
// Float64 works in double; integer dtypes in exact int64 (wrapping). Each
// output sums its products in k order, so results never depend on the
// device's workgroup scheduling.
func (b *Backend) Matmul(out, x, y backends.View) {
	const op = "matmul"
	if b.hostWithoutDoubles(op, vs(out), vs(x, y), func(c backends.Backend, o, i []backends.View) { c.Matmul(o[0], i[0], i[1]) }) {
		return
	}
	r := len(out.Shape)
	if r < 2 || len(x.Shape) != r || len(y.Shape) != r {
		b.refuse(op, "shapes %v · %v into %v: want equal ranks of at least 2", x.Shape, y.Shape, out.Shape)
		return
	}
	m, n, k := out.Shape[r-2], out.Shape[r-1], x.Shape[r-1]
	if x.Shape[r-2] != m || y.Shape[r-2] != k || y.Shape[r-1] != n ||
		!slices.Equal(x.Shape[:r-2], out.Shape[:r-2]) || !slices.Equal(y.Shape[:r-2], out.Shape[:r-2]) {
		b.refuse(op, "shapes %v · %v into %v do not match", x.Shape, y.Shape, out.Shape)
		return
	}
	if x.DType != out.DType || y.DType != out.DType {
		b.refuse(op, "dtypes %s · %s into %s: want one dtype", x.DType, y.DType, out.DType)
		return
	}
	if !b.checkRank(op, out, x, y) || !b.ok(op, out, x, y) {
		return
	}
	if out.NumElements() == 0 {
		return
	}
	if k == 0 {
		b.Fill(out, 0)
		return
	}
	batch := out.NumElements() / (m * n)
	w := new(argWriter)
	w.view(out)
	w.view(x)
	w.view(y)
	w.i64(int64(m))
	w.i64(int64(n))
	w.i64(int64(k))
	w.i64(int64(batch))
	if size := int(b.pd.subgroup.size); b.subgroupGEMM.Load() && f32Like(out.DType) {
		// One 8×size tile per subgroup, 128/size subgroups per workgroup;
		// the shader's grid-stride loop covers any other subgroup size.
		tiles := (m + 7) / 8 * ((n + size - 1) / size) * batch
		groups := (tiles + 128/size - 1) / (128 / size)
		b.launch("matmul_subgroup", []int32{int32(out.DType)}, w, [3]uint32{uint32(min(groups, 65535)), 1, 1})
		return
	}
	name, spec := "matmul", []int32{int32(out.DType)}
	switch {
	case out.DType == backends.Float64:
		name, spec = "matmul_f64", nil
	case isIntLike(out.DType):
		name = "matmul_int"
	}
	b.launch(name, spec, w, [3]uint32{uint32(min((n+gemmTile-1)/gemmTile, 65535)),
		uint32(min((m+gemmTile-1)/gemmTile, 65535)), uint32(min(batch, 65535))})
}
