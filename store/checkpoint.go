package store

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/kiln-ml/kiln/tensor"
)

// CheckpointFormat is the format name a checkpoint's manifest.json holds.
const CheckpointFormat = "kiln-checkpoint"

// CheckpointVersion is the version of the checkpoint directory layout that
// SaveCheckpoint writes and the only one LoadCheckpoint accepts.
const CheckpointVersion = 1

// The files of a checkpoint directory.
const (
	checkpointModel     = "model.safetensors"
	checkpointOptimizer = "optimizer.safetensors"
	checkpointState     = "state.json"
	checkpointManifest  = "manifest.json"
)

// checkpointFiles lists the files a manifest must describe, in its order.
var checkpointFiles = []string{checkpointModel, checkpointOptimizer, checkpointState}

// maxManifestBytes caps the manifest a loader reads.
const maxManifestBytes = 1 << 20

// RNGState is the position of a counter-based random stream: the seed and
// how far the stream has advanced.
type RNGState struct {
	Seed     uint64 `json:"seed"`
	Position uint64 `json:"position"`
}

// Checkpoint is everything a training run needs to resume: the model's
// state dict (PyTorch names and layouts), the optimizer's state (its
// tensors and the JSON of the rest, as optim.State splits them), the
// learning-rate schedule's JSON, the random stream's position, the epoch
// and step, the run's configuration as JSON, the latest metrics, and any
// further state the program that saves it needs to resume (Extra: package
// train keeps its loop's position within the epoch, running loss and
// history there).
//
// JSON fields (OptimizerJSON, Schedule, Config, Extra) hold any valid JSON
// value; nil means none and loads back as nil. A checkpoint without Extra
// writes a state.json without the "extra" key.
type Checkpoint struct {
	Model         map[string]*tensor.Tensor
	Optimizer     map[string]*tensor.Tensor
	OptimizerJSON []byte
	Schedule      []byte
	RNG           RNGState
	Epoch         int
	Step          int
	Config        []byte
	Metrics       map[string]float64
	Extra         []byte
}

// Release releases the checkpoint's model and optimizer tensors.
func (c *Checkpoint) Release() {
	for _, t := range c.Model {
		t.Release()
	}
	for _, t := range c.Optimizer {
		t.Release()
	}
}

