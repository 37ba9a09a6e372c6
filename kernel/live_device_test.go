package kernel_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/kiln-ml/kiln/backends"
	"github.com/kiln-ml/kiln/backends/cpu"
	"github.com/kiln-ml/kiln/backends/remote"
	"github.com/kiln-ml/kiln/kernel"
	"github.com/kiln-ml/kiln/kernel/display"
	"github.com/kiln-ml/kiln/tensor"
)

// deviceTrainCell is trainCell on the device the notebook's %device chose
// (tensor.DefaultDevice), with the model's parameters seeded on it, so
// that the same cell gives the same losses on every device.
func deviceTrainCell(dir string) string {
	return fmt.Sprintf(`
dev, err := tensor.DefaultDevice()
if err != nil {
	panic(err)
}
dev.Seed(7)
rng := rand.New(rand.NewSource(1))
items := make([]data.Item, 0, 120)
for i := 0; i < 120; i++ {
	c := i %% 3
	x := make([]float32, 4)
	for j := range x {
		x[j] = float32(rng.NormFloat64()) + float32(2*c)
	}
	items = append(items, data.Item{X: x, Label: int64(c)})
}
ld, err := data.NewLoader(data.NewInMemory(items), data.LoaderConfig{BatchSize: 6, Device: dev})
if err != nil {
	panic(err)
}
model := nn.NewLinear(dev.Autodiff(), 4, 3)
sup := &train.Supervised{Config: train.Config{Epochs: 2, LogEvery: 1, RunDir: %q}, Train: ld}
res, err := sup.Fit(ctx, &train.Learner{Model: model, Optimizer: optim.NewSGD(optim.SGDConfig{LR: 0.05})})
if err != nil {
	panic(err)
}
fmt.Println("steps", res.Steps, res.Reason, "on", dev)
`, dir)
}

