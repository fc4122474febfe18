//go:build cgo && sicore_dynamic

package sicore

// Build tag sicore_dynamic: develop inside the repository checkout against
// target/release/libsicore.so. The binary finds it through the rpath set
// here (or LD_LIBRARY_PATH when the binary is moved).

/*
#cgo CFLAGS: -I${SRCDIR}/../../../../include
#cgo LDFLAGS: -L${SRCDIR}/../../../../target/release -lsicore -Wl,-rpath,${SRCDIR}/../../../../target/release
*/
import "C"
