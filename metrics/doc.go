// Package metrics holds training and evaluation metrics: a small Metric
// interface and the metrics themselves (loss, classification, ranking,
// regression, language-model and text metrics, and loop statistics).
//
// Every metric accumulates sums and counts over the batches it is fed, never
// means of means, so the same data fed as one batch or as uneven batches gives
// the same value. Tensor metrics read outputs and targets to the host (one
// copy per Update, which is also a sync point of the device); they compute in
// float64 on the CPU and keep only the counts they need, except AUROC and
// AveragePrecision, which keep every score.
//
// The metrics:
//
//   - loop: Loss (size-weighted mean), LearningRate, IterationSpeed;
//   - classification: Accuracy, TopKAccuracy, ConfusionMatrix, PRF
//     (NewPrecision, NewRecall, NewFBeta, NewF1; Binary, Multiclass or
//     Multilabel tasks, Micro or Macro averages), HammingScore
//     (ConfusionMatrix's Table and Normalized print and normalise it);
//   - multilabel ranking: NewPrecisionAtK, NewRecallAtK (MultilabelTopK);
//   - images: PSNR, SSIM (11×11 Gaussian window, σ 1.5);
//   - segmentation: Dice, IoU (per class, Macro for mean IoU, with an
//     ignored class; their state is 3·NumClasses sums);
//   - ranking (binary): AUROC, AUCPR (average precision);
//   - regression: MSE (with RMSE), MAE, R2;
//   - language models: Perplexity;
//   - text (TextMetric, fed strings): NewCER, NewWER, BLEU, RougeL;
//   - host system (gopsutil, fed by Sample): CPUUsage, MemoryUsage;
//   - devices: DeviceUsage (memory as tensors see it, plus what a backend
//     implementing DeviceReporter says: a GPU's utilisation, say).
//
// Snapshot collects the values of several metrics by name for a log line
// or a chart; ResetAll starts an epoch.
//
// For data-parallel training, where each process feeds its shard of the
// batches to its own metrics, the metrics whose state is a fixed-length
// vector of sums implement Summable: all-reduce their State with a sum and
// SetState the result to report the global figure. They are all the metrics
// above except AUROC and AUCPR (they keep every score), LearningRate,
// IterationSpeed, CPUUsage and MemoryUsage (not sums over batches); a PRF
// for a multiclass or multilabel task needs its NumClasses set first.
//
// Metrics are not safe for concurrent use; give each goroutine its own.
package metrics
