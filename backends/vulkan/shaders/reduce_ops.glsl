// Combining rules shared by the reductions: float inputs accumulate in
// double, integers exactly in int64 (wrapping). Max and Min propagate NaN
// and order -0 below +0 (as Go's max and min do), which makes them
// independent of the order of combination. NaN is tested on the bits so
// that no compiler assumption about NaN can remove the test.
bool isNaND(double x) {
  uvec2 u = unpackDouble2x32(x);
  return (u.y & 0x7ff00000u) == 0x7ff00000u && ((u.y & 0xfffffu) != 0u || u.x != 0u);
}
bool signD(double x) { return (unpackDouble2x32(x).y & 0x80000000u) != 0u; }

const int OP_SUM = 0;
const int OP_PROD = 1;
const int OP_MAX = 2;
const int OP_MIN = 3;

double identityD(int op) {
  if (op == OP_PROD) return 1.0;
  if (op == OP_MAX) return packDouble2x32(uvec2(0u, 0xfff00000u)); // -Inf
  if (op == OP_MIN) return packDouble2x32(uvec2(0u, 0x7ff00000u)); // +Inf
  return 0.0;
}

int64_t identityI(int op) {
  if (op == OP_PROD) return 1l;
  if (op == OP_MAX) return int64_t(0x8000000000000000ul);
  if (op == OP_MIN) return int64_t(0x7ffffffffffffffful);
  return 0l;
}

double combineD(int op, double a, double v) {
  if (op == OP_SUM) return a + v;
  if (op == OP_PROD) return a * v;
  if (isNaND(a)) return a;
  if (isNaND(v)) return v;
  if (a == v) { // equal, or zeros of either sign
    bool pickA = op == OP_MAX ? !signD(a) : signD(a);
    return pickA ? a : v;
  }
  if (op == OP_MAX) return a > v ? a : v;
  return a < v ? a : v;
}

int64_t combineI(int op, int64_t a, int64_t v) {
  if (op == OP_SUM) return a + v;
  if (op == OP_PROD) return a * v;
  if (op == OP_MAX) return max(a, v);
  return min(a, v);
}

bool isIntDT(int dt) { return dt == DT_I64 || dt == DT_I32 || dt == DT_I16 || dt == DT_I8 || dt == DT_U8 || dt == DT_BOOL; }
