package onnx

import (
	"bufio"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/kiln-ml/kiln/backends"
	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/tensor"
)

// TestConformance runs ONNX's own backend test suite, as Debian's
// libonnx-testdata package ships it (ONNX 1.12), on the CPU device: every
// case's model.onnx is loaded with FromProto, run on each
// test_data_set_N/input_*.pb, and every output compared with
// output_*.pb as ONNX's runner does (same element type, same shape,
// |got-want| <= atol + rtol*|want| with rtol 1e-3 and atol 1e-7, NaN
// equal to NaN). Each case passes, fails (with the first line of the
// error) or is out of scope (outOfScope gives the reason).
//
// testdata/conformance.txt lists the cases that pass: the test fails when
// one of them stops passing, and when a case passes that the list lacks.
// Regenerate the list and CONFORMANCE.md with
//
//	go test ./onnx -run '^TestConformance$' -update
var updateConformance = flag.Bool("update", false, "rewrite testdata/conformance.txt and CONFORMANCE.md from TestConformance's results")

// conformanceRoot is where libonnx-testdata installs the suite;
// KILN_ONNX_TESTDATA overrides it.
const conformanceRoot = "/usr/share/libonnx-testdata/data"

// conformanceSuites are the suite's folders, in report order.
var conformanceSuites = []string{"node", "pytorch-converted", "pytorch-operator", "simple", "real"}

const (
	// conformanceCaseLimit bounds one case's run; a case past it fails
	// (its goroutine is left to finish in the background).
	conformanceCaseLimit = 20 * time.Second
	// conformanceTotalLimit bounds the whole run: cases not started by
	// then fail as "not run".
	conformanceTotalLimit = 5 * time.Minute
	// ONNX's runner compares with numpy.testing.assert_allclose at these
	// tolerances unless a case's data.json says otherwise.
	conformanceRtol = 1e-3
	conformanceAtol = 1e-7
)

// outOfScope lists cases Kiln deliberately does not run, each with why no
// Kiln user needs it. A key is "suite/case", or "suite/prefix*" for every
// case whose name starts with prefix.
var outOfScope = map[string]string{
	// The preview training domain's optimizer steps: Kiln trains with its
	// own optimizers (train.AdamW, …) on autodiff devices; a graph that
	// updates its own weights has no use in a Kiln model.
	"node/test_adagrad*":          "ai.onnx.preview.training optimizer step: Kiln trains with its own optimizers",
	"node/test_adam*":             "ai.onnx.preview.training optimizer step: Kiln trains with its own optimizers",
	"node/test_momentum*":         "ai.onnx.preview.training optimizer step: Kiln trains with its own optimizers",
	"node/test_nesterov_momentum": "ai.onnx.preview.training optimizer step: Kiln trains with its own optimizers",
	"node/test_gradient*":         "ai.onnx.preview.training Gradient: Kiln's autodiff devices compute gradients of any loaded model",
	"simple/test_gradient*":       "ai.onnx.preview.training Gradient: Kiln's autodiff devices compute gradients of any loaded model",
	// Random operators: the expected outputs are one draw of NumPy's
	// generator, which no other generator reproduces. Kiln runs them
	// (with its own generator); the zero-ratio Dropout cases, which are
	// deterministic, stay in scope.
	"node/test_training_dropout":              "random: the expected output is one draw of NumPy's generator",
	"node/test_training_dropout_default":      "random: the expected output is one draw of NumPy's generator",
	"node/test_training_dropout_default_mask": "random: the expected output is one draw of NumPy's generator",
	"node/test_training_dropout_mask":         "random: the expected output is one draw of NumPy's generator",
	"node/test_bernoulli*":                    "random: the expected output is one draw of NumPy's generator",
	// ONNX 1.12's reference converts float to bfloat16 by truncation;
	// Kiln rounds to nearest even, as PyTorch and later ONNX releases do.
	"node/test_cast_FLOAT_to_BFLOAT16": "the reference truncates to bfloat16; Kiln rounds to nearest even (PyTorch, ONNX >= 1.13)",
	// Invalid cases: ONNX 1.12 ships input data that contradicts the
	// model's own declared input ("like" is [1], declared [3 4]); Kiln,
	// like onnxruntime, refuses inputs of another shape than a fixed
	// declared one. The FLOAT to BFLOAT16 pair also truncates (above).
	"node/test_castlike_BFLOAT16_to_FLOAT*": "invalid case: the data gives input \"like\" shape [1], the model declares [3 4]",
	"node/test_castlike_FLOAT_to_BFLOAT16*": "invalid case: the data gives input \"like\" shape [1], the model declares [3 4]; the reference also truncates to bfloat16",
}

