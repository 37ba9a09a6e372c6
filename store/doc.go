// Package store reads and writes model weights and checkpoints.
//
// This file set covers safetensors, the format Hugging Face and PyTorch
// tools share: an 8-byte little-endian header length, a JSON header naming
// each tensor's dtype, shape and byte range, then the raw little-endian
// tensor bytes. WriteSafetensors writes a file atomically (temporary file,
// fsync, rename); ReadSafetensors loads every tensor; OpenSafetensors
// validates the header once and then reads single tensors on demand with
// ReadAt, so a large file never has to fit in memory.
//
//	dev := tensor.CPU()
//	w := tensor.Randn(dev, 128, 784)
//	err := store.WriteSafetensors("model.safetensors",
//		map[string]*tensor.Tensor{"l1.weight": w},
//		map[string]string{"format": "pt"})
//	...
//	f, err := store.OpenSafetensors("model.safetensors")
//	...
//	defer f.Close()
//	w2, err := f.Tensor("l1.weight", dev)
//
// Checkpoints (SaveCheckpoint, LoadCheckpoint) are directories: the model's
// state dict as model.safetensors (PyTorch's names and layouts, so PyTorch
// and Hugging Face tools read it as it is), the optimizer's tensors as
// optimizer.safetensors, everything else (schedule, RNG, data-loader
// position, config, metrics, the trainer's own state) in state.json, and
// manifest.json listing each file's size and sha256. A checkpoint is
// written under a temporary name, fsynced and renamed into place, and
// verified against its manifest before anything is loaded, so a crash
// never leaves half a checkpoint and a damaged one is refused whole.
//
// Every malformed file (truncated, a header that is not JSON, offsets out
// of range or overlapping, an unknown dtype, …) is reported as an error
// wrapping ErrCorrupt that names the file and the defect; reading never
// panics and never returns part of a file's tensors.
//
// The package deliberately does not convert dtypes on load, map PyTorch
// parameter names to Kiln's, or write dtypes Kiln has no tensor type for
// (I8, U16, F8_*): tensors of those dtypes in a file are listed by Names
// and Info but reading them fails with ErrUnsupported.
package store
