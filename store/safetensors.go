package store

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"sort"
	"sync"

	"github.com/kiln-ml/kiln/tensor"
)

// ErrCorrupt is wrapped by every error that reports a malformed safetensors
// file or checkpoint (truncated, a bad header, inconsistent offsets, a
// checksum mismatch); the message names the file and the defect.
var ErrCorrupt = errors.New("corrupt file")

// ErrUnsupported is wrapped by errors about valid safetensors content that
// Kiln has no tensor type for (dtypes such as I8, U16 or F8_E4M3).
var ErrUnsupported = errors.New("unsupported safetensors content")

// ErrNotFound is wrapped by errors about a tensor name a file does not hold.
var ErrNotFound = errors.New("tensor not found")

// MaxHeaderBytes caps the JSON header a reader accepts, as the reference
// implementation does, so a corrupt length cannot make it allocate
// gigabytes.
const MaxHeaderBytes = 100 << 20

// metadataKey is the header entry that holds the free-form string metadata.
const metadataKey = "__metadata__"

// kilnDTypes maps safetensors dtype names to Kiln dtypes.
var kilnDTypes = map[string]tensor.DType{
	"F32":  tensor.Float32,
	"F64":  tensor.Float64,
	"F16":  tensor.Float16,
	"BF16": tensor.BFloat16,
	"I64":  tensor.Int64,
	"I32":  tensor.Int32,
	"I16":  tensor.Int16,
	"I8":   tensor.Int8,
	"U8":   tensor.Uint8,
	"BOOL": tensor.Bool,
}

// otherDTypeSizes lists the element sizes of the dtypes the safetensors
// format defines but Kiln cannot hold, so files using them still validate.
var otherDTypeSizes = map[string]int{
	"U16": 2, "U32": 4, "U64": 8,
	"F8_E4M3": 1, "F8_E5M2": 1, "C64": 8,
}

// safetensorsName returns the safetensors name of a Kiln dtype.
func safetensorsName(d tensor.DType) (string, bool) {
	for k, v := range kilnDTypes {
		if v == d {
			return k, true
		}
	}
	return "", false
}

// TensorInfo describes one tensor of a safetensors file.
type TensorInfo struct {
	// DType is the Kiln dtype; meaningful only when Supported is true.
	DType tensor.DType
	// FileDType is the dtype as the file names it ("F32", "BF16", "I8", …).
	FileDType string
	// Supported reports whether Kiln has a tensor type for FileDType.
	Supported bool
	// Shape is the tensor's shape; empty for a 0-dimensional tensor.
	Shape []int
	// Size is the number of bytes the tensor occupies in the file.
	Size int64

	begin int64 // offset of the first byte, relative to the data section
}

// SafetensorsFile is an open safetensors file whose header has been
// validated; tensors are read from it one at a time, on demand. Where the
// platform allows (Linux, macOS, the BSDs) the file is memory-mapped and
// a tensor is copied from the page cache straight into its device buffer,
// with no intermediate copy on the heap; elsewhere each tensor is read
// with ReadAt. It is safe for concurrent use by several goroutines.
type SafetensorsFile struct {
	name     string
	r        io.ReaderAt
	file     *os.File // nil for content held in memory (Decode)
	mapped   []byte   // the whole content when memory-mapped or in memory; nil when read with ReadAt
	dataAt   int64    // file offset of the data section
	infos    map[string]TensorInfo
	names    []string
	metadata map[string]string

	mu     sync.RWMutex // held for reading while tensor bytes are read, for writing by Close
	closed bool
}

// corrupt returns an error wrapping ErrCorrupt that names the file.
func corrupt(name, format string, args ...any) error {
	return fmt.Errorf("store: read %s: %w: %s", name, ErrCorrupt, fmt.Sprintf(format, args...))
}

// readAt fills buf from r at off. A short read means the file is shorter
// than its header says (ErrCorrupt); other failures are I/O errors and are
// returned as such.
func readAt(name string, r io.ReaderAt, buf []byte, off int64, what string) error {
	n, err := r.ReadAt(buf, off)
	switch {
	case n == len(buf): // io.ReaderAt may report io.EOF with a full read
		return nil
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return corrupt(name, "file ends before %s", what)
	default:
		return fmt.Errorf("store: read %s: reading %s: %w", name, what, err)
	}
}

