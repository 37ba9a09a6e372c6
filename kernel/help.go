package kernel

// Help is the text of %help: how cells behave, the interpreter's known
// limits and the magics.
const Help = cellHelp + "\n" + magicHelp

// cellHelp is the part of Help about cells and the interpreter.
const cellHelp = `# Kiln kernel

Cells are Go, run by the yaegi interpreter (v0.16.1); Kiln's tensor
operations run compiled, at native speed.

## Cells
- Mix imports, declarations (func, type, const, var) and statements freely.
  Variables, functions and types persist into later cells and may be
  redefined there.
- Packages of the standard library and Kiln (tensor, backends, autodiff,
  display, …) are imported on first use; import explicitly to pick another
  package of the same name (crypto/rand instead of math/rand).
- The last expression of a cell is shown: x shows x, a call shows what it
  returns. x := 21, or a call returning nothing, shows nothing; neither do
  fmt.Print* calls.
- Values with an HTML() string or MIME() map[string]string method (Kiln's
  tensors and charts, or your own types) are shown richly. display.HTML,
  display.Markdown, display.PNG, … build rich output; Display(…) shows it
  at once; display.New returns a handle whose Update redraws in place.
- ctx is a context.Context cancelled when you interrupt the kernel: pass it
  to long-running Kiln calls (training, data loading) so they stop too.

## Known limits of the interpreter
- Closures created in a loop share the loop variable (Go before 1.22): all
  see its last value. Pass values to compiled APIs rather than callbacks
  that capture loop variables, or copy the variable (v := v) first.
- Interpreted loops are about 50x slower than compiled code and each call
  costs about 0.4 µs: keep heavy loops in compiled Kiln ops (whole-tensor
  operations) instead of looping over elements in a cell.
- Generics are partial: generic functions and types declared in cells mostly
  work, compiled generic APIs cannot be called (Kiln's API has none), and
  parts of slices/maps are missing (slices.Sort).
- for i := range n over an integer is rewritten to a classic loop; if the
  kernel cannot tell n is an integer and the cell fails, write
  for i := 0; i < n; i++.
- for i := range aString gives i as a count of runes, not a byte offset as
  in Go (a yaegi bug); use i, r := range with utf8 if offsets matter.
- A redefined type is a new type: values made earlier keep the old one, and
  functions declared earlier with the old type must be run again.
  Functions of earlier cells that call a redefined function are compiled
  again to call the new one; methods are not (run their cell again).
- Values computed by a cell's top-level statements (call results, shown
  values, variables set to nil afterwards) stay referenced by the
  interpreter for the rest of the session; values inside functions are
  freed normally. Release big tensors explicitly (t.Release(),
  tensor.Scope) or compute them inside a function.
- Interrupting stops interpreted code (and time.Sleep) at once, but a
  compiled call that does not take ctx runs to its end in the background,
  and the next cell waits for it (interrupt again to give up waiting).
- A goroutine a cell starts and leaves running should get what it needs as
  arguments (go worker(ch)), not read the cell's variables by name: a later
  cell that declares a variable grows the interpreter's table of globals
  while that goroutine reads it, unsynchronised inside yaegi.
- A panic in a goroutine a cell started (go f()) is recovered: it is
  reported on that cell's stderr and the goroutine ends. A panic in a
  goroutine compiled code started (time.AfterFunc's function), a stack
  overflow (recursion deeper than about 200,000 calls), a concurrent map
  write or running out of memory ends the kernel process, with the reason
  as the last line of its stderr; restart the kernel (notebooks and
  variables of other kernels are unaffected). Too big a tensor is an
  ordinary error: tensors are held to a per-device memory budget
  (dev.MemoryStats()).
- A value of a cell-declared type cannot be placed in a composite literal
  of a compiled type that expects an interface (nn.Sequential{&MyLayer{}},
  nn.LinearConfig{WeightInit: &MyInit{}}): use a constructor
  (nn.NewSequential(&MyLayer{})) or assign the field afterwards.
- A package-level var initialised from another cell's := variable can fail
  with "definition loop"; use := in the cell instead of var.
- return x, len(s) can return the wrong values (yaegi v0.16.1): assign
  len(s) to a variable first.
- os.Exit panics instead of exiting. os.Stdout and os.Stderr are *os.File,
  on pipes of their own (not fd 1 and 2): a write to one right after a
  write to the other may show in the other order. os.Stdin is an io.Reader
  that asks the front end for a line.
`
