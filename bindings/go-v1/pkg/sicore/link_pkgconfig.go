//go:build cgo && !sicore_checkout && !sicore_dynamic

package sicore

// Default: libsicore installed where pkg-config finds it (cargo cinstall,
// see README.md). -lsicore resolves to libsicore.so, or to libsicore.a when
// the binary is linked with -extldflags -static; the Rust standard
// library's system dependencies (pthread, dl, rt, util) are part of glibc's
// libc since 2.34, and -lm is listed here for the static case.

/*
#cgo pkg-config: sicore
#cgo LDFLAGS: -lm
*/
import "C"
