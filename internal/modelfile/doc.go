// Package modelfile tells model files apart by their content (safetensors,
// GGUF, ONNX) and writes the human-readable and JSON reports of
// safetensors and GGUF files that `kiln inspect` prints and the
// workbench's file browser shows, so that both say the same thing.
package modelfile
