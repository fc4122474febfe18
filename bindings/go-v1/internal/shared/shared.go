// Package shared keeps pkg/sicore's copies of the edition-neutral files of
// the v0.12 binding (bindings/go) in step with them.
//
// The two bindings cannot import a common package: the drop-in must build
// with one replace line in the RM's go.mod, and a module of their own
// would need a second. So the files that do not depend on the SI edition
// are written once, in bindings/go, and copied here by `go generate` (in
// pkg/sicore) with a header line; TestSharedFilesFresh fails when a copy
// differs from its source. What each edition supplies to them is in its
// edition.go.
package shared

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Files are the names of the shared files, the same in both directories.
var Files = []string{
	"callbacks_common.go", "decode_common.go", "errors.go", "handles.go", "handles_test.go", "lifecycle.go", "logger.go",
	"options.go", "options_more_test.go", "pending.go", "scheduler_common.go", "shim_common.h", "wire.go",
}

// headerPrefix starts every copy; Go tools treat the file as generated.
const headerPrefix = "// Code generated from bindings/go/"

// Header is the line a copy of name starts with, and the blank line after
// it (so that it is not the package's doc comment).
func Header(name string) string {
	return headerPrefix + name + " by go generate (internal/shared/gen); DO NOT EDIT.\n\n"
}

// Render is the copy of the source file name.
func Render(name string, src []byte) []byte {
	return append([]byte(Header(name)), src...)
}

// Sync writes the copies of Files from srcDir into dstDir.
func Sync(srcDir, dstDir string) error {
	for _, name := range Files {
		src, err := os.ReadFile(filepath.Join(srcDir, name))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dstDir, name), Render(name, src), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// Check reports every copy in dstDir that differs from its source in
// srcDir or is missing, and every file in dstDir that carries the header
// of a copy but is not one of Files any more.
func Check(srcDir, dstDir string) error {
	var problems []error
	for _, name := range Files {
		src, err := os.ReadFile(filepath.Join(srcDir, name))
		if err != nil {
			problems = append(problems, err)
			continue
		}
		got, err := os.ReadFile(filepath.Join(dstDir, name))
		if err != nil {
			problems = append(problems, err)
			continue
		}
		if !bytes.Equal(got, Render(name, src)) {
			problems = append(problems, fmt.Errorf("%s differs from %s", filepath.Join(dstDir, name), filepath.Join(srcDir, name)))
		}
	}
	entries, err := os.ReadDir(dstDir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.IsDir() || slices.Contains(Files, e.Name()) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dstDir, e.Name()))
		if err != nil {
			return err
		}
		if strings.HasPrefix(string(b), headerPrefix) {
			problems = append(problems, fmt.Errorf("%s is a copy of a file that is no longer shared", filepath.Join(dstDir, e.Name())))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w; run `go generate` in bindings/go-v1/pkg/sicore", errors.Join(problems...))
	}
	return nil
}
