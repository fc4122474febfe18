//go:build !cgo

package sicore

// Without cgo the binding cannot call libsicore. Every other file of the
// package needs cgo, so this is the only error such a build reports. The
// CGO_ENABLED=0 default of many Makefiles is the usual cause.
const _ = "the sicore Go binding needs cgo: build with CGO_ENABLED=1 and a C compiler (gcc or clang)" + 0
