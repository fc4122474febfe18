// Package entrypoint stands in for yunikorn-core's pkg/entrypoint: it
// starts sicore and hands the resource manager its api.SchedulerAPI, so
// that an RM written for the YuniKorn core v1.8 (the k8shim's main and
// its scheduler plugin) runs on sicore unchanged. In the RM's go.mod:
//
//	replace github.com/apache/yunikorn-core => github.com/sicore/sicore/bindings/go-v1 vX.Y.Z
//
// (or a local path to this directory). ServiceContext.RMProxy is then a
// *sicore.Scheduler of the SI v1.x edition.
//
// The environment chooses what the YuniKorn core took from its own
// defaults:
//
//   - SICORE_REST_ADDRESS: where the REST service listens (default
//     ":9080", every interface on the YuniKorn core's port, so the
//     k8shim's admission controller, a liveness probe and Prometheus reach
//     it through the scheduler's service; "off" starts none);
//   - SICORE_REST_TOKEN: the bearer token that enables changes through
//     REST (configuration, log level). Without it every read is served
//     and every change is refused with 403 naming this variable;
//   - SICORE_REST_ALLOWED_HOSTS: comma-separated Host values to accept
//     ("name", "name:port", "name:*", "*.domain"). Unset, a service bound
//     beyond loopback accepts any Host, as behind YuniKorn's web server;
//   - the queue configuration and the extraConfig keys (log levels, event
//     settings) come from the RM, in its registration request and in
//     UpdateConfiguration, as with the YuniKorn core.
//
// When the REST service cannot start (its port is taken, say), the reason
// is logged and the scheduler runs without it, as the YuniKorn core's web
// service does. When sicore itself cannot start, the reason is logged and
// RMProxy is nil: the k8shim then exits.
package entrypoint

import (
	"log/slog"
	"os"
	"strings"

	"github.com/apache/yunikorn-scheduler-interface/lib/go/api"
	"go.uber.org/zap"

	"github.com/apache/yunikorn-core/pkg/scheduler"
	"github.com/apache/yunikorn-core/pkg/sicore"
)

// EnvRESTAddress names the variable that sets the REST address.
const EnvRESTAddress = "SICORE_REST_ADDRESS"

// EnvRESTToken names the variable that sets the REST token.
const EnvRESTToken = "SICORE_REST_TOKEN"

// EnvRESTAllowedHosts names the variable that sets the accepted Host values.
const EnvRESTAllowedHosts = "SICORE_REST_ALLOWED_HOSTS"

// DefaultRESTAddress is where the REST service listens by default, the
// port of the YuniKorn core's web service.
const DefaultRESTAddress = ":9080"

// ServiceContext is what the services' start returns. RMProxy is what an
// RM of the YuniKorn core runs on; Scheduler is what its tests look into.
type ServiceContext struct {
	// RMProxy is the scheduler core's API for the RM: the sicore
	// scheduler, or nil when it could not start.
	RMProxy api.SchedulerAPI
	// Scheduler is the same scheduler with sicore's own methods
	// (StateDump, Metrics, RESTAddress) and the reference's
	// GetClusterContext, which RMs' tests use to look into the core; nil
	// when it could not start.
	Scheduler *scheduler.Scheduler
}

// StopAll stops the scheduler: its threads, its REST service and every
// registration (sicore.Scheduler.Close).
func (s *ServiceContext) StopAll() {
	if s.Scheduler != nil {
		s.Scheduler.Stop()
	}
}

// StartAllServices starts sicore with its log records going to
// slog.Default().
func StartAllServices() *ServiceContext {
	return start(slog.Default())
}

// StartAllServicesWithLogger starts sicore with its log records (the
// library's and the binding's) going to logger, named "sicore". The
// library filters at the level of zapConfigs (or logger's, without it)
// as it is when the services start; the RM's log.* extraConfig keys can
// change it later.
func StartAllServicesWithLogger(logger *zap.Logger, zapConfigs *zap.Config) *ServiceContext {
	if logger == nil {
		return StartAllServices()
	}
	l := slog.New(newZapHandler(logger.Named("sicore")))
	level := startLevel(logger, zapConfigs)
	sicore.SetLogger(l, level)
	return start(l, sicore.WithLogLevel(level))
}

// newScheduler is sicore.New; tests replace it to make the start fail.
var newScheduler = sicore.New

func start(l *slog.Logger, extra ...sicore.Option) *ServiceContext {
	base := append([]sicore.Option{sicore.WithLogger(l)}, extra...)
	opts := append([]sicore.Option(nil), base...)
	addr, set := os.LookupEnv(EnvRESTAddress)
	if !set {
		addr = DefaultRESTAddress
	}
	if addr != "off" && addr != "" {
		opts = append(opts, sicore.WithRESTAddress(addr))
		if token := strings.TrimSpace(os.Getenv(EnvRESTToken)); token != "" {
			opts = append(opts, sicore.WithRESTToken(token))
		}
		var hosts []string
		for _, h := range strings.Split(os.Getenv(EnvRESTAllowedHosts), ",") {
			if h = strings.TrimSpace(h); h != "" {
				hosts = append(hosts, h)
			}
		}
		if len(hosts) > 0 {
			opts = append(opts, sicore.WithRESTAllowedHosts(hosts...))
		}
	}
	sched, err := newScheduler(opts...)
	if err != nil && addr != "off" && addr != "" {
		// The YuniKorn core logs a web service that cannot listen and goes
		// on scheduling; so does the drop-in. An RM that starts several
		// cores in one process (the k8shim's own tests) gets them all.
		l.Error("sicore: the REST service cannot start; the scheduler runs without it",
			"address", addr, "variable", EnvRESTAddress, "error", err)
		addr = "off"
		sched, err = newScheduler(base...)
	}
	if err != nil {
		l.Error("sicore: cannot start the scheduler", "error", err)
		return &ServiceContext{}
	}
	l.Info("sicore: scheduler started", "version", sicore.Version(), "rest", addr)
	return &ServiceContext{RMProxy: sched, Scheduler: scheduler.New(sched)}
}
