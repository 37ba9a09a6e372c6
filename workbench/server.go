package workbench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"sort"
	"sync"

	"github.com/kiln-ml/kiln/train"
)

// Config configures a Server.
type Config struct {
	// Root is the directory notebooks are listed, opened and saved in;
	// paths outside it are refused. Default: the working directory.
	Root string
	// RunDirs are directories whose subdirectories holding an events.jsonl
	// are followed as training runs (a directory that is itself a run is
	// followed too). Default: Root/runs. Every run in the per-user run
	// registry (train.RegisteredRuns: every Fit and Resume with a RunDir,
	// from any process) is followed as well, wherever it lies, unless
	// $KILN_RUN_REGISTRY is "off".
	RunDirs []string
	// Kiln is the `kiln` binary that runs kernels (`kiln kernel run -f
	// CONNECTION_FILE`). Required unless Existing is set.
	Kiln string
	// Existing is the connection file of a running kernel to attach to
	// instead of starting one; such a kernel is not restarted when it dies.
	Existing string
	// KernelEnv adds "KEY=value" entries to the kernel's environment.
	KernelEnv []string
	// Token, when set, is required on every HTTP and WebSocket request of
	// Handler (as ?token=, an "Authorization: token T" header or the
	// kiln_token cookie).
	Token string
	// AllowedHosts are the Host header values Handler accepts on API and
	// WebSocket requests besides the loopback names (localhost,
	// *.localhost, 127.0.0.0/8, ::1) and the IP address a connection
	// arrived on: "name" accepts any port, "name:port" that port only.
	// Name here what browsers will call a workbench served beyond the
	// loopback interface (its DNS name, a proxy's name); every other
	// Host is refused with 403, which is what stops DNS rebinding. Default:
	// none.
	AllowedHosts []string
	// Assets is the user interface served at "/" by Handler (package
	// frontend's Assets()); nil serves none.
	Assets fs.FS
}

// Publisher receives the Server's live updates: a topic ("kernel.status",
// "cell.output", "cell.done", "run.update", "runs.changed",
// "notebook.saved") and its JSON-serialisable data. Publish must not block
// for long; it is called from the Server's goroutines.
type Publisher interface {
	Publish(topic string, data any)
}

// ErrUnknownMethod is the error of Call for a method the Server does not
// have; the error's text names the method.
var ErrUnknownMethod = errors.New("workbench: unknown method")

// Server is the workbench engine. Create it with New; it is safe for
// concurrent use.
type Server struct {
	cfg    Config
	ctx    context.Context
	cancel context.CancelFunc

	subMu sync.Mutex
	subs  map[int]Publisher
	next  int

	kernel    *kernelHost
	notebooks *notebooks
	runs      *runFollower
	methods   map[string]method

	registryNote string // why no run registry is followed; "" when one is
}

// method is one API call: params in, a JSON-serialisable result out.
type method func(ctx context.Context, params json.RawMessage) (any, error)

// New starts a Server: its kernel (started or attached; the first kernel
// failing to start is an error), its run follower and its autosave. Close
// it to stop them and the kernel.
func New(ctx context.Context, cfg Config) (*Server, error) {
	if cfg.Root == "" {
		wd, err := os.Getwd()
		if err != nil {
			return nil, fmt.Errorf("workbench: %w", err)
		}
		cfg.Root = wd
	}
	root, err := filepath.Abs(cfg.Root)
	if err != nil {
		return nil, fmt.Errorf("workbench: root %s: %w", cfg.Root, err)
	}
	if st, err := os.Stat(root); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("workbench: root %s is not a directory", cfg.Root)
	}
	cfg.Root = root
	if len(cfg.RunDirs) == 0 {
		cfg.RunDirs = []string{filepath.Join(root, "runs")}
	}
	if cfg.Kiln == "" && cfg.Existing == "" {
		return nil, errors.New("workbench: Config needs Kiln (the kiln binary that runs kernels) or Existing")
	}
	s := &Server{cfg: cfg, subs: map[int]Publisher{}}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.notebooks = newNotebooks(root, s.publish)
	// Without a registry (no home directory, or turned off) the workbench
	// follows its folders alone; server.info says why.
	registry, regErr := train.RegistryDir()
	s.registryNote = registryNote(registry, regErr)
	s.runs = newRunFollower(s.ctx, cfg.RunDirs, registry, s.publish)
	s.kernel = newKernelHost(s.ctx, cfg, s.publish)
	if err := s.kernel.start(ctx); err != nil {
		s.Close()
		return nil, err
	}
	s.methods = s.methodTable()
	return s, nil
}