// conformanceStatus is one case's outcome.
type conformanceStatus string

const (
	statusPass       conformanceStatus = "pass"
	statusFail       conformanceStatus = "fail"
	statusOutOfScope conformanceStatus = "out of scope"
	statusAbsent     conformanceStatus = "not shipped"
)

// conformanceResult is one case's outcome with what it exercised.
type conformanceResult struct {
	suite, name string
	status      conformanceStatus
	detail      string   // the error's first line, or the reason
	ops         []string // operator types of the main graph
	opset       int64
	elapsed     time.Duration
}

func (r *conformanceResult) key() string { return r.suite + "/" + r.name }

func conformanceDir() string {
	if d := os.Getenv("KILN_ONNX_TESTDATA"); d != "" {
		return d
	}
	return conformanceRoot
}

func TestConformance(t *testing.T) {
	root := conformanceDir()
	if _, err := os.Stat(filepath.Join(root, "node")); err != nil {
		t.Skipf("ONNX backend test data not found at %s: install Debian's libonnx-testdata (make deps does) or set KILN_ONNX_TESTDATA", root)
	}
	start := time.Now()
	var results []*conformanceResult
	for _, suite := range conformanceSuites {
		dirs, err := os.ReadDir(filepath.Join(root, suite))
		if err != nil {
			t.Fatalf("read suite %s: %v", suite, err)
		}
		for _, d := range dirs {
			if !d.IsDir() {
				continue
			}
			r := &conformanceResult{suite: suite, name: d.Name()}
			dir := filepath.Join(root, suite, d.Name())
			if time.Since(start) > conformanceTotalLimit {
				r.status, r.detail = statusFail, fmt.Sprintf("not run: the suite ran past %v", conformanceTotalLimit)
			} else {
				runConformanceCase(r, dir)
			}
			results = append(results, r)
		}
	}
	elapsed := time.Since(start)
	counts := map[conformanceStatus]int{}
	for _, r := range results {
		counts[r.status]++
	}
	t.Logf("%d cases in %v: %d pass, %d fail, %d out of scope, %d not shipped", len(results), elapsed.Round(time.Millisecond),
		counts[statusPass], counts[statusFail], counts[statusOutOfScope], counts[statusAbsent])
	slow := append([]*conformanceResult(nil), results...)
	sort.SliceStable(slow, func(i, j int) bool { return slow[i].elapsed > slow[j].elapsed })
	for _, r := range slow[:min(5, len(slow))] {
		t.Logf("slowest: %s %v (%s)", r.key(), r.elapsed.Round(time.Millisecond), r.status)
	}

	expectPath := filepath.Join("testdata", "conformance.txt")
	if *updateConformance {
		if err := writeConformance(results, expectPath, "CONFORMANCE.md"); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := readConformanceList(expectPath)
	if err != nil {
		t.Fatalf("%v (run go test ./onnx -run '^TestConformance$' -update)", err)
	}
	var newly []string
	for _, r := range results {
		if r.status == statusPass {
			if !want[r.key()] {
				newly = append(newly, r.key())
			}
			delete(want, r.key())
		} else if want[r.key()] {
			t.Errorf("%s passed before and now does not: %s: %s", r.key(), r.status, r.detail)
			delete(want, r.key())
		}
	}
	for k := range want {
		t.Errorf("%s is listed in %s but was not found in the suite", k, expectPath)
	}
	if len(newly) > 0 {
		sort.Strings(newly)
		t.Errorf("%d case(s) now pass that %s does not list (%s): regenerate it and CONFORMANCE.md with go test ./onnx -run '^TestConformance$' -update",
			len(newly), expectPath, strings.Join(newly[:min(10, len(newly))], ", "))
	}
}

// outOfScopeReason returns why key is out of scope, or "".
func outOfScopeReason(key string) string {
	if r, ok := outOfScope[key]; ok {
		return r
	}
	for k, r := range outOfScope {
		if p, ok := strings.CutSuffix(k, "*"); ok && strings.HasPrefix(key, p) {
			return r
		}
	}
	return ""
}

// runConformanceCase fills in r for the case in dir.
func runConformanceCase(r *conformanceResult, dir string) {
	modelPath := filepath.Join(dir, "model.onnx")
	mp, err := ReadFile(modelPath)
	if err != nil {
		if _, statErr := os.Stat(modelPath); os.IsNotExist(statErr) {
			r.status, r.detail = statusAbsent, "libonnx-testdata ships only the model's download URL (data.json); the tests run offline"
			return
		}
		r.status, r.detail = statusFail, firstLine(err)
		return
	}
	r.opset, _ = defaultOpset(mp)
	seen := map[string]bool{}
	for _, n := range mp.Graph.Nodes {
		op := n.OpType
		if n.Domain != "" && n.Domain != "ai.onnx" {
			op = n.Domain + "." + op
		}
		if !seen[op] {
			seen[op] = true
			r.ops = append(r.ops, op)
		}
	}
	if reason := outOfScopeReason(r.key()); reason != "" {
		r.status, r.detail = statusOutOfScope, reason
		return
	}
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		defer func() {
			if p := recover(); p != nil {
				buf := make([]byte, 4096)
				buf = buf[:runtime.Stack(buf, false)]
				done <- fmt.Errorf("panic: %v\n%s", p, buf)
			}
		}()
		done <- runConformanceModel(mp, r.key(), dir)
	}()
	select {
	case err = <-done:
	case <-time.After(conformanceCaseLimit):
		err = fmt.Errorf("ran past %v", conformanceCaseLimit)
	}
	r.elapsed = time.Since(start)
	if err != nil {
		r.status, r.detail = statusFail, firstLine(err)
		return
	}
	r.status = statusPass
}