// manifestFile describes one file of a checkpoint.
type manifestFile struct {
	Name   string `json:"name"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// manifest is the content of manifest.json.
type manifest struct {
	Format  string         `json:"format"`
	Version int            `json:"version"`
	Created string         `json:"created"`
	Files   []manifestFile `json:"files"`
}

// metric is a float64 that JSON-encodes NaN and ±Inf as the strings
// "NaN", "+Inf" and "-Inf".
type metric float64

func (m metric) MarshalJSON() ([]byte, error) {
	f := float64(m)
	switch {
	case math.IsNaN(f):
		return []byte(`"NaN"`), nil
	case math.IsInf(f, 1):
		return []byte(`"+Inf"`), nil
	case math.IsInf(f, -1):
		return []byte(`"-Inf"`), nil
	}
	return json.Marshal(f)
}

func (m *metric) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		switch s {
		case "NaN":
			*m = metric(math.NaN())
		case "+Inf":
			*m = metric(math.Inf(1))
		case "-Inf":
			*m = metric(math.Inf(-1))
		default:
			return fmt.Errorf("bad metric value %q", s)
		}
		return nil
	}
	var f float64
	if err := json.Unmarshal(b, &f); err != nil {
		return err
	}
	*m = metric(f)
	return nil
}

// stateFile is the content of state.json.
type stateFile struct {
	Epoch     int               `json:"epoch"`
	Step      int               `json:"step"`
	RNG       RNGState          `json:"rng"`
	Metrics   map[string]metric `json:"metrics"`
	Optimizer json.RawMessage   `json:"optimizer"`
	Schedule  json.RawMessage   `json:"schedule"`
	Config    json.RawMessage   `json:"config"`
	Extra     json.RawMessage   `json:"extra,omitempty"`
}

// rawJSON returns b as a JSON value for state.json: null for nil.
func rawJSON(field string, b []byte) (json.RawMessage, error) {
	if b == nil {
		return json.RawMessage("null"), nil
	}
	if !json.Valid(b) {
		return nil, fmt.Errorf("%s is not valid JSON", field)
	}
	return json.RawMessage(b), nil
}

// fromRawJSON turns a state.json value back into a Checkpoint field: nil
// for null or absent.
func fromRawJSON(m json.RawMessage) []byte {
	if len(m) == 0 || string(m) == "null" {
		return nil
	}
	return slices.Clone([]byte(m))
}

// SaveCheckpoint writes c as a checkpoint directory at dir: the model's
// tensors to model.safetensors, the optimizer's to optimizer.safetensors,
// everything else to state.json, and manifest.json (format, version,
// creation time, each file's size and SHA-256). It writes into a temporary
// sibling directory (".<base>.tmp-*"), syncs every file and the directory,
// then renames it into place; an existing checkpoint at dir is first
// renamed aside (".<base>.old-*") and removed once the new one is in
// place. A crash therefore leaves either the old or the new checkpoint at
// dir (or, between the two renames, none at dir with both intact beside
// it, which LoadCheckpoint finds and the next SaveCheckpoint moves back),
// plus leftover siblings that LoadCheckpoint otherwise ignores and the
// next SaveCheckpoint to dir removes. Concurrent saves to the same dir
// are not supported.
//
// An existing dir must be a checkpoint (a directory holding
// manifest.json) or an empty directory; SaveCheckpoint refuses to replace
// anything else (a file, a directory of other things).
//
// It fails, leaving dir as it was, on a nil or released tensor, a dtype
// the safetensors format cannot hold, JSON fields that are not valid JSON,
// or an I/O error.
func SaveCheckpoint(dir string, c Checkpoint) (err error) {
	dir = filepath.Clean(dir)
	fail := func(err error) error { return fmt.Errorf("store: save checkpoint %s: %w", dir, err) }
	st := stateFile{Epoch: c.Epoch, Step: c.Step, RNG: c.RNG, Metrics: map[string]metric{}}
	for k, v := range c.Metrics {
		st.Metrics[k] = metric(v)
	}
	if st.Optimizer, err = rawJSON("OptimizerJSON", c.OptimizerJSON); err != nil {
		return fail(err)
	}
	if st.Schedule, err = rawJSON("Schedule", c.Schedule); err != nil {
		return fail(err)
	}
	if st.Config, err = rawJSON("Config", c.Config); err != nil {
		return fail(err)
	}
	if c.Extra != nil {
		if st.Extra, err = rawJSON("Extra", c.Extra); err != nil {
			return fail(err)
		}
	}
	stateJSON, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return fail(err)
	}

	parent, base := filepath.Split(dir)
	if parent == "" {
		parent = "."
	}
	removeLeftovers(parent, base)
	if err := replaceable(dir); err != nil {
		return fail(err)
	}
	tmp, err := os.MkdirTemp(parent, "."+base+".tmp-")
	if err != nil {
		return fail(err)
	}
	defer func() {
		if err != nil {
			os.RemoveAll(tmp)
		}
	}()

	man := manifest{Format: CheckpointFormat, Version: CheckpointVersion, Created: time.Now().UTC().Format(time.RFC3339Nano)}
	writers := []struct {
		name  string
		write func(io.Writer) error
	}{
		{checkpointModel, func(w io.Writer) error { return encode(w, nonNilMap(c.Model), nil) }},
		{checkpointOptimizer, func(w io.Writer) error { return encode(w, nonNilMap(c.Optimizer), nil) }},
		{checkpointState, func(w io.Writer) error { _, err := w.Write(stateJSON); return err }},
	}
	for _, w := range writers {
		f, err := writeSynced(filepath.Join(tmp, w.name), w.write)
		if err != nil {
			return fail(fmt.Errorf("%s: %w", w.name, err))
		}
		f.Name = w.name
		man.Files = append(man.Files, f)
	}
	manJSON, err := json.MarshalIndent(man, "", "  ")
	if err != nil {
		return fail(err)
	}
	if _, err := writeSynced(filepath.Join(tmp, checkpointManifest), func(w io.Writer) error {
		_, err := w.Write(manJSON)
		return err
	}); err != nil {
		return fail(fmt.Errorf("%s: %w", checkpointManifest, err))
	}
	if err := syncDir(tmp); err != nil {
		return fail(err)
	}

	old := ""
	if _, serr := os.Lstat(dir); serr == nil {
		old = filepath.Join(parent, "."+base+".old-"+filepath.Base(tmp)[len(base)+6:])
		if err := os.Rename(dir, old); err != nil {
			return fail(err)
		}
	}
	if err := os.Rename(tmp, dir); err != nil {
		if old != "" {
			os.Rename(old, dir) // put the previous checkpoint back
		}
		return fail(err)
	}
	syncDir(parent)
	if old != "" {
		os.RemoveAll(old)
	}
	return nil
}

// replaceable checks that SaveCheckpoint may replace what is at dir:
// nothing, an empty directory, or a checkpoint (a directory holding
// manifest.json). Anything else (a file, a directory of other things) is
// refused, so a mistyped path never deletes a user's data.
func replaceable(dir string) error {
	fi, err := os.Lstat(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s exists and is not a directory; refusing to replace it", dir)
	}
	if mf, err := os.Lstat(filepath.Join(dir, checkpointManifest)); err == nil && mf.Mode().IsRegular() {
		return nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	if len(entries) > 0 {
		return fmt.Errorf("%s is a non-empty directory without %s, not a checkpoint; refusing to replace it", dir, checkpointManifest)
	}
	return nil
}

// nonNilMap returns m, or an empty map for nil.
func nonNilMap(m map[string]*tensor.Tensor) map[string]*tensor.Tensor {
	if m == nil {
		return map[string]*tensor.Tensor{}
	}
	return m
}

// interrupted returns the checkpoint that a SaveCheckpoint to
// parent/base interrupted between its two renames left beside the missing
// directory: the new one (".<base>.tmp-S", complete, since the old one is
// set aside only after it is synced) when its set-aside twin
// ".<base>.old-S" exists, else that set-aside previous one. It returns ""
// when there is none (or more than one, which SaveCheckpoint never leaves).
func interrupted(parent, base string) string {
	olds, _ := filepath.Glob(filepath.Join(parent, globEscape("."+base+".old-")+"*"))
	if len(olds) != 1 {
		return ""
	}
	suffix := strings.TrimPrefix(filepath.Base(olds[0]), "."+base+".old-")
	tmp := filepath.Join(parent, "."+base+".tmp-"+suffix)
	if fi, err := os.Stat(filepath.Join(tmp, checkpointManifest)); err == nil && fi.Mode().IsRegular() {
		return tmp
	}
	return olds[0]
}

// removeLeftovers removes the temporary and set-aside siblings that an
// interrupted SaveCheckpoint to parent/base may have left. When the
// checkpoint itself is missing because the save stopped between its two
// renames, it first moves the surviving checkpoint (see interrupted) back
// into place.
func removeLeftovers(parent, base string) {
	dir := filepath.Join(parent, base)
	if _, err := os.Lstat(dir); errors.Is(err, os.ErrNotExist) {
		if p := interrupted(parent, base); p != "" {
			os.Rename(p, dir)
		}
	}
	for _, kind := range []string{".tmp-", ".old-"} {
		matches, _ := filepath.Glob(filepath.Join(parent, globEscape("."+base+kind)+"*"))
		for _, m := range matches {
			os.RemoveAll(m)
		}
	}
}

// globEscape escapes the characters filepath.Match treats specially.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// hashWriter counts and hashes what passes through it.
type hashWriter struct {
	n int64
	h hash.Hash
}

func (h *hashWriter) Write(p []byte) (int, error) {
	h.n += int64(len(p))
	return h.h.Write(p)
}

// writeSynced creates path, writes it with write, syncs and closes it, and
// returns its size and SHA-256.
func writeSynced(path string, write func(io.Writer) error) (mf manifestFile, err error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return mf, err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	hw := &hashWriter{h: sha256.New()}
	bw := bufio.NewWriterSize(io.MultiWriter(f, hw), 1<<20)
	if err := write(bw); err != nil {
		return mf, err
	}
	if err := bw.Flush(); err != nil {
		return mf, err
	}
	if err := f.Sync(); err != nil {
		return mf, err
	}
	return manifestFile{Size: hw.n, SHA256: hex.EncodeToString(hw.h.Sum(nil))}, nil
}

// syncDir makes a directory's entries durable; platforms that cannot sync
// a directory are not an error.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	d.Sync() // best effort: some platforms and file systems cannot sync a directory
	return nil
}

// checkpointCorrupt returns an error wrapping ErrCorrupt that names the
// checkpoint and the file.
func checkpointCorrupt(dir, file, format string, args ...any) error {
	return fmt.Errorf("store: load checkpoint %s: %w: %s: %s", dir, ErrCorrupt, file, fmt.Sprintf(format, args...))
}

// LoadCheckpoint loads the checkpoint directory dir (see SaveCheckpoint)
// onto dev. It first opens it with OpenCheckpoint, which verifies the
// manifest completely: a known format and version, and every file it
// lists present with the listed size and SHA-256; only then does it decode
// anything, tensor by tensor, from the files it verified (kept open since,
// so a checkpoint renamed over this one meanwhile is not read). Files in
// dir that the manifest does not list (a README, a leftover) are allowed
// and ignored; the manifest itself must list exactly model.safetensors,
// optimizer.safetensors and state.json.
//
// Any problem with the content (a missing file, a size or checksum
// mismatch, a truncated file, an unknown version, JSON that does not
// parse) returns an error wrapping ErrCorrupt that names the file and
// what is wrong; a dtype Kiln cannot hold wraps ErrUnsupported; other I/O
// failures are returned as such. On error no tensors are returned (those
// loaded are released). It never panics on bad input.
//
// When dir is missing because a SaveCheckpoint stopped between setting
// the previous checkpoint aside and renaming the new one in, it loads the
// newest complete one of the two from where it lies (the next
// SaveCheckpoint moves it back); errors then name that path.
func LoadCheckpoint(dir string, dev tensor.Device) (*Checkpoint, error) {
	r, err := OpenCheckpoint(dir)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	info := r.Info
	c := &Checkpoint{
		OptimizerJSON: info.OptimizerJSON,
		Schedule:      info.Schedule,
		Config:        info.Config,
		Extra:         info.Extra,
		RNG:           info.RNG,
		Epoch:         info.Epoch,
		Step:          info.Step,
		Metrics:       info.Metrics,
	}
	c.Model, _, err = r.Model.readAll(dev)
	if err != nil {
		return nil, fmt.Errorf("store: load checkpoint %s: %w", info.Dir, err)
	}
	c.Optimizer, _, err = r.Optimizer.readAll(dev)
	if err != nil {
		c.Release()
		return nil, fmt.Errorf("store: load checkpoint %s: %w", info.Dir, err)
	}
	return c, nil
}

// CheckpointFile describes one file of a checkpoint as its manifest lists
// it.
type CheckpointFile struct {
	Name   string // file name inside the checkpoint directory
	Size   int64  // size in bytes
	SHA256 string // lower-case hex SHA-256 of the content
}

// CheckpointInfo is what a checkpoint directory says about itself besides
// its tensors: its manifest and its state.json.
type CheckpointInfo struct {
	// Dir is the directory read: the one asked for, or the complete
	// checkpoint an interrupted save left beside it (see LoadCheckpoint).
	Dir string
	// Created is the manifest's creation time (RFC 3339, UTC).
	Created string
	// Version is the checkpoint layout version (CheckpointVersion).
	Version int
	// Files lists the files the manifest describes, all verified.
	Files []CheckpointFile

	Epoch         int
	Step          int
	RNG           RNGState
	Metrics       map[string]float64
	OptimizerJSON []byte // nil when none
	Schedule      []byte // nil when none
	Config        []byte // nil when none
	Extra         []byte // nil when none
}

// CheckpointReader is an open, verified checkpoint directory whose
// tensors are read on demand, one at a time, from its two safetensors
// files (see SafetensorsFile). Close it when done.
type CheckpointReader struct {
	Info      CheckpointInfo
	Model     *SafetensorsFile // model.safetensors: the state dict, PyTorch names and layouts
	Optimizer *SafetensorsFile // optimizer.safetensors: the optimizer's tensors
}

// Close closes the checkpoint's files. Tensors already read stay valid.
func (r *CheckpointReader) Close() error {
	var err error
	for _, f := range []*SafetensorsFile{r.Model, r.Optimizer} {
		if f == nil {
			continue
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	return err
}

// OpenCheckpoint opens the checkpoint directory dir (see SaveCheckpoint)
// and verifies it as LoadCheckpoint does (the manifest, then every file's
// size and SHA-256, streamed from the open files so that no file is held
// in memory whole), parses state.json and validates both safetensors
// headers, but reads no tensor. It fails as LoadCheckpoint does, and
// finds the checkpoint an interrupted save left as LoadCheckpoint does.
func OpenCheckpoint(dir string) (*CheckpointReader, error) {
	dir = filepath.Clean(dir)
	if _, err := os.Lstat(dir); errors.Is(err, os.ErrNotExist) {
		parent, base := filepath.Split(dir)
		if p := interrupted(parent, base); p != "" {
			return openCheckpoint(p)
		}
	}
	return openCheckpoint(dir)
}

// openCheckpoint is OpenCheckpoint without the recovery of an interrupted
// save.
func openCheckpoint(dir string) (_ *CheckpointReader, err error) {
	manPath := filepath.Join(dir, checkpointManifest)
	manBytes, err := readCapped(manPath, maxManifestBytes)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			if _, derr := os.Stat(dir); derr != nil {
				return nil, fmt.Errorf("store: load checkpoint %s: %w", dir, derr)
			}
			return nil, checkpointCorrupt(dir, checkpointManifest, "missing")
		}
		if errors.Is(err, errTooLarge) {
			return nil, checkpointCorrupt(dir, checkpointManifest, "larger than %d bytes", maxManifestBytes)
		}
		return nil, fmt.Errorf("store: load checkpoint %s: %w", dir, err)
	}
	man, err := parseManifest(manBytes)
	if err != nil {
		return nil, checkpointCorrupt(dir, checkpointManifest, "%v", err)
	}
	r := &CheckpointReader{Info: CheckpointInfo{Dir: dir, Created: man.Created, Version: man.Version}}
	defer func() {
		if err != nil {
			r.Close()
		}
	}()
	// Verify every file before parsing any, so that a damaged file is
	// reported as a checksum mismatch rather than as whatever its damage
	// looks like to a parser.
	opened := map[string]*os.File{}
	defer func() {
		for _, f := range opened {
			f.Close()
		}
	}()
	for _, f := range man.Files {
		fh, err := openVerified(dir, f)
		if err != nil {
			return nil, err
		}
		opened[f.Name] = fh
		r.Info.Files = append(r.Info.Files, CheckpointFile{Name: f.Name, Size: f.Size, SHA256: strings.ToLower(f.SHA256)})
	}
	stateBytes := make([]byte, sizeOf(man, checkpointState))
	if _, err := opened[checkpointState].ReadAt(stateBytes, 0); err != nil && !(errors.Is(err, io.EOF) && len(stateBytes) == 0) {
		return nil, checkpointCorrupt(dir, checkpointState, "truncated while reading: %v", err)
	}
	st, err := parseState(stateBytes)
	if err != nil {
		return nil, checkpointCorrupt(dir, checkpointState, "%v", err)
	}
	r.Info.Epoch, r.Info.Step, r.Info.RNG = st.Epoch, st.Step, st.RNG
	r.Info.OptimizerJSON = fromRawJSON(st.Optimizer)
	r.Info.Schedule = fromRawJSON(st.Schedule)
	r.Info.Config = fromRawJSON(st.Config)
	r.Info.Metrics = make(map[string]float64, len(st.Metrics))
	r.Info.Extra = fromRawJSON(st.Extra)
	for k, v := range st.Metrics {
		r.Info.Metrics[k] = float64(v)
	}
	for _, f := range []struct {
		name string
		dst  **SafetensorsFile
	}{{checkpointModel, &r.Model}, {checkpointOptimizer, &r.Optimizer}} {
		fh := opened[f.name]
		delete(opened, f.name) // openFile owns it now
		sf, err := openFile(filepath.Join(dir, f.name), fh, sizeOf(man, f.name))
		if err != nil {
			return nil, fmt.Errorf("store: load checkpoint %s: %w", dir, err)
		}
		*f.dst = sf
	}
	return r, nil
}

// sizeOf returns the size the manifest lists for the named file.
func sizeOf(m *manifest, name string) int64 {
	for _, f := range m.Files {
		if f.Name == name {
			return f.Size
		}
	}
	return 0
}

var errTooLarge = errors.New("file too large")

// readCapped reads the file at path, failing with errTooLarge when it is
// longer than limit bytes.
func readCapped(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, errTooLarge
	}
	return b, nil
}

// parseManifest decodes and validates manifest.json.
func parseManifest(b []byte) (*manifest, error) {
	var m manifest
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("bad JSON: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("bad JSON: data after the manifest object")
	}
	if m.Format != CheckpointFormat {
		return nil, fmt.Errorf("format is %q, want %q", m.Format, CheckpointFormat)
	}
	if m.Version != CheckpointVersion {
		return nil, fmt.Errorf("unknown version %d (this Kiln reads version %d)", m.Version, CheckpointVersion)
	}
	seen := map[string]bool{}
	for _, f := range m.Files {
		switch {
		case !slices.Contains(checkpointFiles, f.Name):
			return nil, fmt.Errorf("lists unknown file %q", f.Name)
		case seen[f.Name]:
			return nil, fmt.Errorf("lists %q twice", f.Name)
		case f.Size < 0:
			return nil, fmt.Errorf("%s has negative size %d", f.Name, f.Size)
		}
		if h, err := hex.DecodeString(f.SHA256); err != nil || len(h) != sha256.Size {
			return nil, fmt.Errorf("%s has a malformed sha256 %q", f.Name, f.SHA256)
		}
		seen[f.Name] = true
	}
	for _, name := range checkpointFiles {
		if !seen[name] {
			return nil, fmt.Errorf("does not list %s", name)
		}
	}
	return &m, nil
}

// openVerified opens one file the manifest lists and checks its size and
// SHA-256, reading it through once; the caller reads the content from the
// returned file and closes it.
func openVerified(dir string, f manifestFile) (_ *os.File, err error) {
	path := filepath.Join(dir, f.Name)
	fh, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, checkpointCorrupt(dir, f.Name, "missing")
	}
	if err != nil {
		return nil, fmt.Errorf("store: load checkpoint %s: %w", dir, err)
	}
	defer func() {
		if err != nil {
			fh.Close()
		}
	}()
	fi, err := fh.Stat()
	if err != nil {
		return nil, fmt.Errorf("store: load checkpoint %s: %w", dir, err)
	}
	switch {
	case !fi.Mode().IsRegular():
		return nil, checkpointCorrupt(dir, f.Name, "not a regular file")
	case fi.Size() < f.Size:
		return nil, checkpointCorrupt(dir, f.Name, "truncated: %d bytes, manifest says %d", fi.Size(), f.Size)
	case fi.Size() > f.Size:
		return nil, checkpointCorrupt(dir, f.Name, "%d bytes, manifest says %d", fi.Size(), f.Size)
	}
	h := sha256.New()
	n, err := io.CopyBuffer(h, io.NewSectionReader(fh, 0, f.Size), make([]byte, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("store: load checkpoint %s: %s: %w", dir, f.Name, err)
	}
	if n != f.Size {
		return nil, checkpointCorrupt(dir, f.Name, "truncated while reading")
	}
	if got := hex.EncodeToString(h.Sum(nil)); !strings.EqualFold(got, f.SHA256) {
		return nil, checkpointCorrupt(dir, f.Name, "checksum mismatch: sha256 %s, manifest says %s", got, f.SHA256)
	}
	return fh, nil
}

// parseState decodes state.json.
func parseState(b []byte) (*stateFile, error) {
	var st stateFile
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&st); err != nil {
		return nil, fmt.Errorf("bad JSON: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("bad JSON: data after the state object")
	}
	if st.Epoch < 0 || st.Step < 0 {
		return nil, fmt.Errorf("negative epoch %d or step %d", st.Epoch, st.Step)
	}
	return &st, nil
}
