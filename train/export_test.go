package train

// SetBucketLimit sets the gradient bucket size of data-parallel training
// and returns a function that restores it.
func SetBucketLimit(n int) (restore func()) {
	old := bucketLimit
	bucketLimit = n
	return func() { bucketLimit = old }
}

// BucketSizes returns the bytes of each gradient bucket a model's
// parameters make with buckets of limit bytes, and their names.
func BucketSizes(model any, limit int) (sizes []int, names [][]string) {
	b := newBuckets(model, limit)
	for _, m := range b.members {
		n := 0
		var ns []string
		for _, i := range m {
			n += b.params[i].NumElements() * b.params[i].DType().Size()
			ns = append(ns, b.names[i])
		}
		sizes = append(sizes, n)
		names = append(names, ns)
	}
	return sizes, names
}
