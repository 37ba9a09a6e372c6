package nn

// PackSelfAttention exposes packSelfAttention to the external tests.
var PackSelfAttention = &packSelfAttention
