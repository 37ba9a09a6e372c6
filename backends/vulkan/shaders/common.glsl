// common.glsl: the shared ABI of Kiln's Vulkan shaders (see the package doc
// and the Go side in stream.go). Every shader's push constants are
//     layout(push_constant) uniform PC { ArgsRef args; ErrRef err; } pc;
// where ArgsRef is the shader's own argument block (8-byte words written by
// the Go argWriter) and ErrRef the device's error word.
//
// Element access goes through one buffer reference per element width, so
// 8- and 16-bit elements are loaded and stored individually (no
// read-modify-write of 32-bit words: neighbouring invocations never race).
// Conversions follow the CPU backend exactly: floats widen exactly; stores
// to float round to nearest even (halves through float32); float-to-integer
// stores truncate toward zero and saturate to int64 (NaN gives 0), then wrap
// to narrower integers; Bool loads as 0 or 1 and stores v != 0 (NaN true).
#ifndef KILN_COMMON_GLSL
#define KILN_COMMON_GLSL

#extension GL_EXT_buffer_reference : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#extension GL_EXT_shader_explicit_arithmetic_types_float64 : require
#extension GL_EXT_shader_8bit_storage : require
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_int8 : require
#extension GL_EXT_shader_explicit_arithmetic_types_int16 : require

// DType codes: backends.DType's numeric values.
const int DT_F32 = 0;
const int DT_F64 = 1;
const int DT_F16 = 2;
const int DT_BF16 = 3;
const int DT_I64 = 4;
const int DT_I32 = 5;
const int DT_U8 = 6;
const int DT_BOOL = 7;
const int DT_I8 = 8;
const int DT_I16 = 9;

// Error codes of the error word.
const uint ERR_INDEX = 1u;      // index out of range; detail = the index
const uint ERR_DIV_ZERO = 2u;   // integer division by zero

struct View {
	uint64_t addr;   // device address of element 0 of the buffer
	int64_t offset;  // elements
	int64_t rank;
	int64_t shape[8];
	int64_t strides[8];
};

layout(buffer_reference, std430, buffer_reference_align = 8) buffer ErrRef {
	uint code;
	uint pad;
	int64_t detail;
};

// reportError records the first error of a batch: later ones are dropped.
void reportError(ErrRef e, uint code, int64_t detail) {
	if (atomicCompSwap(e.code, 0u, code) == 0u) {
		e.detail = detail;
	}
}

layout(buffer_reference, std430, buffer_reference_align = 1) buffer Ref8 { uint8_t v; };
layout(buffer_reference, std430, buffer_reference_align = 2) buffer Ref16 { uint16_t v; };
layout(buffer_reference, std430, buffer_reference_align = 4) buffer Ref32 { uint v; };
layout(buffer_reference, std430, buffer_reference_align = 4) buffer RefF32 { float v; };
layout(buffer_reference, std430, buffer_reference_align = 8) buffer RefF64 { double v; };
layout(buffer_reference, std430, buffer_reference_align = 8) buffer RefI64 { int64_t v; };

// dtypeSize returns the bytes of one element of dt.
int dtypeSize(int dt) {
	switch (dt) {
	case DT_F64: case DT_I64: return 8;
	case DT_F32: case DT_I32: return 4;
	case DT_F16: case DT_BF16: case DT_I16: return 2;
	}
	return 1;
}

uint64_t elemAddr(uint64_t addr, int dt, int64_t e) { return addr + uint64_t(e) * uint64_t(dtypeSize(dt)); }

// elemOffset returns the element offset of the linear-th element (row-major
// over v.shape) of v.
int64_t elemOffset(View v, int64_t linear) {
	int64_t off = v.offset;
	for (int k = int(v.rank) - 1; k >= 0; k--) {
		int64_t s = v.shape[k];
		int64_t q = linear / s;
		off += (linear - q * s) * v.strides[k];
		linear = q;
	}
	return off;
}

// halfToFloat converts IEEE binary16 bits to float exactly.
float halfToFloat(uint h) {
	uint sign = (h & 0x8000u) << 16;
	uint ex = (h >> 10) & 0x1fu;
	uint mant = h & 0x3ffu;
	if (ex == 0x1fu) return uintBitsToFloat(sign | 0x7f800000u | (mant << 13));
	if (ex == 0u) {
		if (mant == 0u) return uintBitsToFloat(sign);
		uint e = 113u;
		while ((mant & 0x400u) == 0u) { mant <<= 1; e--; }
		mant &= 0x3ffu;
		return uintBitsToFloat(sign | (e << 23) | (mant << 13));
	}
	return uintBitsToFloat(sign | ((ex + 112u) << 23) | (mant << 13));
}

// floatToHalf converts f to binary16 bits, rounding to nearest even.
uint floatToHalf(float f) {
	uint b = floatBitsToUint(f);
	uint sign = (b >> 16) & 0x8000u;
	int ex = int((b >> 23) & 0xffu);
	uint mant = b & 0x7fffffu;
	if (ex == 0xff) return mant != 0u ? (sign | 0x7e00u) : (sign | 0x7c00u);
	if (ex > 142) return sign | 0x7c00u;
	if (ex < 102) return sign;
	if (ex < 113) {
		mant |= 0x800000u;
		uint shift = uint(126 - ex);
		uint hf = mant >> shift;
		uint rem = mant & ((1u << shift) - 1u);
		uint mid = 1u << (shift - 1u);
		if (rem > mid || (rem == mid && (hf & 1u) == 1u)) hf++;
		return sign | hf;
	}
	uint h = (uint(ex - 112) << 10) | (mant >> 13);
	uint rem = mant & 0x1fffu;
	if (rem > 0x1000u || (rem == 0x1000u && (h & 1u) == 1u)) h++;
	return sign | h;
}

