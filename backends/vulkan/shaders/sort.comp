#version 460
// Sort: each line of x along axis sorted stably into values and Int64
// indices, ascending (constant_id 1 = 0) or descending (1), NaN ordered
// above every number, keys compared as double, as on the CPU. One thread per
// line sorts the line's indices, then gathers the values from x exactly.
// constant_id 2 selects the sort: 0, a stable insertion sort in indices
// itself (short lines); 1, a stable bottom-up merge sort (runs of 16 sorted
// by insertion first) that ping-pongs between indices and a scratch buffer
// of n Int64 per line, O(n log n) for long lines. constant_id 0 is the dtype.
#include "common.glsl"
#include "reduce_ops.glsl"
layout(constant_id = 0) const int DT = 0;
layout(constant_id = 1) const int DESC = 0;
layout(constant_id = 2) const int MERGE = 0;
layout(local_size_x = 256) in;

layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer ArgsRef {
  View vals; View idx; View x;  // each with the line axis of size 1
  int64_t n; int64_t vst; int64_t ist; int64_t xst; int64_t lines;
  uint64_t scratch;             // MERGE: lines·n Int64, line l at l·n
};
layout(push_constant) uniform PC { ArgsRef args; ErrRef err; } pc;

// less orders NaN after every number.
bool less(double a, double b) {
  if (isNaND(a)) return false;
  return isNaND(b) || a < b;
}

// before reports whether key a must come before key b (strictly).
bool before(double a, double b) { return DESC == 0 ? less(a, b) : less(b, a); }

// The two index arrays of a line: 0 is the indices output (base ib, stride
// ist), 1 the scratch (base sb, stride 1).
int64_t ib, sb, xb;

int64_t getIdx(ArgsRef g, int which, int64_t k) {
  return which == 0 ? loadI(g.idx.addr, DT_I64, ib + k * g.ist) : loadI(g.scratch, DT_I64, sb + k);
}
void setIdx(ArgsRef g, int which, int64_t k, int64_t v) {
  if (which == 0) storeI(g.idx.addr, DT_I64, ib + k * g.ist, v);
  else storeI(g.scratch, DT_I64, sb + k, v);
}
double key(ArgsRef g, int64_t p) { return loadD(g.x.addr, DT, xb + p * g.xst); }

// insertion sorts positions [lo, hi) of array 0 stably, filling them with
// lo, lo+1, … first.
void insertion(ArgsRef g, int64_t lo, int64_t hi) {
  for (int64_t j = lo; j < hi; j++) {
    double v = key(g, j);
    int64_t k = j;
    while (k > lo) {
      int64_t pi = getIdx(g, 0, k - 1);
      if (!before(v, key(g, pi))) break;
      setIdx(g, 0, k, pi);
      k--;
    }
    setIdx(g, 0, k, j);
  }
}

void main() {
  ArgsRef g = pc.args;
  int64_t n = g.n;
  for (int64_t l = int64_t(gl_GlobalInvocationID.x); l < g.lines; l += int64_t(gl_NumWorkGroups.x) * 256) {
    int64_t vb = elemOffset(g.vals, l);
    ib = elemOffset(g.idx, l);
    xb = elemOffset(g.x, l);
    sb = l * n;
    int src = 0;
    if (MERGE == 0) {
      insertion(g, 0, n);
    } else {
      const int64_t RUN = 16;
      for (int64_t lo = 0; lo < n; lo += RUN) insertion(g, lo, min(lo + RUN, n));
      for (int64_t width = RUN; width < n; width *= 2) {
        int dst = 1 - src;
        for (int64_t lo = 0; lo < n; lo += 2 * width) {
          int64_t mid = min(lo + width, n), hi = min(lo + 2 * width, n);
          int64_t i = lo, j = mid, o = lo;
          while (i < mid && j < hi) {
            int64_t a = getIdx(g, src, i), b = getIdx(g, src, j);
            if (before(key(g, b), key(g, a))) { setIdx(g, dst, o++, b); j++; }  // ties take the left run: stable
            else { setIdx(g, dst, o++, a); i++; }
          }
          for (; i < mid; i++) setIdx(g, dst, o++, getIdx(g, src, i));
          for (; j < hi; j++) setIdx(g, dst, o++, getIdx(g, src, j));
        }
        src = dst;
      }
    }
    for (int64_t j = 0; j < n; j++) {
      int64_t p = getIdx(g, src, j);
      if (src == 1) setIdx(g, 0, j, p);
      if (isIntDT(DT)) storeI(g.vals.addr, DT, vb + j * g.vst, loadI(g.x.addr, DT, xb + p * g.xst));
      else storeD(g.vals.addr, DT, vb + j * g.vst, loadD(g.x.addr, DT, xb + p * g.xst));
    }
  }
}