// OpenSafetensors opens the safetensors file at path and validates its
// header and offsets against the file's size. It reads no tensor data.
// It fails with an error wrapping ErrCorrupt for a malformed file, or with
// the operating system's error when the file cannot be opened. The caller
// must Close the returned file.
func OpenSafetensors(path string) (*SafetensorsFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("store: open %s: not a regular file", path)
	}
	return openFile(path, f, st.Size())
}

// openFile validates the header of the size-byte safetensors file f and
// maps it into memory where it can. It takes ownership of f: on error f is
// closed.
func openFile(name string, f *os.File, size int64) (*SafetensorsFile, error) {
	sf, err := parseSafetensors(name, f, size)
	if err != nil {
		f.Close()
		return nil, err
	}
	sf.file = f
	sf.mapped = mapFile(f, size)
	return sf, nil
}

// parseSafetensors reads and validates the header of the size-byte
// safetensors content in r; name is used in error messages.
func parseSafetensors(name string, r io.ReaderAt, size int64) (*SafetensorsFile, error) {
	var lenBuf [8]byte
	if size < 8 {
		return nil, corrupt(name, "file is %d bytes, shorter than the 8-byte header length", size)
	}
	if err := readAt(name, r, lenBuf[:], 0, "the header length"); err != nil {
		return nil, err
	}
	n := binary.LittleEndian.Uint64(lenBuf[:])
	if n > MaxHeaderBytes {
		return nil, corrupt(name, "header length %d exceeds the %d-byte limit", n, MaxHeaderBytes)
	}
	if int64(n) > size-8 {
		return nil, corrupt(name, "header length %d runs past the end of the file (%d bytes after the length)", n, size-8)
	}
	header := make([]byte, n)
	if err := readAt(name, r, header, 8, fmt.Sprintf("the %d-byte header", n)); err != nil {
		return nil, err
	}
	sf := &SafetensorsFile{name: name, r: r, dataAt: 8 + int64(n), infos: map[string]TensorInfo{}}
	if err := sf.parseHeader(header); err != nil {
		return nil, err
	}
	if err := sf.checkOffsets(size - sf.dataAt); err != nil {
		return nil, err
	}
	return sf, nil
}

// headerEntry is one tensor's entry in the JSON header.
type headerEntry struct {
	DType       *string  `json:"dtype"`
	Shape       *[]int64 `json:"shape"`
	DataOffsets *[]int64 `json:"data_offsets"`
}

