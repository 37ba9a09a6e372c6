//go:build darwin || freebsd || netbsd || openbsd || dragonfly

package kernel

// fionread is the ioctl that returns how many bytes a pipe holds:
// FIONREAD, _IOR('f', 127, int) on every BSD.
const fionread = 0x4004667f