// startRemote serves a private CPU backend for `remote://` devices until
// the test ends and returns its address; the kernel finds it through
// KILN_REMOTE and KILN_REMOTE_TOKEN, as a user's would.
func startRemote(t *testing.T) string {
	t.Helper()
	const token = "notebook-token"
	local := cpu.New(0)
	srv, err := remote.NewServer(remote.ServerConfig{Token: token, Open: func(kind string, index int) (backends.Backend, error) {
		if kind != "cpu" || index != 0 {
			return nil, fmt.Errorf("no device %s:%d here", kind, index)
		}
		return local, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(l)
	t.Cleanup(srv.Stop)
	t.Setenv(remote.EnvToken, token)
	return l.Addr().String()
}

// deviceListing returns the notebook's `%device --json` table, decoded and
// as the JSON it came as.
func deviceListing(t *testing.T, s *kernel.Session) ([]kernel.DeviceInfo, []byte) {
	t.Helper()
	res, err := s.Execute(context.Background(), "%device --json", nil)
	if err != nil {
		t.Fatal(describe(err))
	}
	raw, _ := json.Marshal(res.Data[display.MIMETypeJSON])
	var list []kernel.DeviceInfo
	if err := json.Unmarshal(raw, &list); err != nil {
		t.Fatalf("%%device --json: %v in %s", err, raw)
	}
	return list, raw
}

// TestNotebookTrainsOnRemoteDevice lists a `kiln serve` device in the
// device table the workbench's picker shows (beside an unreachable one,
// listed with its reason), selects it with %device, trains in a cell with
// the live dashboard, and checks that every step's loss is the CPU's.
func TestNotebookTrainsOnRemoteDevice(t *testing.T) {
	addr := startRemote(t)
	url := "remote://" + addr + "/cpu:0"
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadURL := "remote://" + dead.Addr().String() + "/cpu:0"
	dead.Close() // nothing listens there now
	t.Setenv(remote.EnvRemotes, url+", "+deadURL)

	s := newSession(t, kernel.Options{})
	list, _ := deviceListing(t, s)
	byName := map[string]kernel.DeviceInfo{}
	for _, d := range list {
		byName[d.Name] = d
	}
	if d, ok := byName[url]; !ok || !d.Remote || d.Error != "" || d.Model == "" || !strings.Contains(d.Detail, addr) {
		t.Fatalf("served device listed as %+v (ok %v), want it available with the server's model and address", d, ok)
	}
	if d, ok := byName[deadURL]; !ok || d.Error == "" {
		t.Fatalf("unreachable device listed as %+v (ok %v), want it with the reason", d, ok)
	}

	onRemote := trainOnDevice(t, s, url)
	if _, raw := deviceListing(t, s); !strings.Contains(string(raw), fmt.Sprintf(`"name":%q,"kind":"remote"`, url)) ||
		!regexp.MustCompile(`"name":"`+regexp.QuoteMeta(url)+`"[^}]*"default":true`).Match(raw) {
		t.Fatalf("after %%device %s the table is %s, want it the default", url, raw)
	}
	onCPU := trainOnDevice(t, s, "cpu")
	for i := range onCPU {
		if math.Abs(onRemote[i][1]-onCPU[i][1]) > 1e-6*max(1, math.Abs(onCPU[i][1])) {
			t.Fatalf("step %d: loss %v on %s, %v on the cpu", i, onRemote[i][1], url, onCPU[i][1])
		}
	}
	if onCPU[len(onCPU)-1][1] >= onCPU[0][1] {
		t.Fatalf("loss did not fall: %v", onCPU)
	}
}

// trainOnDevice selects device with %device in s, runs deviceTrainCell
// there and returns the loss of each of its 40 steps, after checking that
// the cell said where it ran and that its live dashboard showed every
// step.
func trainOnDevice(t *testing.T, s *kernel.Session, device string) [][2]float64 {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "run")
	rec := &recorder{}
	for _, c := range []string{"%device " + device, deviceTrainCell(dir)} {
		if _, err := s.Execute(context.Background(), c, rec); err != nil {
			t.Fatalf("on %s: %v", device, describe(err))
		}
	}
	out, _ := rec.out()
	if !strings.Contains(out, "steps 40 ") || !strings.Contains(out, "on "+device) {
		t.Fatalf("on %s the cell printed %q", device, out)
	}
	msgs := dashboardMessages(t, rec)
	logged, _ := stepLosses(t, dir)
	if got := lossSeries(t, msgs[len(msgs)-1]); len(got) != len(logged) {
		t.Fatalf("on %s the dashboard's last render holds %d steps, the log %d", device, len(got), len(logged))
	}
	if len(logged) != 40 {
		t.Fatalf("on %s: %d steps logged, want 40", device, len(logged))
	}
	return logged
}

// TestNotebookTrainsOnVulkan lists the Vulkan device in the notebook's
// device table (lavapipe, the software device these machines have, marked
// as such and not the default), selects it with %device, trains in a cell
// with the live dashboard, and checks every step's loss against the CPU's.
func TestNotebookTrainsOnVulkan(t *testing.T) {
	if _, err := tensor.Vulkan(0); err != nil {
		t.Skipf("no Vulkan device: %v", err)
	}
	s := newSession(t, kernel.Options{})
	list, raw := deviceListing(t, s)
	var vk *kernel.DeviceInfo
	for i := range list {
		if list[i].Name == "vulkan:0" {
			vk = &list[i]
		}
	}
	if vk == nil || vk.Kind != "vulkan" || vk.Model == "" || vk.Vendor == "" {
		t.Fatalf("vulkan:0 listed as %+v in %s", vk, raw)
	}
	if vk.Software && (vk.Default || vk.NotDefault == "") {
		t.Fatalf("software device %+v: want it listed as not the default, with the reason", vk)
	}
	onVulkan := trainOnDevice(t, s, "vulkan:0")
	onCPU := trainOnDevice(t, s, "cpu")
	for i := range onCPU {
		if math.Abs(onVulkan[i][1]-onCPU[i][1]) > 1e-4*max(1, math.Abs(onCPU[i][1])) {
			t.Fatalf("step %d: loss %v on vulkan:0, %v on the cpu", i, onVulkan[i][1], onCPU[i][1])
		}
	}
}
