// Package train runs supervised training loops: a Learner (model,
// optimizer, optional schedule) is fitted by Supervised.Fit over data
// loaders, with metrics, gradient accumulation and clipping, validation
// every epoch on a NoGrad view, early stopping (EarlyStopping or any
// StopRule), checkpoints (Checkpoints, or any Checkpointer), Resume from a
// checkpoint, Events published to Observers, a versioned JSON-lines event
// log, and plain log lines.
//
// # Models
//
// A model either implements TrainStepper (TrainStep(x, y) returns the loss
// and the outputs metrics are fed) and optionally ValidStepper, or is an
// nn.Module, whose loss is then nn.CrossEntropy(Forward(x), y). Both are
// plain interfaces. For a model type declared in a yaegi notebook cell,
// also set Learner.Stepper to the model, in an assignment statement (see
// Learner).
//
// # The run directory
//
// With Config.RunDir set, Fit writes there:
//
//   - config.json: the run's Config (defaults filled in), indented JSON;
//   - events.jsonl: one JSON object per line, each an Event, flushed line
//     by line so that a reader following the file (the workbench) only
//     ever sees whole records;
//   - checkpoints/: the checkpoints of the default strategy (see below);
//   - process.json (ProcessFile): which process runs there, for
//     RunLiveness (see "Liveness" below);
//   - STOP (StopFile), for a moment, when something asks the run to stop.
//
// A Fit replaces the files an earlier run left there; a Resume appends to
// them.
//
// # Liveness
//
// A process killed outright (SIGKILL, a crash, a machine lost) writes no
// end record, so its log looks like a running run's for ever. Before it
// touches the event log, Fit (or Resume) creates process.json, takes an
// advisory lock on it (flock on Linux, macOS and the BSDs; none
// elsewhere, or on a file system without locks) and keeps it until the
// run ends; the kernel lets the lock go when the process dies, however it
// dies. A second Fit into a directory whose lock a live run holds fails
// with ErrRunDirInUse. The file is one JSON object, padded with spaces to
// a fixed size (a multiple of 512 bytes) and rewritten in place:
//
//	{"version":1,"pid":4242,"host":"gpu7","boot_id":"d5c4…","pid_ns":"pid:[4026531836]",
//	 "proc_start":"2771843","locked":true,"started":"2025-06-01T12:00:00.1Z",
//	 "heartbeat":"2025-06-01T12:03:18.1Z","state":"running"}
//
// Its fields:
//
//   - version: ProcessFileVersion (1); added fields keep it;
//   - pid, host: the process and os.Hostname;
//   - boot_id, pid_ns (Linux): the kernel's boot and the pid namespace, so
//     that a pid is only checked where it means the same process;
//   - proc_start: the OS's start time of the process (Linux: field 22 of
//     /proc/PID/stat; macOS: sysctl), so that a reused pid is told apart;
//   - locked: whether the process holds the lock (false where locks are
//     missing: readers then use pid and heartbeat);
//   - started: when the process took the directory;
//   - heartbeat: rewritten every HeartbeatEvery (2 s) while the run lives,
//     for readers on other machines of a shared folder;
//   - state: "running", then "ended" (with "ended", a time) once the end
//     record is written and the lock let go. The file stays.
//
// RunLiveness(dir) tells running, completed, stopped and failed runs apart
// from killed ones (no end record, the process on this machine gone: no
// such pid, a pid now of a process started at another time, or the lock
// free) and stale ones (no end record, the process elsewhere, and no
// heartbeat for StaleAfter, 30 s). A run written by an earlier Kiln, with
// no process.json, is stale once its event log has been unchanged for
// StaleAfter. The workbench and `kiln inspect` use it.
//
// # The event log
//
// The event log's first record is the start event; its "version" field is
// EventLogVersion (now 1), and only it carries one. Readers must ignore
// fields and record kinds they do not know; the version changes only when
// a field changes meaning or goes away (the checkpoint and resume kinds
// and the position, path and system fields were added in version 1
// without changing it). Records, in order:
//
//	kind "start":      version, time, config, batches (training batches per
//	                   epoch)
//	kind "step":       every LogEvery optimizer steps: epoch, step, split "train",
//	                   metrics (running means over the epoch so far), lr,
//	                   batches, batch (batches of this epoch done), samples
//	                   (training samples in them), and at most every 5
//	                   seconds system
//	kind "epoch":      after each epoch, once with split "train" (and lr and
//	                   system), then once with split "valid" when there is a
//	                   validation loader
//	kind "checkpoint": when a checkpoint is written: path (its directory),
//	                   position, metrics ("train.<name>", "valid.<name>")
//	kind "end":        reason ("completed", "cancelled", "early_stop", "failed")
//	                   and, for a failed run, error
//
// Every record has time (RFC 3339), epoch, step (optimizer steps so far)
// and elapsed_s (seconds since the start of this Fit or Resume call).
// Epoch counts from 1: the epoch under way on step and epoch records, the
// epochs completed on checkpoint, resume and end records (0 before the
// first). Metric values that are not finite are the strings "nan", "inf",
// "-inf". ReadEvents reads a log back.
//
// A position is {"epochs": epochs completed, "batch": batches of the next
// epoch trained on, "step": optimizer steps}; see Position.
//
// The system values are host and device usage: "cpu_percent" (the
// machine's, since the previous sample), "mem_percent", "process_rss_mib"
// (from package metrics, through gopsutil), "device_live_mib" and
// "device_peak_mib" (the model's device, as tensors see it), and whatever
// the device's backend reports when it implements metrics.DeviceReporter
// (a GPU's utilisation, say). Values a platform cannot read are left out.
// They are sampled once per epoch and at most every 5 seconds on step
// records, never per step.
//
// Resumed runs: Resume appends to the same events.jsonl a record of kind
// "resume" (position and path of the checkpoint it continues from, the
// config it runs with, and in error the corrupt checkpoints it passed
// over), then the records of the continued run, ending with their own end
// record. So a log may hold several end records, each but the last
// followed by a resume record, and the step of a resume record may be
// lower than that of the records before it: the records in between
// describe work lost in the interruption (after the last checkpoint),
// which the continued run redoes. A reader charting a run should, at each
// resume record, drop the earlier records with a larger step, or keep the
// last record of each step and kind as the tests do. A run killed outright
// leaves no end record (RunLiveness tells it from a running one); Resume
// cuts off a last line written only in part.
//
// # Checkpoints
//
// Fit offers its Checkpointer (Supervised.Checkpoint) a Moment after every
// optimizer step inside an epoch, at every epoch's end (after validation
// and the stop rule) and, when the run stops, at a final moment; the
// strategy decides whether to write and writes with Moment.Save, through
// store.SaveCheckpoint (atomic: a crash leaves the old checkpoint or the
// new one, never half of one). A checkpoint holds the model's state dict,
// the optimizer's state, the schedule's state, the model device's random
// stream, the position, the Config, the latest metrics and the loop's own
// state (the epoch's running loss sums and the metric values of every
// epoch completed).
//
// Checkpoints is the package's strategy: every N epochs, every N
// optimizer steps (inside epochs), at the end of every run, keeping the
// last N, the best N by a metric, or any composition (Retention), with an
// index.json and "last" and "best" files in the checkpoints directory so
// that tools find them. With RunDir set and Checkpoint nil, Fit uses
// NewCheckpoints(): one checkpoint per epoch, keeping the last two and
// the best by validation loss (training loss without validation).
// NoCheckpoints turns checkpoints off.
//
// Cancelling ctx stops Fit after the current optimizer step (or during
// validation) and the strategy is offered that position as a final
// moment, so a cancelled run resumes exactly where it stopped; a run that
// completes or stops early is checkpointed at its end too.
//
// # Resume
//
// Supervised.Resume(ctx, dir, learner) continues a run from a checkpoint
// directory, or from the newest loadable checkpoint of a run directory,
// and trains on to Epochs. It is a method beside Fit, rather than a
// Config field, because resuming is an action on a run directory, not part
// of a run's description: the Config saved in config.json and in every
// checkpoint stays the same whether a run was interrupted or not, and a
// resumed run's checkpoints do not point back at where it came from.
//
// On the same device, with the same data and the same kinds of model,
// optimizer and schedule, a resumed run computes what the uninterrupted
// run would have, bit for bit: the loader's batches depend only on its
// seed, the epoch and the batch index (never on Workers or timing), the
// CPU backend's results do not depend on its worker count, and the random
// stream is restored. The batch losses, the running losses of step
// records, every epoch's loss and the final weights are equal; the
// training metrics other than the loss of an epoch resumed inside it
// cover the batches after the resume only (they keep no state a checkpoint
// could save).
//
// # Data-parallel training
//
// With Supervised.Comm set to a dist.Communicator of more than one rank
// (dist.Init under mpirun or srun, or a member of dist.NewLocalGroup), Fit
// trains data-parallel: every rank runs Fit with the same model, config
// and loaders, and
//
//   - at the start, every rank's parameters and buffers are broadcast from
//     rank 0, so the ranks start alike whatever their initialisation;
//   - each rank reads its shard of Train (data.DataLoader.Shard): the one
//     seeded order every rank computes for the epoch, dealt out by
//     position (rank r takes r, r+N, r+2N, …), so that across the ranks
//     every item is trained on exactly once per epoch. The global batch
//     is N times the loader's BatchSize;
//   - each optimizer step, the ranks all-reduce the step's sample count,
//     loss sum and whether any rank was cancelled. Each scales its
//     gradients by its share (local samples × N ÷ global samples, 1 when
//     the shards' batches are equal) and all-reduces them with dist.Mean
//     in buckets of about BucketBytes (25 MiB, PyTorch DDP's default):
//     the parameters are packed last layer first, and a bucket is handed
//     to a goroutine that all-reduces it as soon as the backward pass has
//     finished its gradients (tensor.BackwardNotify), while the pass goes
//     on through the earlier layers. Clipping and the optimizer step come
//     after every bucket is back, so every rank takes the same step, the
//     one a single process would take on the global batch (within
//     rounding). With GradAccumulation the micro-batches are summed into
//     one backward pass, so the micro-steps communicate nothing and the
//     all-reduce happens once per optimizer step;
//   - uneven tails: when the data set's size does not divide by N, shards
//     differ by one item, nothing is repeated or dropped, and a rank can
//     run out of batches one step before the others. It still takes part
//     in that step with a zero contribution (its shard's first batch
//     differentiated with weight 0, unrecorded in loss and metrics), and
//     the epoch ends on every rank at the step where the global sample
//     count is 0;
//   - the training loss is the global one on every rank, and so are the
//     training metrics that implement metrics.Summable (their sums are
//     all-reduced whenever values are reported); a metric that is not
//     Summable reports each rank's own shard. Validation runs on the whole
//     of Valid on every rank, so its figures are global too, and every
//     rank's Stop rule sees the same values and stops at the same epoch;
//   - a cancellation seen by one rank (its context, or the StopFile, which
//     only rank 0 watches) stops every rank after the same step, rank 0
//     writing the final checkpoint;
//   - rank 0 alone writes the run directory (config.json, events.jsonl,
//     process.json, checkpoints) and publishes events to Observers; its
//     start event carries WorldSize, and its checkpoints record it.
//     Other ranks ignore RunDir, Checkpoint and Observers (Log, a writer
//     the caller owns, is still written);
//   - Resume works on several ranks (every rank reads the checkpoint, so
//     the run directory must be visible to all); a checkpoint from an
//     epoch's end resumes on any number of ranks. See Resume.
//
// A rank that dies or hangs: under mpirun, Open MPI ends every rank when
// one dies, naming it; a rank that stops taking part makes the others'
// next collective fail after the communicator's Timeout, naming the
// collective. Either way Fit returns (or the process is ended) rather than
// waiting forever, and the run resumes from its last checkpoint.

