package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/kiln-ml/kiln/data"
	"github.com/kiln-ml/kiln/dist"
	"github.com/kiln-ml/kiln/metrics"
	"github.com/kiln-ml/kiln/nn"
	"github.com/kiln-ml/kiln/optim"
	"github.com/kiln-ml/kiln/tensor"
	"github.com/kiln-ml/kiln/train"
	"github.com/kiln-ml/kiln/train/dashboard"
)

// demoConfig is what `kiln demo` runs, from its flags.
type demoConfig struct {
	epochs int
	batch  int
	lr     float64
	subset int // training images (their first ones); 0 for all
	device string
	runDir string
	xor    bool
	steps  int    // of the XOR demo
	np     int    // data-parallel processes
	resume string // run directory to continue
}

// runDemo is `kiln demo`: see demo.
func runDemo(args []string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	go func() {
		// After the first interrupt stops the run gracefully, a second one
		// ends the process as usual.
		<-ctx.Done()
		stop()
	}()
	return demo(ctx, args, os.Stdout)
}

// demo parses the flags of `kiln demo` and runs it, writing to out: by
// default it trains a 784-256-128-10 ReLU MLP on MNIST with AdamW and a
// cosine schedule, through train.Supervised, showing the terminal
// dashboard when out is a terminal and log lines otherwise, writes the run
// directory, and prints the test accuracy and the time of each epoch. With
// -xor it runs the older tensor-level XOR demo instead.
func demo(ctx context.Context, args []string, out io.Writer) error {
	var c demoConfig
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.IntVar(&c.epochs, "epochs", 2, "epochs over the training images")
	fs.IntVar(&c.batch, "batch", 128, "images per batch")
	fs.Float64Var(&c.lr, "lr", 3e-3, "AdamW's peak learning rate (annealed to 0 by a cosine schedule)")
	fs.IntVar(&c.subset, "subset", 0, "train on the first N training images and test on the first N/2 test images (at least 100); 0 for all")
	fs.StringVar(&c.device, "device", "", "device (default: KILN_DEVICE or the best detected)")
	fs.StringVar(&c.runDir, "run-dir", "", "where config.json and events.jsonl go (default runs/mnist-mlp-<time>)")
	fs.StringVar(&c.resume, "resume", "", "continue the run in this run directory from its last checkpoint (with the flags it was started with)")
	fs.BoolVar(&c.xor, "xor", false, "run the small tensor-level XOR demo instead")
	fs.IntVar(&c.steps, "steps", 600, "training steps of the XOR demo")
	fs.IntVar(&c.np, "np", 1, "train data-parallel on N processes, started with kiln launch (Open MPI's mpirun); -batch is per process")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("demo: unexpected arguments %q", fs.Args())
	}
	if c.epochs <= 0 || c.batch <= 0 || c.subset < 0 || !(c.lr > 0) || c.np < 1 {
		return errors.New("demo: -epochs, -batch, -lr and -np must be positive and -subset not negative")
	}
	if c.np > 1 && !c.xor && !dist.Launcher().Found() {
		return launchDemo(ctx, c, args, out)
	}
	if l := dist.Launcher(); l.Found() && l.Rank != 0 {
		out = io.Discard // rank 0 speaks for the run
	}
	dev, err := tensor.DefaultDevice()
	if c.device != "" {
		dev, err = tensor.ParseDevice(c.device)
	}
	if err != nil {
		return err
	}
	reason := tensor.DefaultDeviceReason()
	if c.device != "" {
		reason = "-device"
	}
	fmt.Fprintf(out, "device: %s (%s)\n", dev, reason)
	if c.xor {
		return xorDemo(out, dev, c.steps)
	}
	return mnistDemo(ctx, c, dev, out)
}

// launchDemo is `kiln demo -np N` outside a launcher: it runs this same
// command as N ranks under mpirun (each finds its rank with dist.Init and
// trains its shard), all with one run directory, which rank 0 alone
// writes.
func launchDemo(ctx context.Context, c demoConfig, args []string, out io.Writer) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	if c.runDir == "" && c.resume != "" {
		c.runDir = c.resume
	}
	if c.runDir == "" {
		c.runDir = defaultRunDir()
		args = append(slices.Clone(args), "-run-dir", c.runDir) // the last -run-dir counts
	}
	cmd, err := dist.LaunchCommand(ctx, dist.LaunchConfig{Procs: c.np}, self, append([]string{"demo"}, args...)...)
	if err != nil {
		return fmt.Errorf("demo: -np %d: %w", c.np, err)
	}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	fmt.Fprintf(out, "demo: %d processes: %s\n", c.np, strings.Join(cmd.Args, " "))
	if err := cmd.Run(); err != nil {
		hint := ""
		if ck, _ := filepath.Glob(filepath.Join(c.runDir, train.CheckpointsDir, "epoch-*")); len(ck) > 0 && ctx.Err() == nil {
			hint = fmt.Sprintf(" (the run has checkpoints: continue it with kiln demo %s -resume %s)",
				strings.Join(withoutFlag(withoutFlag(args, "resume"), "run-dir"), " "), c.runDir)
		}
		return fmt.Errorf("demo: -np %d: %w%s", c.np, err, hint)
	}
	return nil
}

// withoutFlag returns args without -name and its value (either form).
func withoutFlag(args []string, name string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := strings.TrimPrefix(strings.TrimPrefix(args[i], "-"), "-")
		switch {
		case a == name:
			i++ // its value
		case strings.HasPrefix(a, name+"="):
		default:
			out = append(out, args[i])
		}
	}
	return out
}

