// Command gen copies the shared files of bindings/go into the package
// directory it runs in; pkg/sicore's doc.go runs it through go generate:
//
//	cd bindings/go-v1/pkg/sicore && go generate
package main

import (
	"fmt"
	"os"

	"github.com/apache/yunikorn-core/internal/shared"
)

// source is bindings/go seen from bindings/go-v1/pkg/sicore.
const source = "../../../go"

func main() {
	if err := shared.Sync(source, "."); err != nil {
		fmt.Fprintln(os.Stderr, "shared files:", err)
		os.Exit(1)
	}
}
