package metrics

// Snapshot returns the current values of ms by name: Values for
// MultiValued metrics, Name → Value for the others. A later metric with
// the same name overwrites an earlier one.
func Snapshot(ms ...Metric) map[string]float64 {
	out := map[string]float64{}
	for _, m := range ms {
		if mv, ok := m.(MultiValued); ok {
			for k, v := range mv.Values() {
				out[k] = v
			}
			continue
		}
		out[m.Name()] = m.Value()
	}
	return out
}

// ResetAll resets every metric in ms (at the start of an epoch).
func ResetAll(ms ...Metric) {
	for _, m := range ms {
		m.Reset()
	}
}
