#version 460
// Matmul for Float32, Float16 and BFloat16 (constant_id 0 = dtype):
// products and sums in float32, rounded once to the output dtype.
#include "common.glsl"
layout(constant_id = 0) const int DT = 0;
#define ACC float
#define LOAD(addr, e) loadF(addr, DT, e)
#define STORE(addr, e, v) storeF(addr, DT, e, v)
#include "matmul.glsl"