// parseHeader decodes the JSON header into sf, token by token so that
// duplicate names are caught (a map would silently keep the last).
func (sf *SafetensorsFile) parseHeader(header []byte) error {
	name := sf.name
	if len(header) == 0 || header[0] != '{' {
		return corrupt(name, "header does not start with a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(header))
	dec.UseNumber()
	if _, err := dec.Token(); err != nil {
		return corrupt(name, "bad JSON header: %v", err)
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return corrupt(name, "bad JSON header: %v", err)
		}
		key, ok := tok.(string)
		if !ok {
			return corrupt(name, "bad JSON header: key %v is not a string", tok)
		}
		if seen[key] {
			return corrupt(name, "duplicate header entry %q", key)
		}
		seen[key] = true
		if key == metadataKey {
			var md map[string]string
			if err := dec.Decode(&md); err != nil {
				return corrupt(name, "bad %s (want an object of strings): %v", metadataKey, err)
			}
			sf.metadata = md
			continue
		}
		var e headerEntry
		if err := dec.Decode(&e); err != nil {
			return corrupt(name, "bad JSON entry for tensor %q: %v", key, err)
		}
		info, err := entryInfo(e)
		if err != nil {
			return corrupt(name, "tensor %q: %v", key, err)
		}
		sf.infos[key] = info
		sf.names = append(sf.names, key)
	}
	if _, err := dec.Token(); err != nil {
		return corrupt(name, "bad JSON header: %v", err)
	}
	// Only the reference writer's space padding may follow the object.
	if len(bytes.TrimLeft(header[dec.InputOffset():], " \t\r\n")) != 0 {
		return corrupt(name, "unexpected data after the JSON header object")
	}
	sort.Strings(sf.names)
	return nil
}

// entryInfo validates one header entry on its own: dtype, shape, and a
// byte range whose length matches the shape.
func entryInfo(e headerEntry) (TensorInfo, error) {
	var info TensorInfo
	if e.DType == nil || e.Shape == nil || e.DataOffsets == nil {
		return info, errors.New("entry needs dtype, shape and data_offsets")
	}
	info.FileDType = *e.DType
	elem := 0
	if d, ok := kilnDTypes[*e.DType]; ok {
		info.DType, info.Supported, elem = d, true, d.Size()
	} else if sz, ok := otherDTypeSizes[*e.DType]; ok {
		elem = sz
	} else {
		return info, fmt.Errorf("unknown dtype %q", *e.DType)
	}
	count := uint64(1)
	info.Shape = make([]int, len(*e.Shape))
	for i, s := range *e.Shape {
		if s < 0 {
			return info, fmt.Errorf("negative dimension in shape %v", *e.Shape)
		}
		hi, lo := bits.Mul64(count, uint64(s))
		if hi != 0 || lo > 1<<62 {
			return info, fmt.Errorf("shape %v is too large", *e.Shape)
		}
		count = lo
		info.Shape[i] = int(s)
	}
	hi, want := bits.Mul64(count, uint64(elem))
	if hi != 0 || want > 1<<62 {
		return info, fmt.Errorf("shape %v is too large", *e.Shape)
	}
	offs := *e.DataOffsets
	if len(offs) != 2 {
		return info, fmt.Errorf("data_offsets %v must hold two numbers", offs)
	}
	begin, end := offs[0], offs[1]
	if begin < 0 || end < begin {
		return info, fmt.Errorf("data_offsets [%d, %d] are not an ordered range", begin, end)
	}
	if uint64(end-begin) != want {
		return info, fmt.Errorf("%s shape %v needs %d bytes but data_offsets [%d, %d] hold %d", *e.DType, *e.Shape, want, begin, end, end-begin)
	}
	info.begin, info.Size = begin, end-begin
	return info, nil
}

// checkOffsets checks that the tensors tile the data section of dataLen
// bytes exactly, from 0 to its end, without gaps or overlaps, as the
// reference reader requires.
func (sf *SafetensorsFile) checkOffsets(dataLen int64) error {
	order := slices.Clone(sf.names)
	sort.SliceStable(order, func(i, j int) bool {
		a, b := sf.infos[order[i]], sf.infos[order[j]]
		if a.begin != b.begin {
			return a.begin < b.begin
		}
		return a.Size < b.Size
	})
	var at int64
	prev := ""
	for _, n := range order {
		info := sf.infos[n]
		switch {
		case info.begin < at:
			return corrupt(sf.name, "tensor %q (bytes %d to %d) overlaps tensor %q, which ends at %d", n, info.begin, info.begin+info.Size, prev, at)
		case info.begin > at:
			return corrupt(sf.name, "gap in the data section: tensor %q starts at byte %d, the previous tensor ends at %d", n, info.begin, at)
		case info.begin+info.Size > dataLen:
			return corrupt(sf.name, "tensor %q (bytes %d to %d) runs past the end of the file (data section holds %d bytes)", n, info.begin, info.begin+info.Size, dataLen)
		}
		at, prev = info.begin+info.Size, n
	}
	if at != dataLen {
		return corrupt(sf.name, "%d bytes after the last tensor (data section holds %d bytes, tensors %d)", dataLen-at, dataLen, at)
	}
	return nil
}

// Names returns the names of the file's tensors, sorted.
func (sf *SafetensorsFile) Names() []string { return slices.Clone(sf.names) }

// Info returns the description of the named tensor, and false when the
// file holds no tensor of that name.
func (sf *SafetensorsFile) Info(name string) (TensorInfo, bool) {
	info, ok := sf.infos[name]
	info.Shape = slices.Clone(info.Shape)
	return info, ok
}

// Metadata returns a copy of the file's __metadata__ strings (empty when
// the file has none).
func (sf *SafetensorsFile) Metadata() map[string]string {
	out := make(map[string]string, len(sf.metadata))
	for k, v := range sf.metadata {
		out[k] = v
	}
	return out
}

// Tensor reads the named tensor onto dev, reading only that tensor's bytes.
// It fails with ErrNotFound for an unknown name, ErrUnsupported for a dtype
// Kiln cannot hold, ErrCorrupt if the file shrank or changed since it was
// opened or a BOOL tensor holds a byte other than 0 and 1 (which the
// header check cannot see), os.ErrClosed after Close, and with the tensor
// package's error if dev cannot allocate the tensor.
func (sf *SafetensorsFile) Tensor(name string, dev tensor.Device) (*tensor.Tensor, error) {
	info, ok := sf.infos[name]
	if !ok {
		return nil, fmt.Errorf("store: read %s: tensor %q: %w", sf.name, name, ErrNotFound)
	}
	if !info.Supported {
		return nil, fmt.Errorf("store: read %s: tensor %q: %w: Kiln has no dtype for %s", sf.name, name, ErrUnsupported, info.FileDType)
	}
	var out *tensor.Tensor
	what := fmt.Sprintf("tensor %q (%d bytes at %d)", name, info.Size, sf.dataAt+info.begin)
	err := sf.withBytes(info.begin, info.Size, what, func(raw []byte) error {
		if info.DType == tensor.Bool {
			// Kiln's kernels assume booleans are 0 or 1, as PyTorch writes them.
			for i, b := range raw {
				if b > 1 {
					return corrupt(sf.name, "BOOL tensor %q holds byte %d at element %d, not 0 or 1", name, b, i)
				}
			}
		}
		err := tensor.Try(func() {
			if len(info.Shape) == 0 {
				flat := tensor.FromBytes(dev, info.DType, raw, 1)
				out = flat.Reshape()
				flat.Release()
				return
			}
			out = tensor.FromBytes(dev, info.DType, raw, info.Shape...)
		})
		if err != nil {
			return fmt.Errorf("store: read %s: tensor %q: %w", sf.name, name, err)
		}
		return nil
	})
	if err != nil {
		if out != nil {
			out.Release()
		}
		return nil, err
	}
	return out, nil
}

// withBytes calls fn with the n bytes at offset off of the data section
// (what names them in errors). A memory-mapped file hands fn a slice of
// the mapping, after checking that the file still holds those bytes, and
// turns a fault while fn reads it (the file truncated meanwhile) into an
// ErrCorrupt error; otherwise the bytes are read into a buffer first. fn
// must not keep the slice.
func (sf *SafetensorsFile) withBytes(off, n int64, what string, fn func([]byte) error) error {
	sf.mu.RLock()
	defer sf.mu.RUnlock()
	if sf.closed {
		return fmt.Errorf("store: read %s: %s: %w", sf.name, what, os.ErrClosed)
	}
	at := sf.dataAt + off
	if sf.mapped == nil {
		if sf.r == nil {
			return fmt.Errorf("store: read %s: %s: the file is not open", sf.name, what)
		}
		buf := make([]byte, n)
		if n > 0 {
			if err := readAt(sf.name, sf.r, buf, at, what); err != nil {
				return err
			}
		}
		return fn(buf)
	}
	if sf.file == nil {
		return fn(sf.mapped[at : at+n]) // content held in memory: nothing can change it
	}
	// A mapped file that shrank raises SIGBUS on access: check the size
	// first (the usual case), and recover the fault should it shrink
	// between the check and the copy.
	st, err := sf.file.Stat()
	if err != nil {
		return fmt.Errorf("store: read %s: %s: %w", sf.name, what, err)
	}
	if st.Size() < at+n {
		return corrupt(sf.name, "file ends before %s", what)
	}
	return faultGuard(sf.name, what, func() error { return fn(sf.mapped[at : at+n]) })
}

// faultGuard runs fn, which reads memory-mapped bytes, turning the
// run-time fault of reading a page the file no longer has into an
// ErrCorrupt error instead of a crash.
func faultGuard(name, what string, fn func() error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(interface{ Addr() uintptr }); ok {
				err = corrupt(name, "the file changed while reading %s (fault reading its mapping)", what)
				return
			}
			panic(r)
		}
	}()
	return fn()
}