float bf16ToFloat(uint h) { return uintBitsToFloat(h << 16); }

uint floatToBF16(float f) {
	uint b = floatBitsToUint(f);
	if ((b & 0x7f800000u) == 0x7f800000u && (b & 0x7fffffu) != 0u) return (b >> 16) | 0x40u;
	b += 0x7fffu + ((b >> 16) & 1u);
	return b >> 16;
}

// toInt64 truncates toward zero and saturates; NaN gives 0.
int64_t toInt64(double v) {
	if (isnan(v)) return 0l;
	if (v >= 9.223372036854775807e18lf) return 0x7fffffffffffffffl;
	if (v <= -9.223372036854775808e18lf) return -0x7fffffffffffffffl - 1l;
	return int64_t(v);
}

// loadInt returns an integer or Bool element at address a.
int64_t loadInt(uint64_t a, int dt) {
	switch (dt) {
	case DT_I64: return RefI64(a).v;
	case DT_I32: return int64_t(int(Ref32(a).v));
	case DT_I16: return int64_t((int(uint(Ref16(a).v)) << 16) >> 16);
	case DT_I8: return int64_t((int(uint(Ref8(a).v)) << 24) >> 24);
	case DT_U8: return int64_t(uint(Ref8(a).v));
	}
	return Ref8(a).v != uint8_t(0) ? 1l : 0l; // DT_BOOL
}

// loadD returns element e of a buffer of dtype dt as a double.
double loadD(uint64_t addr, int dt, int64_t e) {
	uint64_t a = elemAddr(addr, dt, e);
	switch (dt) {
	case DT_F32: return double(RefF32(a).v);
	case DT_F64: return RefF64(a).v;
	case DT_F16: return double(halfToFloat(uint(Ref16(a).v)));
	case DT_BF16: return double(bf16ToFloat(uint(Ref16(a).v)));
	}
	return double(loadInt(a, dt));
}

// loadF returns element e as a float (float64 rounded to nearest).
float loadF(uint64_t addr, int dt, int64_t e) {
	uint64_t a = elemAddr(addr, dt, e);
	switch (dt) {
	case DT_F32: return RefF32(a).v;
	case DT_F16: return halfToFloat(uint(Ref16(a).v));
	case DT_BF16: return bf16ToFloat(uint(Ref16(a).v));
	case DT_F64: return float(RefF64(a).v);
	}
	return float(double(loadInt(a, dt)));
}

// loadI returns element e as an int64 (floats truncated toward zero).
int64_t loadI(uint64_t addr, int dt, int64_t e) {
	switch (dt) {
	case DT_F32: case DT_F64: case DT_F16: case DT_BF16: return toInt64(loadD(addr, dt, e));
	}
	return loadInt(elemAddr(addr, dt, e), dt);
}

// storeI writes v into element e, wrapping to narrower integers.
void storeI(uint64_t addr, int dt, int64_t e, int64_t v) {
	uint64_t a = elemAddr(addr, dt, e);
	switch (dt) {
	case DT_I64: RefI64(a).v = v; return;
	case DT_I32: Ref32(a).v = uint(v); return;
	case DT_I16: Ref16(a).v = uint16_t(uint(v) & 0xffffu); return;
	case DT_I8: case DT_U8: Ref8(a).v = uint8_t(uint(v) & 0xffu); return;
	case DT_BOOL: Ref8(a).v = uint8_t(v != 0l ? 1u : 0u); return;
	case DT_F64: RefF64(a).v = double(v); return;
	case DT_F32: RefF32(a).v = float(double(v)); return;
	case DT_F16: Ref16(a).v = uint16_t(floatToHalf(float(double(v)))); return;
	case DT_BF16: Ref16(a).v = uint16_t(floatToBF16(float(double(v)))); return;
	}
}

// storeD writes v into element e, converting as the CPU backend does.
void storeD(uint64_t addr, int dt, int64_t e, double v) {
	uint64_t a = elemAddr(addr, dt, e);
	switch (dt) {
	case DT_F64: RefF64(a).v = v; return;
	case DT_F32: RefF32(a).v = float(v); return;
	case DT_F16: Ref16(a).v = uint16_t(floatToHalf(float(v))); return;
	case DT_BF16: Ref16(a).v = uint16_t(floatToBF16(float(v))); return;
	case DT_BOOL: Ref8(a).v = uint8_t((v != 0.0lf || isnan(v)) ? 1u : 0u); return;
	}
	storeI(addr, dt, e, toInt64(v));
}

// storeF writes v into element e.
void storeF(uint64_t addr, int dt, int64_t e, float v) {
	uint64_t a = elemAddr(addr, dt, e);
	switch (dt) {
	case DT_F32: RefF32(a).v = v; return;
	case DT_F16: Ref16(a).v = uint16_t(floatToHalf(v)); return;
	case DT_BF16: Ref16(a).v = uint16_t(floatToBF16(v)); return;
	}
	storeD(addr, dt, e, double(v));
}

// GRID_STRIDE loops i over [0, n) in a 256-wide grid-stride loop.
#define GRID_STRIDE(i, n) for (int64_t i = int64_t(gl_GlobalInvocationID.x); i < (n); i += int64_t(gl_NumWorkGroups.x) * 256l)

#endif
