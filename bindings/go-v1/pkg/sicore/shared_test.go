package sicore

import (
	"os"
	"testing"

	"github.com/apache/yunikorn-core/internal/shared"
)

// TestSharedFilesFresh fails when a copy of a bindings/go file (see
// doc.go) differs from its source: edit the source and run go generate.
// Outside the sicore checkout (the module alone) there is no source.
func TestSharedFilesFresh(t *testing.T) {
	const source = "../../../go"
	if _, err := os.Stat(source + "/go.mod"); err != nil {
		t.Skipf("no bindings/go beside this module: %v", err)
	}
	if err := shared.Check(source, "."); err != nil {
		t.Fatal(err)
	}
}