// Close closes the underlying file and releases its mapping. Tensors
// already read stay valid; reading more fails with os.ErrClosed. Closing
// twice is not an error.
func (sf *SafetensorsFile) Close() error {
	sf.mu.Lock()
	defer sf.mu.Unlock()
	if sf.closed {
		return nil
	}
	sf.closed = true
	var err error
	if sf.file != nil {
		if sf.mapped != nil {
			err = unmapFile(sf.mapped)
		}
		if cerr := sf.file.Close(); err == nil {
			err = cerr
		}
	}
	sf.mapped = nil
	return err
}

// readAll loads every tensor of sf onto dev, releasing what it loaded if
// any tensor fails.
func (sf *SafetensorsFile) readAll(dev tensor.Device) (map[string]*tensor.Tensor, map[string]string, error) {
	out := make(map[string]*tensor.Tensor, len(sf.names))
	for _, n := range sf.names {
		t, err := sf.Tensor(n, dev)
		if err != nil {
			for _, t := range out {
				t.Release()
			}
			return nil, nil, err
		}
		out[n] = t
	}
	return out, sf.Metadata(), nil
}

// ReadSafetensors loads every tensor of the safetensors file at path onto
// dev and returns them with the file's metadata. On any error it returns
// no tensors (those already loaded are released): ErrCorrupt for a
// malformed file, ErrUnsupported for a dtype Kiln cannot hold.
func ReadSafetensors(path string, dev tensor.Device) (map[string]*tensor.Tensor, map[string]string, error) {
	sf, err := OpenSafetensors(path)
	if err != nil {
		return nil, nil, err
	}
	defer sf.Close()
	return sf.readAll(dev)
}

