#version 460
// Matmul for Float64: products and sums in double.
#include "common.glsl"
const int DT = 1;
#define ACC double
#define LOAD(addr, e) loadD(addr, DT, e)
#define STORE(addr, e, v) storeD(addr, DT, e, v)
#include "matmul.glsl"
