#version 460
// where: out[i] = cond[i] ? a[i] : b[i] (Backend.Where); a, b and out share
// one dtype, cond is Bool. Values move exactly (integers through int64).
// Spec constants: DT (out, a, b), CDT (cond).
#include "common.glsl"
layout(local_size_x = 256) in;
layout(constant_id = 0) const int DT = 0;
layout(constant_id = 1) const int CDT = 7;

layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer ArgsRef {
	View out_;
	View cond;
	View a;
	View b;
	int64_t n;
};
layout(push_constant) uniform PC { ArgsRef args; ErrRef err; } pc;

void main() {
	View o = pc.args.out_;
	View c = pc.args.cond;
	View a = pc.args.a;
	View b = pc.args.b;
	int64_t n = pc.args.n;
	GRID_STRIDE(i, n) {
		bool t = loadI(c.addr, CDT, elemOffset(c, i)) != 0l;
		View s = t ? a : b;
		int64_t se = elemOffset(s, i);
		int64_t oe = elemOffset(o, i);
		if (DT >= DT_I64) {
			storeI(o.addr, DT, oe, loadI(s.addr, DT, se));
		} else {
			storeD(o.addr, DT, oe, loadD(s.addr, DT, se));
		}
	}
}
