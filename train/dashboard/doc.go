// Package dashboard shows a training run live in the terminal, in the
// manner of Burn's and Keras' training displays. From the top:
//
//   - a header: the title (and "×N ranks" for a data-parallel run), the
//     run's state and time, progress bars with ETAs for the current epoch
//     and the whole run (epoch x/N, step), samples and steps per second
//     and the learning rate;
//   - the metrics table: a row per metric, columns for the running means
//     of the epoch in progress, the last training epoch, the last
//     validation and the validation with the lowest loss; numbers with 4
//     significant digits, right-aligned, the columns at least two spaces
//     apart, their headers shortened and the last columns left out when
//     the terminal is narrow;
//   - the loss chart over the epochs: the training loss between step
//     events (recovered from their running means, then smoothed by an
//     exponential moving average) as a line of braille dots, and each
//     epoch's validation loss as a marker, on a linear scale fitted to
//     the data with a small margin and a legend above;
//   - a status line with the latest checkpoint (or resume, or event of a
//     kind the dashboard does not know), cut with an ellipsis to the width;
//   - a footer: the keys while running, and at the end the one line that
//     says how the run ended.
//
// Every part but the table and the chart has a fixed number of lines, so
// nothing moves as the run goes on; the chart's height follows the
// terminal's. It is a Bubble Tea program (github.com/charmbracelet/bubbletea)
// fed the run's train.Events.
//
// Run fits a train.Supervised with the dashboard when the output is a
// terminal and with plain log lines (train.Supervised.Log) when it is not,
// so that the same program works interactively, piped into a file and in
// CI:
//
//	res, err := dashboard.Run(ctx, s, learner, dashboard.Options{Title: "mnist-mlp"})
//
// When the run ends the dashboard's last frame stays on the screen with
// its completion line; a program that prints its own summary after Run
// should not repeat that line.
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
// Samples); runs logged before they existed show no epoch progress and
// plot their losses at the ends of epochs. It does not scroll, keep more
// than the latest event line, chart metrics other than the loss or use a
// log scale (a loss that falls by orders of magnitude sits low on the
// chart): the workbench does that.
package dashboard