// # Hosts
//
// SetRunHook lets a program that runs training code it did not write (the
// notebook kernel, the workbench) see every Fit and Resume started in the
// process: the hook gives the run a context of its own, so that the host
// can stop it gracefully, and adds an Observer (the kernel's live
// dashboard). No observer ever misses a run's end event.
//
// # Following a run from another process
//
// Follow reads a run directory's event log as another process writes it
// (a `kiln demo -np 2`, ranks under `kiln launch`, another notebook) and
// hands its events to Observers as Fit would, to the run's end; the run
// hook sees it too, so the notebook kernel shows its live dashboard.
// FollowCommand starts the command that trains the run, follows it, and
// stops it (its StopFile, then signals to its process group) when the
// host or ctx asks; KilnCommand makes such a command from the kiln
// program:
//
//	cmd, err := train.KilnCommand("demo", "-np", "2", "-run-dir", dir)
//	…
//	res, err := train.FollowCommand(ctx, cmd, dir, nil)
//
// # What it does not do
//
// It does not save a StopRule's state: Resume replays the stop rule over
// the epochs the checkpoint saw instead (see Resume). It writes checkpoints
// on the training goroutine, synchronously. It trains on several devices
// or processes only data-parallel, one device per rank (see Data-parallel
// training); it does not split a model across devices.
package train
