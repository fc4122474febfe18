package entrypoint

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// The program the replace test builds: what the k8shim's main does with
// the core (StartAllServicesWithLogger, RMProxy as api.SchedulerAPI), and
// its locking package's call, then a registration, a node and Stop.
const shimLikeMain = `package main

import (
	"fmt"
	"os"
	"time"

	"github.com/apache/yunikorn-core/pkg/entrypoint"
	corelocking "github.com/apache/yunikorn-core/pkg/locking"
	"github.com/apache/yunikorn-scheduler-interface/lib/go/api"
	"github.com/apache/yunikorn-scheduler-interface/lib/go/si"
	"go.uber.org/zap"
)

type rm struct{ answered chan string }

func (r *rm) UpdateAllocation(*si.AllocationResponse) error   { return nil }
func (r *rm) UpdateApplication(*si.ApplicationResponse) error { return nil }
func (r *rm) UpdateNode(resp *si.NodeResponse) error {
	for _, n := range resp.Accepted {
		r.answered <- n.NodeID
	}
	return nil
}
func (r *rm) Predicates(*si.PredicatesArgs) error { return nil }
func (r *rm) PreemptionPredicates(*si.PreemptionPredicatesArgs) *si.PreemptionPredicatesResponse {
	return &si.PreemptionPredicatesResponse{Index: -1}
}
func (r *rm) SendEvent([]*si.EventRecord)                                                 {}
func (r *rm) UpdateContainerSchedulingState(*si.UpdateContainerSchedulingStateRequest) {}

func main() {
	_ = corelocking.IsTrackingEnabled()
	cfg := zap.NewProductionConfig()
	logger, err := cfg.Build()
	if err != nil {
		panic(err)
	}
	serviceContext := entrypoint.StartAllServicesWithLogger(logger, &cfg)
	if serviceContext.RMProxy == nil {
		fmt.Println("no RMProxy")
		os.Exit(1)
	}
	var proxy api.SchedulerAPI = serviceContext.RMProxy
	cb := &rm{answered: make(chan string, 1)}
	if _, err := proxy.RegisterResourceManager(&si.RegisterResourceManagerRequest{
		RmID: "mycluster", Version: "SIVERSION", PolicyGroup: "queues"}, cb); err != nil {
		fmt.Println("register:", err)
		os.Exit(1)
	}
	if err := proxy.UpdateNode(&si.NodeRequest{RmID: "mycluster", Nodes: []*si.NodeInfo{{NodeID: "node-1",
		Action: si.NodeInfo_CREATE_DRAIN, SchedulableResource: &si.Resource{Resources: map[string]*si.Quantity{"memory": {Value: 1}}}}}}); err != nil {
		fmt.Println("node:", err)
		os.Exit(1)
	}
	select {
	case id := <-cb.answered:
		fmt.Println("accepted", id)
	case <-time.After(30 * time.Second):
		fmt.Println("no node answer")
		os.Exit(1)
	}
	proxy.Stop()
	fmt.Println("stopped")
}
`

// TestOneReplaceLine is the drop-in's promise: a program written for
// yunikorn-core v1.8.0 (its go.mod and go.sum tidied against the real
// module from the Go module proxy) builds on sicore after exactly one
// added line, replace github.com/apache/yunikorn-core => <this module>,
// with -mod=readonly (no other change to go.mod or go.sum allowed), and
// runs: start, register, a node answered, Stop. The real k8shim is not on
// this machine's proxy; this program does what its main does with the core.
func TestOneReplaceLine(t *testing.T) {
	oneReplaceLine(t, "v1.8.0", "1.24.0", "")
}

// TestOneReplaceLineV19: the same for a program written for yunikorn-core
// v1.9.0 (SI v1.9, go 1.25). The core's go.mod pins SI v1.9.0-0, which
// the module proxy this test reaches does not serve; the program's own
// go.mod maps it to SI v1.9.0 (the same go.mod hash) before the switch,
// as an environment matter, and the switch is still the one line.
func TestOneReplaceLineV19(t *testing.T) {
	oneReplaceLine(t, "v1.9.0", "1.25.0",
		"\nreplace github.com/apache/yunikorn-scheduler-interface v1.9.0-0 => github.com/apache/yunikorn-scheduler-interface v1.9.0\n")
}

func oneReplaceLine(t *testing.T, coreVersion, goVersion, preamble string) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	module, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	run := func(timeout time.Duration, env []string, args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, args[0], args[1:]...)
		cmd.Dir = dir
		cmd.Env = append(append(os.Environ(), "GOWORK=off", "GOFLAGS=-buildvcs=false"), env...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	write := func(name, text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	siVersion := strings.TrimPrefix(coreVersion, "v")
	write("main.go", strings.Replace(shimLikeMain, "SIVERSION", siVersion, 1))
	write("go.mod", "module example.com/shimlike\n\ngo "+goVersion+"\n\nrequire github.com/apache/yunikorn-core "+coreVersion+"\n"+preamble)
	// The program as written for the YuniKorn core.
	run(5*time.Minute, []string{"GOFLAGS=-mod=mod"}, goTool, "mod", "tidy")
	mod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	sum, _ := os.ReadFile(filepath.Join(dir, "go.sum"))
	if !bytes.Contains(mod, []byte("github.com/apache/yunikorn-core "+coreVersion)) {
		t.Fatalf("tidied go.mod lost the core:\n%s", mod)
	}
	// The one line.
	switched := string(mod) + "\nreplace github.com/apache/yunikorn-core => " + module + "\n"
	write("go.mod", switched)
	args := []string{goTool, "build", "-mod=readonly", "-o", "shimlike"}
	if linkTags != "" {
		args = append(args, "-tags", linkTags)
	}
	run(10*time.Minute, nil, append(args, ".")...)
	if now, _ := os.ReadFile(filepath.Join(dir, "go.mod")); string(now) != switched {
		t.Errorf("go build changed go.mod:\n%s", now)
	}
	if now, _ := os.ReadFile(filepath.Join(dir, "go.sum")); !bytes.Equal(now, sum) {
		t.Errorf("go build changed go.sum")
	}
	out := run(time.Minute, []string{EnvRESTAddress + "=127.0.0.1:0"}, filepath.Join(dir, "shimlike"))
	if !strings.Contains(out, "accepted node-1") || !strings.Contains(out, "stopped") {
		t.Errorf("the program's output:\n%s", out)
	}
}