// Decode is ReadSafetensors for safetensors content held in memory; name
// is used in error messages.
func Decode(name string, data []byte, dev tensor.Device) (map[string]*tensor.Tensor, map[string]string, error) {
	sf, err := parseSafetensors(name, bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, nil, err
	}
	sf.mapped = data
	return sf.readAll(dev)
}

// Encode writes tensors and metadata to w in the safetensors format, as
// the reference writer lays it out: the metadata first, then the tensors
// stored contiguously, ordered by element size (largest first) and then
// by name, with the header padded with spaces to a multiple of 8 bytes, so
// every tensor starts at a file offset that is a multiple of its element
// size (memory-mapping readers such as Hugging Face's need that). Non-contiguous tensors (transposed views) are
// written in row-major order. It fails on a nil or released tensor, a
// tensor named "__metadata__", or an error from w.
func Encode(w io.Writer, tensors map[string]*tensor.Tensor, metadata map[string]string) error {
	if err := encode(w, tensors, metadata); err != nil {
		return err
	}
	return nil
}

// encode is Encode with errors that do not yet say where they come from.
func encode(w io.Writer, tensors map[string]*tensor.Tensor, metadata map[string]string) error {
	names := make([]string, 0, len(tensors))
	for n := range tensors {
		names = append(names, n)
	}
	for _, n := range names {
		t := tensors[n]
		switch {
		case n == metadataKey:
			return fmt.Errorf("%q is reserved for metadata and cannot name a tensor", n)
		case t == nil:
			return fmt.Errorf("tensor %q is nil", n)
		case t.Released():
			return fmt.Errorf("tensor %q was released", n)
		}
		if _, ok := safetensorsName(t.DType()); !ok {
			return fmt.Errorf("tensor %q: %w: dtype %s", n, ErrUnsupported, t.DType())
		}
	}
	sort.Slice(names, func(i, j int) bool {
		si, sj := tensors[names[i]].DType().Size(), tensors[names[j]].DType().Size()
		if si != sj {
			return si > sj
		}
		return names[i] < names[j]
	})

	var hdr bytes.Buffer
	hdr.WriteByte('{')
	if len(metadata) > 0 {
		md, err := json.Marshal(metadata) // sorted keys
		if err != nil {
			return fmt.Errorf("metadata: %w", err)
		}
		hdr.WriteString(`"` + metadataKey + `":`)
		hdr.Write(md)
	}
	var at int64
	for i, n := range names {
		t := tensors[n]
		dt, _ := safetensorsName(t.DType())
		size := int64(t.NumElements()) * int64(t.DType().Size())
		key, _ := json.Marshal(n)
		shape, _ := json.Marshal(nonNil(t.Shape()))
		if i > 0 || len(metadata) > 0 {
			hdr.WriteByte(',')
		}
		fmt.Fprintf(&hdr, `%s:{"dtype":%q,"shape":%s,"data_offsets":[%d,%d]}`, key, dt, shape, at, at+size)
		at += size
	}
	hdr.WriteByte('}')
	for hdr.Len()%8 != 0 {
		hdr.WriteByte(' ')
	}

	var lenBuf [8]byte
	binary.LittleEndian.PutUint64(lenBuf[:], uint64(hdr.Len()))
	if _, err := w.Write(lenBuf[:]); err != nil {
		return err
	}
	if _, err := w.Write(hdr.Bytes()); err != nil {
		return err
	}
	for _, n := range names {
		var raw []byte
		if err := tensor.Try(func() { raw = tensors[n].Bytes() }); err != nil {
			return fmt.Errorf("tensor %q: %w", n, err)
		}
		if _, err := w.Write(raw); err != nil {
			return err
		}
	}
	return nil
}

