//go:build !kiln_nocuda

package cuda

import (
	"fmt"
	"unsafe"
)

// nvrtc compiles CUDA C through libnvrtc, loaded with purego.
type nvrtc struct {
	nvrtcVersion         func(major, minor *int32) int32
	nvrtcCreateProgram   func(prog *uintptr, src, name *byte, nHeaders int32, headers, names unsafe.Pointer) int32
	nvrtcCompileProgram  func(prog uintptr, nOpts int32, opts unsafe.Pointer) int32
	nvrtcGetProgramLogSz func(prog uintptr, n *uint64) int32
	nvrtcGetProgramLog   func(prog uintptr, log *byte) int32
	nvrtcGetPTXSize      func(prog uintptr, n *uint64) int32
	nvrtcGetPTX          func(prog uintptr, ptx *byte) int32
	nvrtcDestroyProgram  func(prog *uintptr) int32
	nvrtcGetErrorString  func(r int32) *byte
	major, minor         int32
}

func newNVRTC(h uintptr) (*nvrtc, error) {
	n := &nvrtc{}
	err := bind(h, "libnvrtc", map[string]any{
		"nvrtcVersion": &n.nvrtcVersion, "nvrtcCreateProgram": &n.nvrtcCreateProgram,
		"nvrtcCompileProgram": &n.nvrtcCompileProgram, "nvrtcGetProgramLogSize": &n.nvrtcGetProgramLogSz,
		"nvrtcGetProgramLog": &n.nvrtcGetProgramLog, "nvrtcGetPTXSize": &n.nvrtcGetPTXSize,
		"nvrtcGetPTX": &n.nvrtcGetPTX, "nvrtcDestroyProgram": &n.nvrtcDestroyProgram,
		"nvrtcGetErrorString": &n.nvrtcGetErrorString,
	})
	if err != nil {
		return nil, err
	}
	if r := n.nvrtcVersion(&n.major, &n.minor); r != 0 {
		return nil, n.err("nvrtcVersion", r)
	}
	return n, nil
}

func (n *nvrtc) err(call string, r int32) error {
	return fmt.Errorf("cuda: %s: NVRTC error %d: %s", call, r, cString(n.nvrtcGetErrorString(r)))
}

func (n *nvrtc) Version() (int, int, error) { return int(n.major), int(n.minor), nil }

func (n *nvrtc) Compile(src, name string, opts []string) ([]byte, error) {
	s, nm := cBytes(src), cBytes(name)
	var prog uintptr
	if r := n.nvrtcCreateProgram(&prog, &s[0], &nm[0], 0, nil, nil); r != 0 {
		return nil, n.err("nvrtcCreateProgram", r)
	}
	defer n.nvrtcDestroyProgram(&prog)
	cs := make([][]byte, len(opts))
	ptrs := make([]*byte, len(opts)+1)
	for i, o := range opts {
		cs[i] = cBytes(o)
		ptrs[i] = &cs[i][0]
	}
	r := n.nvrtcCompileProgram(prog, int32(len(opts)), unsafe.Pointer(&ptrs[0]))
	if r != 0 {
		var sz uint64
		log := ""
		if n.nvrtcGetProgramLogSz(prog, &sz) == 0 && sz > 1 {
			b := make([]byte, sz)
			n.nvrtcGetProgramLog(prog, &b[0])
			log = string(b[:sz-1])
		}
		return nil, fmt.Errorf("%w\n%s", n.err("nvrtcCompileProgram "+name, r), log)
	}
	var sz uint64
	if r := n.nvrtcGetPTXSize(prog, &sz); r != 0 {
		return nil, n.err("nvrtcGetPTXSize", r)
	}
	ptx := make([]byte, sz)
	if r := n.nvrtcGetPTX(prog, &ptx[0]); r != 0 {
		return nil, n.err("nvrtcGetPTX", r)
	}
	if len(ptx) > 0 && ptx[len(ptx)-1] == 0 {
		ptx = ptx[:len(ptx)-1]
	}
	return ptx, nil
}
