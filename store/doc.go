// Package store reads and writes model weights and checkpoints.
//
// This file set covers safetensors, the format Hugging Face and PyTorch
// tools share: an 8-byte little-endian header length, a JSON header naming
// each tensor's dtype, shape and byte range, then the raw little-endian
// tensor bytes. WriteSafetensors writes a file atomically (temporary file,
// fsync, rename); ReadSafetensors loads every tensor; OpenSafetensors
// validates the header once and then reads single tensors on demand, so a
// large file never has to fit in memory: the file is memory-mapped where
// the platform allows (Linux, macOS, the BSDs), and each tensor is copied
// from the page cache straight into its device buffer; elsewhere it is
// read with ReadAt. SafetensorsFile.CopyTo streams a file's tensors,
// undecoded, into a new file with other metadata.
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
// position, config, metrics, the trainer's own state) in state.json, and manifest.json listing each
// file's size and sha256. A checkpoint is written under a temporary name,
// fsynced and renamed into place, and verified against its manifest before
// anything is loaded, so a crash never leaves half a checkpoint and a
// damaged one is refused whole. OpenCheckpoint verifies a checkpoint the
// same way, streaming each file through SHA-256, and then reads its
// tensors on demand, like OpenSafetensors.
//
// # Models
//
// LoadModel loads a safetensors file, or the model of a checkpoint
// directory, into a model for inference, strictly: every parameter and
// buffer must get a tensor of its shape and dtype and every key must name
// one, all of which is checked before anything is written, so a failed
// load names every offending key and leaves the model as it was.
// SaveModel writes a model's state dict under PyTorch's names and
// layouts. (These live here rather than as nn.Load and nn.Save because
// nn sits below store in Kiln's package order and must not import it.)
//
// A NameMap loads PyTorch state dicts whose names or layouts differ from
// the Kiln model's: prefix or regular-expression rename rules (strip
// DataParallel's "module.", map "features.0." to "Conv1."), transposed
// or permuted tensors, keys to ignore; its Save writes files the PyTorch
// module loads with load_state_dict(strict=True):
//
//	m := store.NameMap{
//		Rules:     []store.NameRule{{From: "module."}, {From: "features.0.", To: "Conv1."}},
//		Transpose: []string{`^Proj\.weight$`},
//	}
//	err := m.Load(model, "torch.safetensors")
//
// Every malformed file (truncated, a header that is not JSON, offsets out
// of range or overlapping, an unknown dtype, …) is reported as an error
// wrapping ErrCorrupt that names the file and the defect; reading never
// panics and never returns part of a file's tensors.
//
// The package deliberately does not convert dtypes on load (except
// between floating-point dtypes where a NameMap asks for it), guess name
// mappings, or decode dtypes Kiln has no tensor type for (I8, U16, F8_*):
// tensors of those dtypes in a file are listed by Names and Info, and
// copied by CopyTo, but reading them fails with ErrUnsupported.
package store
