package metrics_test

import "github.com/kiln-ml/kiln/metrics"

var (
	_ metrics.Metric      = (*metrics.Loss)(nil)
	_ metrics.Metric      = (*metrics.LearningRate)(nil)
	_ metrics.Metric      = (*metrics.IterationSpeed)(nil)
	_ metrics.Metric      = (*metrics.Accuracy)(nil)
	_ metrics.Metric      = (*metrics.TopKAccuracy)(nil)
	_ metrics.MultiValued = (*metrics.ConfusionMatrix)(nil)
	_ metrics.MultiValued = (*metrics.PRF)(nil)
	_ metrics.MultiValued = (*metrics.HammingScore)(nil)
	_ metrics.Metric      = (*metrics.AUROC)(nil)
	_ metrics.Metric      = (*metrics.AUCPR)(nil)
	_ metrics.MultiValued = (*metrics.MSE)(nil)
	_ metrics.Metric      = (*metrics.MAE)(nil)
	_ metrics.Metric      = (*metrics.R2)(nil)
	_ metrics.MultiValued = (*metrics.Perplexity)(nil)
	_ metrics.TextMetric  = (*metrics.ErrorRate)(nil)
	_ metrics.TextMetric  = (*metrics.BLEU)(nil)
	_ metrics.MultiValued = (*metrics.BLEU)(nil)
	_ metrics.TextMetric  = (*metrics.RougeL)(nil)
	_ metrics.MultiValued = (*metrics.RougeL)(nil)
)

var (
	_ metrics.Metric      = (*metrics.CPUUsage)(nil)
	_ metrics.MultiValued = (*metrics.MemoryUsage)(nil)
)
