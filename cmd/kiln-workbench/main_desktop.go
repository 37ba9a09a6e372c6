//go:build desktop

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/wailsapp/wails/v2"
	"github.com/wailsapp/wails/v2/pkg/logger"
	"github.com/wailsapp/wails/v2/pkg/options"
	"github.com/wailsapp/wails/v2/pkg/options/assetserver"
	wailsruntime "github.com/wailsapp/wails/v2/pkg/runtime"

	"github.com/kiln-ml/kiln/workbench"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

// wailsEmitter sends events with runtime.EventsEmit. ctx is always the
// context Wails passed to OnStartup/OnDomReady: EventsEmit ends the process
// when given any other context.
type wailsEmitter struct{ ctx context.Context }

func (w wailsEmitter) Emit(name string, data any) { wailsruntime.EventsEmit(w.ctx, name, data) }

// run starts the engine and the window and returns the exit status.
func run(args []string) int {
	o, err := parseSettings(args, os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "kiln-workbench:", err)
		return 2
	}
	if os.Getenv("DISPLAY") == "" && os.Getenv("WAYLAND_DISPLAY") == "" {
		fmt.Fprintln(os.Stderr, "kiln-workbench: no display (neither DISPLAY nor WAYLAND_DISPLAY is set); run it under X or Wayland (or xvfb-run), or use `kiln workbench --browser`")
		return 1
	}
	exe, _ := os.Executable()
	kiln, err := findKiln(o.kiln, exe)
	if err != nil && o.existing == "" {
		fmt.Fprintln(os.Stderr, "kiln-workbench:", err)
		return 1
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv, err := workbench.New(ctx, o.engineConfig(kiln))
	if err != nil {
		fmt.Fprintln(os.Stderr, "kiln-workbench: start the workbench engine:", err)
		return 1
	}
	defer srv.Close()

	pub := &publisher{}
	unsubscribe := srv.Subscribe(pub)
	defer unsubscribe()
	app := newApp(ctx, srv)
	exporter := newExporter(ctx, srv)
	bind := []any{app, exporter}

	var (
		st       *SelfTest
		exitCode = 0
		exitMu   sync.Mutex
		jsOnce   sync.Once
	)
	if o.selfTest {
		if st, err = newSelfTest(pub); err != nil {
			fmt.Fprintln(os.Stderr, "kiln-workbench:", err)
			return 1
		}
		bind = append(bind, st)
	}

	err = wails.Run(&options.App{
		Title:              "Kiln workbench",
		Width:              1280,
		Height:             860,
		MinWidth:           640,
		MinHeight:          400,
		AssetServer:        &assetserver.Options{Handler: srv.Handler()},
		LogLevel:           logger.WARNING,
		LogLevelProduction: logger.ERROR,
		Bind:               bind,
		OnStartup: func(wctx context.Context) {
			// The dialog runs under wctx: Wails' runtime functions end the
			// process when given any other context.
			exporter.setDialog(func(title, name, display, pattern string) (string, error) {
				return wailsruntime.SaveFileDialog(wctx, wailsruntime.SaveDialogOptions{
					Title:                title,
					DefaultFilename:      name,
					Filters:              []wailsruntime.FileFilter{{DisplayName: display, Pattern: pattern}},
					CanCreateDirectories: true,
				})
			})
			if st == nil {
				return
			}
			go func() {
				v := st.wait(o.selfTestTimeout)
				exitMu.Lock()
				if v.ok {
					fmt.Println("SELFTEST PASS:", v.summary)
				} else {
					exitCode = 1
					fmt.Println("SELFTEST FAIL:", v.summary)
					for _, r := range v.reasons {
						fmt.Println("  -", r)
					}
				}
				code := exitCode
				exitMu.Unlock()
				time.Sleep(o.selfTestHold)
				wailsruntime.Quit(wctx)
				// Wails normally returns from Run now; never hang a test run.
				time.AfterFunc(20*time.Second, func() { os.Exit(code) })
			}()
		},
		OnDomReady: func(wctx context.Context) {
			pub.ready(wailsEmitter{wctx})
			if st != nil {
				jsOnce.Do(func() {
					js := st.script(scriptBudget(o.selfTestTimeout).Milliseconds())
					wailsruntime.WindowExecJS(wctx, js)
				})
			}
		},
		OnShutdown: func(context.Context) {
			pub.shutdown()
			cancel()
		},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "kiln-workbench:", err)
		return 1
	}
	exitMu.Lock()
	defer exitMu.Unlock()
	return exitCode
}
