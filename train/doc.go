// Package train runs supervised training loops: a Learner (model,
// optimizer, optional schedule) is fitted by Supervised.Fit over data
// loaders, with metrics, gradient accumulation and clipping, validation
// every epoch on a NoGrad view, early stopping (EarlyStopping or any
// StopRule), Events published to Observers, a versioned JSON-lines event
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
// With Config.RunDir set, Fit writes two files there:
//
//   - config.json: the run's Config (defaults filled in), indented JSON;
//   - events.jsonl: one JSON object per line, each an Event, flushed line
//     by line so that a reader following the file (the workbench) only
//     ever sees whole records.
//
// The event log's first record is the start event; its "version" field is
// EventLogVersion (now 1), and only it carries one. Readers must ignore
// fields they do not know; the version changes only when a field changes
// meaning or goes away. Records, in order:
//
//	kind "start": version, time, config, batches (training batches per
//	              epoch)
//	kind "step":  every LogEvery optimizer steps: epoch, step, split "train",
//	              metrics (running means over the epoch so far), lr,
//	              batches, batch (batches of this epoch done) and samples
//	              (training samples in them)
//	kind "epoch": after each epoch, once with split "train" (and lr), then
//	              once with split "valid" when there is a validation loader
//	kind "end":   reason ("completed", "cancelled", "early_stop", "failed")
//	              and, for a failed run, error
//
// Every record has time (RFC 3339), epoch (from 1; 0 before the first),
// step (optimizer steps so far) and elapsed_s (seconds since the start).
// Metric values that are not finite are the strings "nan", "inf", "-inf".
// ReadEvents reads a log back.
//
// # Checkpoints
//
// This package does not write checkpoints yet: Supervised.Checkpoint is the
// hook a checkpoint strategy (package store) plugs into; Fit calls it after
// every epoch with the run's Position and the epoch's metric values.
package train
