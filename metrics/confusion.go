package metrics

import (
	"fmt"
	"strconv"
	"strings"
)

// This file gives ConfusionMatrix (classify.go) its readable forms: a
// table for logs and notebooks, and normalised rates.

// String returns the matrix as a text table with class indices as labels;
// see Table.
func (m *ConfusionMatrix) String() string { return m.Table(nil) }

// Table returns the matrix as a text table: a header line with the item
// count and accuracy, one row per true class with its counts by predicted
// class and its recall, and a last row with each predicted class's
// precision (a rate whose denominator is 0 shows as "-"). names label the
// classes; nil, or a list of another length than NumClasses, labels them
// by index.
//
//	confusion matrix: 6 items, accuracy 0.667 (rows: true class, columns: predicted)
//	true\pred   cat   dog recall
//	cat           2     1  0.667
//	dog           1     2  0.667
//	precision 0.667 0.667
func (m *ConfusionMatrix) Table(names []string) string {
	k := max(m.NumClasses, 0)
	if len(names) != k {
		names = make([]string, k)
		for i := range names {
			names[i] = strconv.Itoa(i)
		}
	}
	mat := m.Matrix()
	rowSum, colSum := make([]int64, k), make([]int64, k)
	var total int64
	for i := range k {
		for j := range k {
			rowSum[i] += mat[i][j]
			colSum[j] += mat[i][j]
			total += mat[i][j]
		}
	}
	rate := func(num, den int64) string {
		if den == 0 {
			return "-"
		}
		return strconv.FormatFloat(float64(num)/float64(den), 'f', 3, 64)
	}
	cells := make([][]string, 0, k+2)
	header := append([]string{`true\pred`}, names...)
	cells = append(cells, append(header, "recall"))
	for i := range k {
		row := []string{names[i]}
		for j := range k {
			row = append(row, strconv.FormatInt(mat[i][j], 10))
		}
		cells = append(cells, append(row, rate(mat[i][i], rowSum[i])))
	}
	prec := []string{"precision"}
	for j := range k {
		prec = append(prec, rate(mat[j][j], colSum[j]))
	}
	cells = append(cells, prec)
	// column widths: the first column is left-aligned, the others right
	widths := make([]int, k+2)
	for _, row := range cells {
		for c, s := range row {
			widths[c] = max(widths[c], len(s))
		}
	}
	var b strings.Builder
	var trace int64
	for i := range k {
		trace += mat[i][i]
	}
	fmt.Fprintf(&b, "confusion matrix: %d items, accuracy %s (rows: true class, columns: predicted)\n", total,
		rate(trace, total))
	for _, row := range cells {
		for c, s := range row {
			switch {
			case c == 0:
				fmt.Fprintf(&b, "%-*s", widths[0], s)
			default:
				fmt.Fprintf(&b, " %*s", widths[c], s)
			}
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// Normalized returns the matrix as rates, as scikit-learn's
// confusion_matrix(normalize=…): over "true" each row sums to 1 (row i
// holds how class i was predicted), over "pred" each column does, over
// "all" the whole matrix does. A row, column or matrix of zeros stays 0.
// It panics for another value of over.
func (m *ConfusionMatrix) Normalized(over string) [][]float64 {
	mat := m.Matrix()
	k := len(mat)
	out := make([][]float64, k)
	for i := range out {
		out[i] = make([]float64, k)
	}
	var total float64
	for i := range k {
		for j := range k {
			total += float64(mat[i][j])
		}
	}
	for i := range k {
		for j := range k {
			var den float64
			switch over {
			case "true":
				for q := range k {
					den += float64(mat[i][q])
				}
			case "pred":
				for q := range k {
					den += float64(mat[q][j])
				}
			case "all":
				den = total
			default:
				panic(fmt.Sprintf("metrics.ConfusionMatrix.Normalized: over = %q, want \"true\", \"pred\" or \"all\"", over))
			}
			out[i][j] = ratio(float64(mat[i][j]), den)
		}
	}
	return out
}
