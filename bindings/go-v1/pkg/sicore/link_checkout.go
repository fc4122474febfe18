//go:build cgo && sicore_checkout && !sicore_dynamic

package sicore

// Build tag sicore_checkout: develop inside the repository checkout. The
// Rust static library from target/release is linked into the Go binary,
// which then needs no libsicore.so at run time. The system libraries are
// those the Rust standard library needs on Linux (`cargo rustc --release
// --lib -- --print native-static-libs`) less -lgcc_s and -lc, which the C
// compiler driver adds itself: as the shared libgcc_s normally, and as the
// static libgcc_eh under -extldflags -static (where no libgcc_s exists).

/*
#cgo CFLAGS: -I${SRCDIR}/../../../../include
#cgo LDFLAGS: ${SRCDIR}/../../../../target/release/libsicore.a -lutil -lrt -lpthread -lm -ldl
*/
import "C"
