#version 460
// copy: out[i] = x[i] converted to out's dtype (Backend.Copy), both walked
// in row-major order of their common shape. Integer and Bool pairs copy
// exactly through int64; every other pair goes through double, converting
// as the CPU backend does (common.glsl).
// Spec constants: ODT, XDT.
#include "common.glsl"
layout(local_size_x = 256) in;
layout(constant_id = 0) const int ODT_S = 0;
layout(constant_id = 1) const int XDT_S = 0;
layout(constant_id = 2) const int DYN = 0; // 1: the codes below come from the arguments (one pipeline for all)
int ODT, XDT;

layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer ArgsRef {
	View out_;
	View x;
	int64_t n;
	int64_t codes[2]; // ODT, XDT when DYN
};
layout(push_constant) uniform PC { ArgsRef args; ErrRef err; } pc;

bool isIntLike(int dt) { return dt >= DT_I64; }

void main() {
	ODT = DYN != 0 ? int(pc.args.codes[0]) : ODT_S;
	XDT = DYN != 0 ? int(pc.args.codes[1]) : XDT_S;
	View o = pc.args.out_;
	View x = pc.args.x;
	int64_t n = pc.args.n;
	GRID_STRIDE(i, n) {
		int64_t xe = elemOffset(x, i);
		int64_t oe = elemOffset(o, i);
		if (isIntLike(ODT) && isIntLike(XDT)) {
			storeI(o.addr, ODT, oe, loadI(x.addr, XDT, xe));
		} else {
			storeD(o.addr, ODT, oe, loadD(x.addr, XDT, xe));
		}
	}
}