// runConformanceModel loads mp and checks it on every test data set in dir.
func runConformanceModel(mp *ModelProto, name, dir string) error {
	sets, err := filepath.Glob(filepath.Join(dir, "test_data_set_*"))
	if err != nil {
		return err
	}
	if len(sets) == 0 {
		return fmt.Errorf("no test_data_set_* folder")
	}
	sort.Strings(sets)
	var runErr error
	tensor.Scope(func() {
		m, err := FromProto(mp, name, tensor.CPU())
		if err != nil {
			runErr = err
			return
		}
		defer nn.Release(m)
		for _, set := range sets {
			if err := runConformanceSet(m, set); err != nil {
				runErr = fmt.Errorf("%s: %w", filepath.Base(set), err)
				return
			}
		}
	})
	return runErr
}

// runConformanceSet runs m on one test_data_set_N folder. Inputs and
// outputs that are not tensors (sequences, optionals, strings) are read
// as the graph declares them and run through RunValues.
func runConformanceSet(m *Model, set string) (err error) {
	inputs := map[string]Value{}
	names := m.Inputs()
	for k := 0; ; k++ {
		p := filepath.Join(set, fmt.Sprintf("input_%d.pb", k))
		if _, statErr := os.Stat(p); statErr != nil {
			break
		}
		if k >= len(names) {
			return fmt.Errorf("input_%d.pb: the graph has %d inputs", k, len(names))
		}
		v, err := readConformanceValue(p, m.g.inputs[k].Type)
		if err != nil {
			return fmt.Errorf("input_%d.pb: %w", k, err)
		}
		if err := tensor.Try(func() { v.upload(tensor.CPU()) }); err != nil {
			return fmt.Errorf("input_%d.pb: %w", k, err)
		}
		inputs[names[k]] = toValue(v)
	}
	got, err := m.RunValues(inputs)
	if err != nil {
		return err
	}
	outs := m.Outputs()
	for k, name := range outs {
		p := filepath.Join(set, fmt.Sprintf("output_%d.pb", k))
		var typ *TypeProto
		for _, o := range m.g.proto.Graph.Outputs {
			if o.Name == name {
				typ = o.Type
			}
		}
		want, err := readConformanceValue(p, typ)
		if err != nil {
			return err
		}
		if err := compareConformanceValue(got[name], want); err != nil {
			return fmt.Errorf("output %d %q: %w", k, name, err)
		}
	}
	if _, err := os.Stat(filepath.Join(set, fmt.Sprintf("output_%d.pb", len(outs)))); err == nil {
		return fmt.Errorf("the suite has more outputs than the graph's %d", len(outs))
	}
	return nil
}

