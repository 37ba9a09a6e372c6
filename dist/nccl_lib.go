package dist

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"

	"github.com/kiln-ml/kiln/tensor"
)

// DefaultNCCLLibrary is the NCCL library NCCL and NewNCCLGroup load unless
// KILN_NCCL_LIBRARY names another file.
const DefaultNCCLLibrary = "libnccl.so.2"

// ErrNoNCCL is wrapped by the error NCCL and NewNCCLGroup return when
// NVIDIA's NCCL library cannot be loaded.
var ErrNoNCCL = errors.New("dist: NCCL library not available")

// ncclInstall says where NCCL comes from, for ErrNoNCCL errors.
const ncclInstall = "NVIDIA's NCCL: apt install libnccl2 from NVIDIA's CUDA repository, " +
	"or pip install nvidia-nccl-cu12, or point KILN_NCCL_LIBRARY at libnccl.so.2"

// ncclResult_t values (nccl.h) the code tells apart.
const (
	ncclSuccess    = 0
	ncclInProgress = 7
	ncclTimeout    = 8
)

// ncclRedOp_t values (nccl.h).
const (
	ncclSum = 0
	ncclMax = 2
	ncclMin = 3
)

// ncclDataType_t values (nccl.h).
const (
	ncclInt8     = 0
	ncclUint8    = 1
	ncclInt32    = 2
	ncclInt64    = 4
	ncclFloat16  = 6
	ncclFloat32  = 7
	ncclFloat64  = 8
	ncclBfloat16 = 9
)

// ncclUniqueIDBytes is NCCL_UNIQUE_ID_BYTES.
const ncclUniqueIDBytes = 128

// ncclUniqueID is ncclUniqueId, which ncclCommInitRank takes by value:
// purego passes a struct this size on the stack on amd64 and by reference
// on arm64, as the C ABIs do.
type ncclUniqueID struct {
	Internal [ncclUniqueIDBytes]byte
}

// ncclLib is NCCL's API bound through purego. Communicators (ncclComm_t)
// and streams (cudaStream_t, the same handle as a CUstream) are uintptr;
// device buffers are uintptr addresses that Go's garbage collector never
// sees.
type ncclLib struct {
	path    string
	version int // NCCL_VERSION_CODE, e.g. 22105 for 2.21.5

	getVersion        func(v *int32) int32
	getUniqueID       func(id *ncclUniqueID) int32
	commInitRank      func(comm *uintptr, nranks int32, id ncclUniqueID, rank int32) int32
	commInitAll       func(comms *uintptr, ndev int32, devlist *int32) int32
	commDestroy       func(comm uintptr) int32
	commAbort         func(comm uintptr) int32
	commGetAsyncError func(comm uintptr, state *int32) int32
	getErrorString    func(code int32) string
	getLastError      func(comm uintptr) string // nil before NCCL 2.13
	groupStart        func() int32
	groupEnd          func() int32
	allReduce         func(send, recv, count uintptr, dtype, op int32, comm, stream uintptr) int32
	broadcast         func(send, recv, count uintptr, dtype, root int32, comm, stream uintptr) int32
	allGather         func(send, recv, count uintptr, dtype int32, comm, stream uintptr) int32
	reduceScatter     func(send, recv, count uintptr, dtype, op int32, comm, stream uintptr) int32
}

var (
	ncclMu   sync.Mutex
	ncclLibs = map[string]*ncclLib{}
)

// loadNCCL opens NCCL once per process: $KILN_NCCL_LIBRARY when set, else
// libnccl.so.2 where the system loader finds it, else the copy in pip's
// nvidia-nccl wheel (which PyTorch installs). A missing library is an
// ErrNoNCCL error naming every file tried and where NCCL comes from.
func loadNCCL() (*ncclLib, error) {
	var candidates []string
	if p := os.Getenv("KILN_NCCL_LIBRARY"); p != "" {
		candidates = []string{p}
	} else {
		candidates = append([]string{DefaultNCCLLibrary}, ncclWheels()...)
	}
	ncclMu.Lock()
	defer ncclMu.Unlock()
	var last error
	for _, path := range candidates {
		if l, ok := ncclLibs[path]; ok {
			return l, nil
		}
		h, err := dlopen(path)
		if err != nil {
			last = err
			continue
		}
		l, err := bindNCCL(h, path)
		if err != nil {
			return nil, err
		}
		ncclLibs[path] = l
		return l, nil
	}
	return nil, fmt.Errorf("%w: cannot load %v (%s): %v", ErrNoNCCL, candidates, ncclInstall, last)
}

