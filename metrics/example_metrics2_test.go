package metrics_test

import (
	"fmt"

	"github.com/kiln-ml/kiln/metrics"
	"github.com/kiln-ml/kiln/tensor"
)

// A segmentation model's logits [N, C, H, W] scored against masks of class
// indices, with 255 marking pixels to ignore; mIoU averages over the
// classes present.
func ExampleIoU() {
	dev := tensor.CPU()
	logits := tensor.FromFloat32s(dev, []float32{
		// class 0 scores, then class 1 scores, of one 2×3 image
		2, 2, 0, 0, 0, 0,
		0, 0, 1, 1, 1, 1,
	}, 1, 2, 2, 3)
	masks := tensor.FromInt64s(dev, []int64{0, 0, 0, 1, 1, 255}, 1, 2, 3)
	miou := metrics.NewIoU(2, metrics.Macro)
	miou.IgnoreIndex = 255
	dice := metrics.NewDice(2, metrics.Macro)
	dice.IgnoreIndex = 255
	for _, m := range []metrics.Metric{miou, dice} {
		if err := m.Update(logits, masks); err != nil {
			fmt.Println(err)
		}
	}
	fmt.Printf("%s %.3f per class %.3f\n", miou.Name(), miou.Value(), miou.PerClass())
	fmt.Printf("%s %.3f\n", dice.Name(), dice.Value())
	// Output:
	// miou 0.667 per class [0.667 0.667]
	// dice_macro 0.800
}

// PSNR and SSIM of a reconstruction against the original image.
func ExampleSSIM() {
	dev := tensor.CPU()
	const h, w = 16, 16
	orig, recon := make([]float32, h*w), make([]float32, h*w)
	for i := range orig {
		orig[i] = float32(i%w) / w               // a horizontal ramp
		recon[i] = orig[i] + 0.02*float32(i%3-1) // small noise
	}
	x := tensor.FromFloat32s(dev, recon, 1, 1, h, w)
	y := tensor.FromFloat32s(dev, orig, 1, 1, h, w)
	psnr, ssim := metrics.NewPSNR(1), metrics.NewSSIM(1)
	_ = psnr.Update(x, y)
	_ = ssim.Update(x, y)
	fmt.Printf("psnr %.1f dB, ssim %.3f\n", psnr.Value(), ssim.Value())
	// Output:
	// psnr 35.7 dB, ssim 0.986
}

// Precision and recall at k of a multilabel tagger.
func ExampleNewPrecisionAtK() {
	dev := tensor.CPU()
	scores := tensor.FromFloat32s(dev, []float32{0.9, 0.1, 0.8, 0.3, 0.2, 0.7, 0.6, 0.1}, 2, 4)
	tags := tensor.FromInt64s(dev, []int64{1, 0, 0, 1, 0, 1, 0, 0}, 2, 4)
	p := metrics.NewPrecisionAtK(2)
	if err := p.Update(scores, tags); err != nil {
		fmt.Println(err)
	}
	v := p.Values()
	fmt.Printf("precision@2 %.2f recall@2 %.2f\n", v["precision_at_2"], v["recall_at_2"])
	// Output:
	// precision@2 0.50 recall@2 0.67
}

// A confusion matrix accumulated over batches, printed as a table with
// class names.
func ExampleConfusionMatrix_Table() {
	dev := tensor.CPU()
	cm := metrics.NewConfusionMatrix(2)
	logits := tensor.FromFloat32s(dev, []float32{2, 0, 1, 3, 0, 1, 4, 1, 0, 2, 1, 0}, 6, 2)
	labels := tensor.FromInt64s(dev, []int64{0, 1, 0, 0, 1, 1}, 6)
	if err := cm.Update(logits, labels); err != nil {
		fmt.Println(err)
	}
	fmt.Print(cm.Table([]string{"cat", "dog"}))
	// Output:
	// confusion matrix: 6 items, accuracy 0.667 (rows: true class, columns: predicted)
	// true\pred   cat   dog recall
	// cat           2     1  0.667
	// dog           1     2  0.667
	// precision 0.667 0.667
}