// readConformanceValue decodes a serialized TensorProto, SequenceProto or
// OptionalProto as typ says. NumPy has no bfloat16: the suite stores such
// tensors as UINT16 holding the bits.
func readConformanceValue(path string, typ *TypeProto) (*value, error) {
	if typ == nil || typ.Kind == "" || typ.Kind == "tensor" {
		tp, err := readTensorFileProto(path)
		if err != nil {
			return nil, err
		}
		if typ != nil && tp.DataType == TypeUint16 && typ.ElemType == TypeBFloat16 {
			tp.DataType = TypeBFloat16
		}
		h, err := tensorHost(tp)
		if err != nil {
			return nil, err
		}
		return &value{h: h}, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return decodeValue(b, typ, 0)
}

// compareConformanceValue compares got with want element by element.
func compareConformanceValue(got Value, want *value) error {
	switch {
	case want.none:
		if !got.None {
			return fmt.Errorf("got a value, want an empty optional")
		}
		return nil
	case got.None:
		return fmt.Errorf("got an empty optional, want a value")
	case want.isSeq:
		if !got.IsSequence {
			return fmt.Errorf("got no sequence, want a sequence of %d", len(want.seq))
		}
		if len(got.Sequence) != len(want.seq) {
			return fmt.Errorf("sequence of %d elements, want %d", len(got.Sequence), len(want.seq))
		}
		for i := range want.seq {
			if err := compareConformanceValue(got.Sequence[i], want.seq[i]); err != nil {
				return fmt.Errorf("element %d: %w", i, err)
			}
		}
		return nil
	case want.h.dtype == dtypeString:
		if got.Tensor != nil || got.IsSequence {
			return fmt.Errorf("got a numeric tensor, want strings")
		}
		if fmt.Sprint(got.Shape) != fmt.Sprint(want.h.shape) {
			return fmt.Errorf("shape %v, want %v", got.Shape, want.h.shape)
		}
		for i := range want.h.s {
			if got.Strings[i] != want.h.s[i] {
				return fmt.Errorf("[%d] = %q, want %q", i, got.Strings[i], want.h.s[i])
			}
		}
		return nil
	}
	if got.Tensor == nil {
		return fmt.Errorf("not computed as a tensor")
	}
	return compareConformanceHost(got.Tensor, want.h)
}

// readTensorFileProto decodes a serialized TensorProto.
func readTensorFileProto(path string) (*TensorProto, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	d := &decoder{path: []string{filepath.Base(path)}}
	t, err := d.tensor(b)
	if err != nil {
		return nil, err
	}
	return t, nil
}

// compareConformanceHost checks got against wh as ONNX's runner does.
func compareConformanceHost(got *tensor.Tensor, wh *hostTensor) error {
	if got.DType() == tensor.BFloat16 && wh.dtype == tensor.Int32 {
		// A bfloat16 output the suite stores as UINT16 bits.
		w := newHost(tensor.BFloat16, wh.shape)
		for k := range wh.size() {
			w.f[k] = float64(backends.BFloat16ToFloat32(uint16(wh.i[k])))
		}
		wh = w
	}
	if got.DType() != wh.dtype {
		return fmt.Errorf("element type %s, want %s", got.DType(), wh.dtype)
	}
	gh := hostOf(got)
	if fmt.Sprint(gh.shape) != fmt.Sprint(wh.shape) {
		return fmt.Errorf("shape %v, want %v", gh.shape, wh.shape)
	}
	bad, worst := 0, -1
	worstErr := 0.0
	for k := range wh.size() {
		g, w := gh.at(k), wh.at(k)
		if wh.i != nil && gh.i != nil {
			if gh.i[k] != wh.i[k] {
				bad++
				if worst < 0 {
					worst = k
				}
			}
			continue
		}
		if math.IsNaN(w) && math.IsNaN(g) || g == w {
			continue
		}
		d := math.Abs(g - w)
		if !(d <= conformanceAtol+conformanceRtol*math.Abs(w)) {
			bad++
			if e := d / (conformanceAtol + conformanceRtol*math.Abs(w)); worst < 0 || e > worstErr || math.IsNaN(e) {
				worst, worstErr = k, e
			}
		}
	}
	if bad > 0 {
		return fmt.Errorf("%d of %d values differ, e.g. [%d] = %v, want %v", bad, wh.size(), worst, gh.at(worst), wh.at(worst))
	}
	return nil
}

// firstLine returns err's message up to its first newline, without the
// file path Load puts first, shortened to 300 bytes.
func firstLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

func readConformanceList(path string) (map[string]bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		out[line] = true
	}
	return out, sc.Err()
}

