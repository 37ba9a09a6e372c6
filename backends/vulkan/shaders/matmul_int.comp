#version 460
// Matmul for integer dtypes (constant_id 0 = dtype): exact int64 products
// and sums, wrapped to the output dtype.
#include "common.glsl"
layout(constant_id = 0) const int DT = 4;
#define ACC int64_t
#define LOAD(addr, e) loadI(addr, DT, e)
#define STORE(addr, e, v) storeI(addr, DT, e, v)
#include "matmul.glsl"
