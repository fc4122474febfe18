package entrypoint

import (
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/yunikorn-scheduler-interface/lib/go/api"
	"github.com/apache/yunikorn-scheduler-interface/lib/go/si"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// nodeRM is the least RM that waits for node answers.
type nodeRM struct {
	mu       sync.Mutex
	answered map[string]bool
}

func (r *nodeRM) UpdateAllocation(*si.AllocationResponse) error   { return nil }
func (r *nodeRM) UpdateApplication(*si.ApplicationResponse) error { return nil }
func (r *nodeRM) UpdateNode(resp *si.NodeResponse) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, n := range resp.Accepted {
		r.answered[n.NodeID] = true
	}
	for _, n := range resp.Rejected {
		r.answered[n.NodeID] = false
	}
	return nil
}
func (r *nodeRM) Predicates(*si.PredicatesArgs) error { return nil }
func (r *nodeRM) PreemptionPredicates(*si.PreemptionPredicatesArgs) *si.PreemptionPredicatesResponse {
	return &si.PreemptionPredicatesResponse{Index: -1}
}
func (r *nodeRM) SendEvent([]*si.EventRecord)                                              {}
func (r *nodeRM) UpdateContainerSchedulingState(*si.UpdateContainerSchedulingStateRequest) {}

var _ api.ResourceManagerCallback = (*nodeRM)(nil)

// TestStartAllServicesWithLogger starts sicore as the k8shim's main does,
// registers, gets a node answered, and stops; the binding's records reach
// the zap logger.
func TestStartAllServicesWithLogger(t *testing.T) {
	t.Setenv(EnvRESTAddress, "127.0.0.1:0")
	core, logs := observer.New(zapcore.DebugLevel)
	cfg := zap.NewProductionConfig()
	cfg.Level = zap.NewAtomicLevelAt(zapcore.InfoLevel)
	ctx := StartAllServicesWithLogger(zap.New(core), &cfg)
	if ctx.RMProxy == nil || ctx.Scheduler == nil {
		t.Fatal("RMProxy is nil")
	}
	defer ctx.StopAll()
	addr, err := ctx.Scheduler.RESTAddress()
	if err != nil || !strings.HasPrefix(addr, "127.0.0.1:") {
		t.Errorf("REST address %q (%v), want 127.0.0.1:<port>", addr, err)
	}
	rm := &nodeRM{answered: map[string]bool{}}
	if _, err := ctx.RMProxy.RegisterResourceManager(&si.RegisterResourceManagerRequest{
		RmID: "mycluster", Version: "1.8.0", PolicyGroup: "queues"}, rm); err != nil {
		t.Fatalf("RegisterResourceManager: %v", err)
	}
	err = ctx.RMProxy.UpdateNode(&si.NodeRequest{RmID: "mycluster", Nodes: []*si.NodeInfo{{
		NodeID: "node-1", Action: si.NodeInfo_CREATE_DRAIN,
		SchedulableResource: &si.Resource{Resources: map[string]*si.Quantity{"memory": {Value: 10}}},
	}}})
	if err != nil {
		t.Fatalf("UpdateNode: %v", err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		rm.mu.Lock()
		ok, answered := rm.answered["node-1"]
		rm.mu.Unlock()
		if answered {
			if !ok {
				t.Errorf("node-1 rejected")
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no answer for node-1")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if len(logs.FilterMessage("sicore: scheduler started").AllUntimed()) != 1 || logs.FilterMessage("sicore: scheduler started").AllUntimed()[0].LoggerName != "sicore" {
		t.Errorf("the start record did not reach the zap logger: %v", logs.All())
	}
	ctx.StopAll()
	if err := ctx.RMProxy.UpdateNode(&si.NodeRequest{RmID: "mycluster"}); err == nil {
		t.Errorf("UpdateNode after StopAll succeeded")
	}
}

// TestStartFailureLeavesRMProxyNil: when sicore cannot start, RMProxy is
// a nil interface (the k8shim checks it), not a nil *Scheduler.
func TestStartFailureLeavesRMProxyNil(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	t.Setenv(EnvRESTAddress, l.Addr().String())
	ctx := StartAllServices()
	if ctx.RMProxy != nil {
		ctx.StopAll()
		t.Fatalf("RMProxy %v although the REST port is taken", ctx.RMProxy)
	}
	ctx.StopAll() // a no-op
}

// TestRESTOff: SICORE_REST_ADDRESS=off starts no REST service.
func TestRESTOff(t *testing.T) {
	t.Setenv(EnvRESTAddress, "off")
	ctx := StartAllServices()
	if ctx.Scheduler == nil {
		t.Fatal("RMProxy is nil")
	}
	defer ctx.StopAll()
	if addr, err := ctx.Scheduler.RESTAddress(); err != nil || addr != "" {
		t.Errorf("REST address %q (%v), want none", addr, err)
	}
}

// TestZapHandler: levels, attributes and groups of slog records as zap
// fields.
func TestZapHandler(t *testing.T) {
	core, logs := observer.New(zapcore.InfoLevel)
	l := slog.New(newZapHandler(zap.New(core)))
	l.Debug("dropped")
	l.With("rm", "mycluster").WithGroup("req").Warn("w", "n", 3, slog.Group("g", "ok", true))
	l.Error("e", "d", time.Second)
	all := logs.All()
	if len(all) != 2 {
		t.Fatalf("records %v, want 2", all)
	}
	w := all[0].ContextMap()
	if all[0].Level != zapcore.WarnLevel || w["rm"] != "mycluster" || w["req.n"] != int64(3) || w["req.g.ok"] != true {
		t.Errorf("warn record %v %v", all[0].Level, w)
	}
	if all[1].Level != zapcore.ErrorLevel || all[1].ContextMap()["d"] != time.Second {
		t.Errorf("error record %v %v", all[1].Level, all[1].ContextMap())
	}
	if got := startLevel(zap.New(core), nil); got != slog.LevelInfo {
		t.Errorf("start level of an info logger: %v", got)
	}
}