// writeConformance writes the pass list and the report.
func writeConformance(results []*conformanceResult, listPath, mdPath string) error {
	var list strings.Builder
	list.WriteString("# Cases of ONNX's backend test suite (libonnx-testdata) that pass on the CPU device.\n")
	list.WriteString("# TestConformance fails when one stops passing. Regenerate: go test ./onnx -run '^TestConformance$' -update\n")
	for _, r := range results {
		if r.status == statusPass {
			list.WriteString(r.key() + "\n")
		}
	}
	if err := os.WriteFile(listPath, []byte(list.String()), 0o644); err != nil {
		return err
	}

	type tally struct{ pass, fail, out, total int }
	add := func(t *tally, r *conformanceResult) {
		t.total++
		switch r.status {
		case statusPass:
			t.pass++
		case statusFail:
			t.fail++
		case statusOutOfScope:
			t.out++
		}
	}
	pct := func(t tally) string {
		if t.total-t.out == 0 {
			return "–"
		}
		return fmt.Sprintf("%.1f%%", 100*float64(t.pass)/float64(t.total-t.out))
	}
	var b strings.Builder
	b.WriteString("# ONNX backend test suite: conformance\n\n")
	b.WriteString("Generated by `go test ./onnx -run '^TestConformance$' -update` (conformance_test.go); do not edit.\n\n")
	b.WriteString("ONNX's own backend test data (ONNX 1.12, Debian's `libonnx-testdata`, in /usr/share/libonnx-testdata/data) run on\n")
	b.WriteString("Kiln's CPU device. Each case's model.onnx is loaded with `FromProto` and run on every test_data_set_N;\n")
	b.WriteString("every output must have the expected element type and shape and match within ONNX's runner tolerances\n")
	fmt.Fprintf(&b, "(|got − want| ≤ %g + %g·|want|, NaN equal to NaN). Pass rates leave out-of-scope cases out.\n", conformanceAtol, conformanceRtol)
	b.WriteString("A case that passes is listed in testdata/conformance.txt; TestConformance fails when one stops passing.\n\n")

	b.WriteString("## Per suite folder\n\n| folder | cases | pass | fail | out of scope | not shipped | pass rate |\n|---|---:|---:|---:|---:|---:|---:|\n")
	for _, suite := range conformanceSuites {
		var t tally
		absent := 0
		for _, r := range results {
			if r.suite != suite {
				continue
			}
			if r.status == statusAbsent {
				absent++
				continue
			}
			add(&t, r)
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %d | %s |\n", suite, t.total+absent, t.pass, t.fail, t.out, absent, pct(t))
	}

	b.WriteString("\n## Per operator\n\nEvery case that uses the operator, in any folder (a case counts once per operator it uses).\n\n")
	b.WriteString("| operator | cases | pass | fail | out of scope | pass rate |\n|---|---:|---:|---:|---:|---:|\n")
	byOp := map[string]*tally{}
	for _, r := range results {
		for _, op := range r.ops {
			if byOp[op] == nil {
				byOp[op] = &tally{}
			}
			add(byOp[op], r)
		}
	}
	opNames := make([]string, 0, len(byOp))
	for op := range byOp {
		opNames = append(opNames, op)
	}
	sort.Strings(opNames)
	for _, op := range opNames {
		t := *byOp[op]
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %s |\n", op, t.total, t.pass, t.fail, t.out, pct(t))
	}

	b.WriteString("\n## Out of scope\n\n| cases | why |\n|---|---|\n")
	keys := make([]string, 0, len(outOfScope))
	for k := range outOfScope {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "| `%s` | %s |\n", k, outOfScope[k])
	}

	b.WriteString("\n## Per case\n\n| case | opset | operators | result | detail |\n|---|---:|---|---|---|\n")
	for _, r := range results {
		detail := strings.ReplaceAll(r.detail, "|", "\\|")
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %s |\n", r.key(), r.opset, strings.Join(r.ops, " "), r.status, detail)
	}
	return os.WriteFile(mdPath, []byte(b.String()), 0o644)
}
