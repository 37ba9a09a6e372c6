#version 460
// fill: out[i] = v for every element of the view out (Backend.Fill).
// Spec constants: DT, out's dtype.
#include "common.glsl"
layout(local_size_x = 256) in;
layout(constant_id = 0) const int DT = 0;

layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer ArgsRef {
	View out_;
	int64_t n;
	double v;
};
layout(push_constant) uniform PC { ArgsRef args; ErrRef err; } pc;

void main() {
	View o = pc.args.out_;
	int64_t n = pc.args.n;
	double v = pc.args.v;
	GRID_STRIDE(i, n) {
		storeD(o.addr, DT, elemOffset(o, i), v);
	}
}