// nonNil turns a nil shape into an empty one, so 0-d tensors encode as [].
func nonNil(s []int) []int {
	if s == nil {
		return []int{}
	}
	return s
}

// WriteSafetensors writes tensors and metadata to path in the safetensors
// format (see Encode). It writes a temporary file in the same directory,
// syncs it and renames it over path, so a crash leaves either the old file
// or the complete new one, never a partial file. On error the temporary
// file is removed and path is untouched.
func WriteSafetensors(path string, tensors map[string]*tensor.Tensor, metadata map[string]string) error {
	return writeAtomic(path, func(w io.Writer) error { return encode(w, tensors, metadata) })
}

// writeAtomic writes path with write through a synced temporary file in
// the same directory renamed over path (see WriteSafetensors).
func writeAtomic(path string, write func(io.Writer) error) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	tmp, err := os.CreateTemp(dir, "."+base+".tmp*")
	if err != nil {
		return fmt.Errorf("store: write %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	bw := bufio.NewWriterSize(tmp, 1<<20)
	if err := write(bw); err != nil {
		return fmt.Errorf("store: write %s: %w", path, err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("store: write %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("store: write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("store: write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("store: write %s: %w", path, err)
	}
	// Make the rename itself durable; not every platform can sync a directory.
	if d, derr := os.Open(dir); derr == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// CopyTo writes the tensors of sf, byte for byte and without decoding
// them (dtypes Kiln cannot hold included), to a new safetensors file at
// path with metadata in place of sf's own (pass sf.Metadata(), changed, to
// keep it); nil metadata writes none. Tensors keep their order and
// alignment in the data section. The data is streamed, never held in
// memory whole, and path is written atomically as WriteSafetensors does.
// It fails, leaving path untouched, when sf is closed, when sf's file
// shrank or changed since it was opened (ErrCorrupt), or on an I/O error.
// Writing over sf's own file is allowed: sf keeps reading the file it
// opened.
func (sf *SafetensorsFile) CopyTo(path string, metadata map[string]string) error {
	if sf.r == nil && sf.mapped == nil {
		return fmt.Errorf("store: write %s: the source safetensors file is not open", path)
	}
	order := slices.Clone(sf.names)
	sort.SliceStable(order, func(i, j int) bool { return sf.infos[order[i]].begin < sf.infos[order[j]].begin })
	var hdr bytes.Buffer
	hdr.WriteByte('{')
	if len(metadata) > 0 {
		md, err := json.Marshal(metadata) // sorted keys
		if err != nil {
			return fmt.Errorf("store: write %s: metadata: %w", path, err)
		}
		hdr.WriteString(`"` + metadataKey + `":`)
		hdr.Write(md)
	}
	var dataLen int64
	for i, n := range order {
		info := sf.infos[n]
		key, _ := json.Marshal(n)
		shape, _ := json.Marshal(nonNil(info.Shape))
		if i > 0 || len(metadata) > 0 {
			hdr.WriteByte(',')
		}
		fmt.Fprintf(&hdr, `%s:{"dtype":%q,"shape":%s,"data_offsets":[%d,%d]}`, key, info.FileDType, shape, info.begin, info.begin+info.Size)
		dataLen = max(dataLen, info.begin+info.Size)
	}
	hdr.WriteByte('}')
	for hdr.Len()%8 != 0 {
		hdr.WriteByte(' ')
	}
	return writeAtomic(path, func(w io.Writer) error {
		var lenBuf [8]byte
		binary.LittleEndian.PutUint64(lenBuf[:], uint64(hdr.Len()))
		if _, err := w.Write(lenBuf[:]); err != nil {
			return err
		}
		if _, err := w.Write(hdr.Bytes()); err != nil {
			return err
		}
		const chunk = 4 << 20
		for at := int64(0); at < dataLen; at += chunk {
			n := min(chunk, dataLen-at)
			what := fmt.Sprintf("data bytes %d to %d", at, at+n)
			if err := sf.withBytes(at, n, what, func(b []byte) error {
				_, err := w.Write(b)
				return err
			}); err != nil {
				return err
			}
		}
		return nil
	})
}
