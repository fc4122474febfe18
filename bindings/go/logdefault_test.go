package sicore

import (
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestLibraryLogsGoToSlogDefault checks the default routing: with no
// logger chosen, the library's records reach slog.Default(), including
// one installed after the scheduler was created (it is looked up per
// record), with their "target" attribute.
func TestLibraryLogsGoToSlogDefault(t *testing.T) {
	SetLogger(nil, slog.LevelInfo) // the default, whatever earlier tests chose
	// The library's level is process-wide and an earlier test may have
	// raised it (WithLogLevel): the registration record is at info.
	s := newTestScheduler(t, WithLogLevel(slog.LevelInfo))
	capture := &captureHandler{}
	prev := slog.Default()
	slog.SetDefault(slog.New(capture))
	defer slog.SetDefault(prev)

	register(t, s, "rm-default-log", newFakeRM())
	r, ok := capture.find("RM rm-default-log registered")
	if !ok {
		t.Fatal("the registration record did not reach slog.Default()")
	}
	if r.Level != slog.LevelInfo {
		t.Errorf("level %v, want INFO", r.Level)
	}
	var target string
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "target" {
			target = a.Value.String()
		}
		return true
	})
	if !strings.HasPrefix(target, "sicore") {
		t.Errorf("target attribute %q, want the library module", target)
	}
}

// TestBuildWithoutCgoFailsClearly builds the package with CGO_ENABLED=0, as
// the YuniKorn shim's Makefile does by default: the build must fail with
// the one message that says the binding needs cgo, not with undefined
// names from the files that cgo would have provided.
func TestBuildWithoutCgoFailsClearly(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go command")
	}
	cmd := exec.Command("go", "build", "-o", os.DevNull, ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("a build without cgo succeeded:\n%s", out)
	}
	text := string(out)
	if !strings.Contains(text, "the sicore Go binding needs cgo: build with CGO_ENABLED=1") {
		t.Errorf("the output does not explain that cgo is needed:\n%s", text)
	}
	var errorLines []string
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		if strings.HasPrefix(line, "./") || strings.Contains(line, ".go:") {
			errorLines = append(errorLines, line)
		}
	}
	if len(errorLines) != 1 {
		t.Errorf("want exactly one compile error, got %d:\n%s", len(errorLines), text)
	}
}
