package entrypoint

import (
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/yunikorn-scheduler-interface/lib/go/api"
	"github.com/apache/yunikorn-scheduler-interface/lib/go/si"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/apache/yunikorn-core/pkg/sicore"
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

// TestRESTPortTakenSchedulesWithoutREST: a REST port that is taken is
// logged, and the scheduler runs without REST, as the YuniKorn core's web
// service does (the k8shim's own tests start a core per test in one
// process).
func TestRESTPortTakenSchedulesWithoutREST(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	t.Setenv(EnvRESTAddress, l.Addr().String())
	ctx := StartAllServices()
	if ctx.RMProxy == nil || ctx.Scheduler == nil {
		t.Fatal("no scheduler although only the REST port is taken")
	}
	defer ctx.StopAll()
	if addr, err := ctx.Scheduler.RESTAddress(); err != nil || addr != "" {
		t.Errorf("REST address %q (%v), want none", addr, err)
	}
	if dump, err := ctx.Scheduler.StateDump(); err != nil || !strings.Contains(string(dump), "partitions") {
		t.Errorf("the scheduler does not answer: %v %.80s", err, dump)
	}
}

// TestStartFailureLeavesRMProxyNil: when sicore cannot start, RMProxy is
// a nil interface (the k8shim checks it), not a nil *Scheduler.
func TestStartFailureLeavesRMProxyNil(t *testing.T) {
	saved := newScheduler
	defer func() { newScheduler = saved }()
	newScheduler = func(...sicore.Option) (*sicore.Scheduler, error) {
		return nil, errors.New("no scheduler today")
	}
	t.Setenv(EnvRESTAddress, "off")
	ctx := StartAllServices()
	if ctx.RMProxy != nil || ctx.Scheduler != nil {
		t.Fatalf("RMProxy %v although sicore did not start", ctx.RMProxy)
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

// restCall sends one request to the scheduler's REST service at port with
// the Host header a Kubernetes service name gives, and returns the status
// and body.
func restCall(t *testing.T, method string, port string, path string, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, "http://127.0.0.1:"+port+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = "yunikorn-service.yunikorn.svc:9080"
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestDefaultStart: with no environment at all the drop-in starts as
// yunikorn-core does: REST on every interface at port 9080, reads served
// to any Host (the admission controller, probes and Prometheus come
// through the scheduler's service), and changes refused with a message
// naming the variable that enables them.
func TestDefaultStart(t *testing.T) {
	for _, k := range []string{EnvRESTAddress, EnvRESTToken, EnvRESTAllowedHosts} {
		if v, ok := os.LookupEnv(k); ok {
			os.Unsetenv(k)
			defer os.Setenv(k, v)
		}
	}
	ctx := StartAllServices()
	if ctx.RMProxy == nil {
		t.Fatal("RMProxy is nil with the default environment")
	}
	defer ctx.StopAll()
	addr, err := ctx.Scheduler.RESTAddress()
	if err != nil || !strings.HasSuffix(addr, ":9080") {
		t.Fatalf("REST address %q (%v), want port 9080 on every interface", addr, err)
	}
	if host, _, _ := net.SplitHostPort(addr); host != "::" && host != "0.0.0.0" {
		t.Errorf("REST bound to %q, want every interface", host)
	}
	if _, err := ctx.RMProxy.RegisterResourceManager(&si.RegisterResourceManagerRequest{
		RmID: "mycluster", Version: "1.9.0", PolicyGroup: "queues"}, &nodeRM{answered: map[string]bool{}}); err != nil {
		t.Fatalf("RegisterResourceManager: %v", err)
	}
	code, body := restCall(t, http.MethodGet, "9080", "/ws/v1/partitions", "")
	if code != http.StatusOK || !strings.Contains(body, `"default"`) {
		t.Errorf("GET /ws/v1/partitions: %d %s", code, body)
	}
	code, body = restCall(t, http.MethodGet, "9080", "/ws/v1/scheduler/healthcheck", "")
	if code != http.StatusOK && code != http.StatusServiceUnavailable {
		t.Errorf("health check: %d %s", code, body)
	}
	code, body = restCall(t, http.MethodPut, "9080", "/ws/v1/loglevel/info", "")
	if code != http.StatusForbidden || !strings.Contains(body, EnvRESTToken) {
		t.Errorf("PUT without a token: %d %s, want 403 naming %s", code, body, EnvRESTToken)
	}
}

// TestRESTToken: SICORE_REST_TOKEN enables changes for requests that
// carry it; a ":port" address binds every interface.
func TestRESTToken(t *testing.T) {
	t.Setenv(EnvRESTAddress, ":0")
	t.Setenv(EnvRESTToken, "s3cret")
	t.Setenv(EnvRESTAllowedHosts, "yunikorn-service.yunikorn.svc:*, ui.example")
	ctx := StartAllServices()
	if ctx.RMProxy == nil {
		t.Fatal("RMProxy is nil")
	}
	defer ctx.StopAll()
	addr, err := ctx.Scheduler.RESTAddress()
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(addr)
	if code, body := restCall(t, http.MethodPut, port, "/ws/v1/loglevel/info", ""); code != http.StatusUnauthorized {
		t.Errorf("PUT without the token: %d %s, want 401", code, body)
	}
	if code, body := restCall(t, http.MethodPut, port, "/ws/v1/loglevel/info", "s3cret"); code != http.StatusOK {
		t.Errorf("PUT with the token: %d %s, want 200", code, body)
	}
	req, _ := http.NewRequest(http.MethodGet, "http://127.0.0.1:"+port+"/ws/v1/partitions", nil)
	req.Host = "evil.example"
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("a Host outside SICORE_REST_ALLOWED_HOSTS: %d, want 403", resp.StatusCode)
	}
}
