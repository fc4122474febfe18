//go:build sicore_dynamic

package sicore

// Dynamic linking (build tag sicore_dynamic): the binary loads
// libsicore.so from target/release of this checkout, found through the
// rpath set here (or LD_LIBRARY_PATH when the binary is moved).

/*
#cgo LDFLAGS: -L${SRCDIR}/../../target/release -lsicore -Wl,-rpath,${SRCDIR}/../../target/release
*/
import "C"
