package sicore

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/incubator-yunikorn-scheduler-interface/lib/go/si"
)

// wantError checks that err is an *Error with the given status whose
// library message contains every fragment.
func wantError(t *testing.T, err error, sentinel *Error, fragments ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want %v", sentinel)
	}
	if !errors.Is(err, sentinel) {
		t.Fatalf("got %v, want an error matching %v", err, sentinel)
	}
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("%v is not an *Error", err)
	}
	for _, f := range fragments {
		if !strings.Contains(e.Message, f) {
			t.Errorf("message %q does not contain %q", e.Message, f)
		}
	}
}

func TestErrorIs(t *testing.T) {
	err := error(&Error{Status: StatusRejected, Op: "UpdateNode", Message: "no"})
	if !errors.Is(err, ErrRejected) || errors.Is(err, ErrStopped) {
		t.Errorf("errors.Is does not follow the status")
	}
	if !errors.Is(err, &Error{Status: StatusRejected, Op: "UpdateNode", Message: "no"}) {
		t.Errorf("equal errors do not match")
	}
	if errors.Is(err, &Error{Status: StatusRejected, Op: "UpdateNode", Message: "other"}) {
		t.Errorf("different messages match")
	}
	if got := err.Error(); got != "sicore: UpdateNode: rejected: no" {
		t.Errorf("Error() = %q", got)
	}
}

func TestRegisterErrors(t *testing.T) {
	s := newTestScheduler(t, WithPolicyConfig("broken", "partitions:\n  - name: default\n    queues: [[[\n"))
	rm := newFakeRM()

	_, err := s.RegisterResourceManager(&si.RegisterResourceManagerRequest{PolicyGroup: "queues"}, rm)
	wantError(t, err, ErrInvalidArgument, "rmID")

	_, err = s.RegisterResourceManager(&si.RegisterResourceManagerRequest{RmID: "rm", PolicyGroup: "broken"}, rm)
	wantError(t, err, ErrRejected)
	t.Logf("invalid configuration: %v", err)

	_, err = s.RegisterResourceManager(&si.RegisterResourceManagerRequest{RmID: "rm", PolicyGroup: "queues"}, nil)
	wantError(t, err, ErrInvalidArgument, "callback")

	_, err = s.RegisterResourceManager(nil, rm)
	wantError(t, err, ErrInvalidArgument, "request")

	_, err = s.registerEncoded([]byte{0xff, 0xff, 0xff}, rm)
	wantError(t, err, ErrDecode, "not a valid encoding")

	// After the failures the scheduler still works.
	register(t, s, "rm", rm)
}

func TestUpdateErrors(t *testing.T) {
	s := newTestScheduler(t)
	rm := newFakeRM()
	register(t, s, "rm", rm)

	// Unknown rmID.
	err := s.UpdateAllocation(&si.AllocationRequest{RmID: "nobody", Asks: []*si.AllocationAsk{ask("app", "k", 1, 1)}})
	wantError(t, err, ErrRejected, "nobody")
	err = s.UpdateApplication(&si.ApplicationRequest{RmID: "nobody"})
	wantError(t, err, ErrRejected, "nobody")
	err = s.UpdateNode(&si.NodeRequest{RmID: "nobody"})
	wantError(t, err, ErrRejected, "nobody")
	err = s.UpdateConfiguration("nobody")
	wantError(t, err, ErrRejected, "nobody")

	// Missing required fields.
	err = s.UpdateAllocation(&si.AllocationRequest{RmID: "rm", Asks: []*si.AllocationAsk{ask("app", "", 1, 1)}})
	wantError(t, err, ErrInvalidArgument, "allocationKey")
	err = s.UpdateApplication(&si.ApplicationRequest{RmID: "rm", New: []*si.AddApplicationRequest{{QueueName: "root.a"}}})
	wantError(t, err, ErrInvalidArgument, "applicationID")
	err = s.UpdateNode(&si.NodeRequest{RmID: "rm", Nodes: []*si.NodeInfo{{Action: si.NodeInfo_CREATE}}})
	wantError(t, err, ErrInvalidArgument, "nodeID")

	// Nil requests never reach the library.
	wantError(t, s.UpdateAllocation(nil), ErrInvalidArgument, "nil")
	wantError(t, s.UpdateApplication(nil), ErrInvalidArgument, "nil")
	wantError(t, s.UpdateNode(nil), ErrInvalidArgument, "nil")

	// Malformed contents: bytes that are no protobuf encoding at all.
	garbage := []byte{0xff, 0xff, 0xff, 0xff}
	for _, op := range []string{opUpdateAllocation, opUpdateApplication, opUpdateNode} {
		err := s.queueEncoded(op, garbage)
		wantError(t, err, ErrDecode, "not a valid encoding")
	}
}

func TestUpdateConfigurationErrors(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "queues.yaml")
	good := "partitions:\n  - name: default\n    queues:\n      - name: root\n        submitacl: '*'\n"
	if err := os.WriteFile(file, []byte(good), 0o644); err != nil {
		t.Fatal(err)
	}
	s := newTestScheduler(t, WithConfigDir(dir))
	register(t, s, "rm", newFakeRM())
	if err := s.UpdateConfiguration("rm"); err != nil {
		t.Fatalf("UpdateConfiguration with the same file: %v", err)
	}
	if err := os.WriteFile(file, []byte("partitions: {not: [a, list\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := s.UpdateConfiguration("rm")
	wantError(t, err, ErrRejected)
	t.Logf("invalid configuration: %v", err)
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	err = s.UpdateConfiguration("rm")
	wantError(t, err, ErrRejected)
	t.Logf("missing configuration: %v", err)
}

func TestNewErrors(t *testing.T) {
	_, err := New(WithSchedulingInterval(-1))
	wantError(t, err, ErrInvalidArgument, "negative")
	_, err = New(WithPolicyConfig("", "x"))
	wantError(t, err, ErrInvalidArgument, "policy group")
}

func TestClosedScheduler(t *testing.T) {
	s, err := New()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	_, err = s.RegisterResourceManager(&si.RegisterResourceManagerRequest{RmID: "rm", PolicyGroup: "queues"}, newFakeRM())
	wantError(t, err, ErrStopped)
	wantError(t, s.UpdateAllocation(&si.AllocationRequest{RmID: "rm"}), ErrStopped)
	wantError(t, s.UpdateApplication(&si.ApplicationRequest{RmID: "rm"}), ErrStopped)
	wantError(t, s.UpdateNode(&si.NodeRequest{RmID: "rm"}), ErrStopped)
	wantError(t, s.UpdateConfiguration("rm"), ErrStopped)
	_, err = s.StateDump()
	wantError(t, err, ErrStopped)
}