// ncclWheels lists libnccl.so.2 in the site-packages of pip's nvidia-nccl
// wheels that exist on this machine.
func ncclWheels() []string {
	var pats []string
	if v := os.Getenv("VIRTUAL_ENV"); v != "" {
		pats = append(pats, filepath.Join(v, "lib", "python3*", "site-packages"))
	}
	if h, err := os.UserHomeDir(); err == nil {
		pats = append(pats, filepath.Join(h, ".local", "lib", "python3*", "site-packages"))
	}
	pats = append(pats, "/usr/local/lib/python3*/dist-packages", "/usr/lib/python3/dist-packages",
		"/usr/local/lib/python3*/site-packages")
	var out []string
	for _, p := range pats {
		m, _ := filepath.Glob(filepath.Join(p, "nvidia", "nccl", "lib", DefaultNCCLLibrary))
		sort.Strings(m)
		out = append(out, m...)
	}
	return out
}

// bindNCCL binds NCCL's functions from the opened library h and asks it
// its version.
func bindNCCL(h uintptr, path string) (*ncclLib, error) {
	l, err := bindNCCLSymbols(path, func(name string) (uintptr, error) { return dlsym(h, name) })
	if err != nil {
		return nil, err
	}
	var v int32
	if l.getVersion(&v) == ncclSuccess {
		l.version = int(v)
	}
	return l, nil
}

// bindNCCLSymbols binds NCCL's functions to the addresses lookup finds.
// ncclGetLastError (NCCL 2.13) is optional.
func bindNCCLSymbols(path string, lookup func(name string) (uintptr, error)) (*ncclLib, error) {
	l := &ncclLib{path: path}
	funcs := map[string]any{
		"ncclGetVersion": &l.getVersion, "ncclGetUniqueId": &l.getUniqueID,
		"ncclCommInitRank": &l.commInitRank, "ncclCommInitAll": &l.commInitAll,
		"ncclCommDestroy": &l.commDestroy, "ncclCommAbort": &l.commAbort,
		"ncclCommGetAsyncError": &l.commGetAsyncError, "ncclGetErrorString": &l.getErrorString,
		"ncclGroupStart": &l.groupStart, "ncclGroupEnd": &l.groupEnd,
		"ncclAllReduce": &l.allReduce, "ncclBroadcast": &l.broadcast,
		"ncclAllGather": &l.allGather, "ncclReduceScatter": &l.reduceScatter,
	}
	for name, fn := range funcs {
		addr, err := lookup(name)
		if err != nil {
			return nil, fmt.Errorf("%w: %s lacks %s (NCCL 2.4 or later is needed): %v", ErrNoNCCL, path, name, err)
		}
		registerFunc(fn, addr)
	}
	if addr, err := lookup("ncclGetLastError"); err == nil {
		registerFunc(&l.getLastError, addr)
	}
	return l, nil
}

// versionString formats NCCL_VERSION_CODE: 2.21.5 from 22105, 2.8.4 from
// 2804 (the code changed form at 2.9).
func (l *ncclLib) versionString() string {
	v := l.version
	if v < 10000 {
		return fmt.Sprintf("%d.%d.%d", v/1000, v%1000/100, v%100)
	}
	return fmt.Sprintf("%d.%d.%d", v/10000, v%10000/100, v%100)
}

// err turns an NCCL result into an error naming the rank (none when rank
// is negative), the call and NCCL's message (and, where NCCL has one, its
// last error). An ncclTimeout result wraps ErrTimeout.
func (l *ncclLib) err(rank int, call string, code int32, comm uintptr) error {
	if code == ncclSuccess {
		return nil
	}
	msg := l.getErrorString(code)
	if msg == "" {
		msg = "unknown error"
	}
	if l.getLastError != nil {
		if last := l.getLastError(comm); last != "" && last != msg {
			msg += ": " + last
		}
	}
	who := "" // a call for the whole group (ncclCommInitAll, ncclGroupEnd) has no rank
	if rank >= 0 {
		who = fmt.Sprintf("rank %d: ", rank)
	}
	if code == ncclTimeout {
		return fmt.Errorf("%w: %s%s: %s (NCCL error %d)", ErrTimeout, who, call, msg, code)
	}
	return fmt.Errorf("dist: %s%s failed: %s (NCCL error %d)", who, call, msg, code)
}

// ncclType maps a tensor dtype to NCCL's, or reports it has none.
func ncclType(d tensor.DType) (int32, bool) {
	switch d {
	case tensor.Float32:
		return ncclFloat32, true
	case tensor.Float64:
		return ncclFloat64, true
	case tensor.Float16:
		return ncclFloat16, true
	case tensor.BFloat16:
		return ncclBfloat16, true
	case tensor.Int64:
		return ncclInt64, true
	case tensor.Int32:
		return ncclInt32, true
	case tensor.Uint8:
		return ncclUint8, true
	case tensor.Int8:
		return ncclInt8, true
	}
	// Int16 has no NCCL type (nccl.h defines none); callers convert to Int32.
	return 0, false
}

// ncclOp maps a reduction to NCCL's; Mean is a Sum scaled afterwards.
func ncclOp(op ReduceOp) int32 {
	switch op {
	case Max:
		return ncclMax
	case Min:
		return ncclMin
	}
	return ncclSum
}
