// Package dashboard shows a training run live in the terminal: progress
// bars with ETAs for the current epoch and the whole run, the latest
// training and validation metrics, the learning rate, throughput, a chart
// of the step losses, and lines for checkpoints and other events. It is a
// Bubble Tea program (github.com/charmbracelet/bubbletea) fed the run's
// train.Events.
//
// Run fits a train.Supervised with the dashboard when the output is a
// terminal and with plain log lines (train.Supervised.Log) when it is not,
// so that the same program works interactively, piped into a file and in
// CI:
//
//	res, err := dashboard.Run(ctx, s, learner, dashboard.Options{Title: "mnist-mlp"})
//
// On the dashboard, q or ctrl+c asks the run to stop: Run cancels the
// context Fit runs under, so Fit finishes its current optimizer step and
// returns with train.StopCancelled. A second ctrl+c leaves the dashboard at
// once (Fit still stops after its step). SIGINT, when keys do not reach the
// program, counts as ctrl+c.
//
// Model is the dashboard itself, for programs that run their own Bubble Tea
// loop: feed it events with Observe.
//
// The dashboard reads the progress fields of step events (Batch, Batches,
// Samples); runs logged before they existed show no epoch progress. It
// does not scroll, plot validation curves or show more than the last few
// event lines: the workbench does that.
package dashboard