// Close stops the kernel (a started one is shut down; an attached one is
// left running), the run follower and the autosave, saving notebooks with
// unsaved changes first.
func (s *Server) Close() error {
	s.cancel()
	err := s.notebooks.saveAll()
	if s.kernel != nil {
		s.kernel.close()
	}
	s.runs.wait()
	return err
}

// Subscribe registers p for every live update until cancel is called.
func (s *Server) Subscribe(p Publisher) (cancel func()) {
	s.subMu.Lock()
	id := s.next
	s.next++
	s.subs[id] = p
	s.subMu.Unlock()
	return func() {
		s.subMu.Lock()
		delete(s.subs, id)
		s.subMu.Unlock()
	}
}

// publish gives an update to every subscriber.
func (s *Server) publish(topic string, data any) {
	s.subMu.Lock()
	subs := make([]Publisher, 0, len(s.subs))
	for _, p := range s.subs {
		subs = append(subs, p)
	}
	s.subMu.Unlock()
	for _, p := range subs {
		p.Publish(topic, data)
	}
}

// Call runs one API method with JSON params (empty or null for none) and
// returns its result. An unknown method is ErrUnknownMethod; bad params are
// an error naming the method; a panic inside the method is recovered and
// returned as an error, so one bad request never ends the workbench.
func (s *Server) Call(ctx context.Context, name string, params json.RawMessage) (res any, err error) {
	m, ok := s.methods[name]
	if !ok {
		return nil, fmt.Errorf("%w %q (the method \"methods\" lists them)", ErrUnknownMethod, name)
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("workbench: %s: internal error: %v\n%s", name, r, debug.Stack())
		}
	}()
	if len(params) == 0 || string(params) == "null" {
		params = json.RawMessage("{}")
	}
	res, err = m(ctx, params)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return res, nil
}

// decode unmarshals params into v, strictly: unknown fields are errors.
func decode(params json.RawMessage, v any) error {
	if err := json.Unmarshal(params, v); err != nil {
		return fmt.Errorf("bad params %s: %v", truncate(string(params), 200), err)
	}
	return nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// methodTable lists every API method.
func (s *Server) methodTable() map[string]method {
	m := map[string]method{
		"server.info": func(ctx context.Context, _ json.RawMessage) (any, error) {
			info := map[string]any{"version": version(), "root": s.cfg.Root, "run_dirs": s.runs.dirs,
				"run_registry": s.runs.registry, "kernel": s.kernel.status(), "attached": s.cfg.Existing != ""}
			if s.registryNote != "" {
				info["run_registry_note"] = s.registryNote
			}
			return info, nil
		},
	}
	for name, f := range s.notebookMethods() {
		m[name] = f
	}
	for name, f := range s.kernelMethods() {
		m[name] = f
	}
	for name, f := range s.runMethods() {
		m[name] = f
	}
	for name, f := range s.fileMethods() {
		m[name] = f
	}
	m["methods"] = func(context.Context, json.RawMessage) (any, error) {
		names := make([]string, 0, len(m))
		for n := range m {
			names = append(names, n)
		}
		sort.Strings(names)
		return names, nil
	}
	return m
}

// registryNote says why no run registry is followed, or "" when one is.
func registryNote(dir string, err error) string {
	switch {
	case err != nil:
		return err.Error()
	case dir == "":
		return "the run registry is off (" + train.RegistryEnv + "=off)"
	}
	return ""
}

// version is the module version the binary was built from.
func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		return bi.Main.Version
	}
	return "unknown"
}
