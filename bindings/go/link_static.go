//go:build !sicore_dynamic

package sicore

// Static linking (the default): the Rust static library is linked into the
// Go binary, which then needs no libsicore.so at run time. The system
// libraries are those the Rust standard library needs on Linux
// (`cargo rustc --release --lib -- --print native-static-libs`).

/*
#cgo LDFLAGS: ${SRCDIR}/../../target/release/libsicore.a -lgcc_s -lutil -lrt -lpthread -lm -ldl -lc
*/
import "C"