// defaultRunDir is the run directory of a demo run started now.
func defaultRunDir() string {
	return filepath.Join("runs", "mnist-mlp-"+time.Now().Format("20060102-150405"))
}

// mnistDemo trains the MLP; see demo. Under a launcher with more than one
// rank it trains data-parallel (demo has muted every rank but 0).
func mnistDemo(ctx context.Context, c demoConfig, dev tensor.Device, out io.Writer) error {
	var comm dist.Communicator
	if l := dist.Launcher(); l.Found() && l.Size > 1 {
		var err error
		if comm, err = dist.Init(ctx); err != nil {
			return fmt.Errorf("demo: %s: %w", l, err)
		}
		defer comm.Close()
	}
	dir, err := data.MNISTDir()
	if err != nil {
		return err
	}
	trainSet, testSet, err := data.LoadMNIST(dir)
	if err != nil {
		return err
	}
	if c.subset > 0 {
		trainSet = trainSet.Subset(c.subset)
		testSet = testSet.Subset(max(c.subset/2, 100))
	}
	trainSet.Standardize, testSet.Standardize = true, true
	trainLoader, err := data.NewLoader(trainSet, data.LoaderConfig{BatchSize: c.batch, Shuffle: true, Seed: 1, Device: dev})
	if err != nil {
		return err
	}
	testLoader, err := data.NewLoader(testSet, data.LoaderConfig{BatchSize: 1000, Device: dev})
	if err != nil {
		return err
	}

	ad := dev.Autodiff()
	ad.Seed(1)
	var model nn.Sequential
	tensor.NoScope(func() {
		model = nn.NewSequential(
			nn.NewLinear(ad, 784, 256), nn.ReLU{},
			nn.NewLinear(ad, 256, 128), nn.ReLU{},
			nn.NewLinear(ad, 128, 10),
		)
	})
	defer nn.Release(model)
	opt := optim.NewAdamW(optim.AdamWConfig{LR: c.lr})
	defer opt.ZeroState()
	steps := c.epochs * trainLoader.Len()
	if comm != nil { // an epoch is as many steps as rank 0's shard has batches
		steps = c.epochs * trainLoader.Shard(0, comm.Size()).Len()
	}
	learner := &train.Learner{Model: model, Optimizer: opt,
		Scheduler: optim.NewScheduler(opt, optim.NewCosineAnnealingLR(c.lr, steps, 0))}

	if c.resume != "" {
		if c.runDir != "" && filepath.Clean(c.runDir) != filepath.Clean(c.resume) {
			return fmt.Errorf("demo: -resume %s continues that run directory; -run-dir %s names another", c.resume, c.runDir)
		}
		c.runDir = c.resume
	}
	if c.runDir == "" {
		c.runDir = defaultRunDir()
	}
	// A rank's output reaches the user through mpirun (on a pseudo-terminal
	// of Open MPI's, whatever the user's is): log lines, not the dashboard.
	onTerminal := dashboard.IsTerminal(out) && comm == nil
	logEvery := 50 // log lines
	if onTerminal {
		logEvery = 10 // dashboard updates
	}
	times := &epochTimes{}
	s := &train.Supervised{
		Config:       train.Config{Epochs: c.epochs, LogEvery: logEvery, RunDir: c.runDir},
		Train:        trainLoader,
		Valid:        testLoader,
		Metrics:      []metrics.Metric{metrics.NewAccuracy()},
		ValidMetrics: []metrics.Metric{metrics.NewAccuracy()},
		Observers:    []train.Observer{times},
		Comm:         comm,
	}
	ranks := ""
	if comm != nil {
		ranks = fmt.Sprintf(" per process, %d processes under %s", comm.Size(), dist.Launcher().Name)
	}
	fmt.Fprintf(out, "training a 784-256-128-10 MLP on %d MNIST images for %d epochs\n(%d steps of %d%s, AdamW, lr %g cosine)\nrun directory %s\n",
		trainSet.Len(), c.epochs, steps, c.batch, ranks, c.lr, c.runDir)
	if c.resume != "" {
		fmt.Fprintf(out, "resuming from the last checkpoint of %s\n", c.resume)
	}
	res, err := dashboard.Run(ctx, s, learner, dashboard.Options{Title: "mnist-mlp", Output: out, Plain: !onTerminal, Resume: c.resume})
	if err != nil {
		return err
	}
	if err := dev.Sync(); err != nil {
		return err
	}
	if onTerminal { // the dashboard's last frame has said how the run ended
		fmt.Fprintf(out, "epoch times %s\n", times)
	} else {
		fmt.Fprintf(out, "%s after %d epochs, %d steps; epoch times %s\n", res.Reason, res.Epochs, res.Steps, times)
	}
	if len(res.Valid) == 0 {
		fmt.Fprintln(out, "no epoch completed: no test accuracy")
		return nil
	}
	acc := res.Valid[len(res.Valid)-1]["accuracy"]
	fmt.Fprintf(out, "test accuracy: %.2f%% on %d images\n", 100*acc, testSet.Len())
	return nil
}

// epochTimes records how long each epoch's training took (validation
// excluded), from the events.
type epochTimes struct {
	mu    sync.Mutex
	start float64 // elapsed seconds when the current epoch began
	times []float64
}

func (t *epochTimes) OnEvent(e train.Event) {
	if e.Kind != train.EventEpoch {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if e.Split == "train" {
		t.times = append(t.times, e.Elapsed-t.start)
	}
	t.start = e.Elapsed
}

func (t *epochTimes) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.times) == 0 {
		return "-"
	}
	parts := make([]string, len(t.times))
	for i, s := range t.times {
		parts[i] = fmt.Sprintf("%.1fs", s)
	}
	return strings.Join(parts, ", ")
}
