package locking

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	godeadlock "github.com/sasha-s/go-deadlock"
)

// TestConfiguresGoDeadlock: go-deadlock is configured from the
// environment at start-up, and is off unless asked for (its own default
// would watch every lock and end the process after 30s). The child
// process runs this test again with the variables set.
func TestConfiguresGoDeadlock(t *testing.T) {
	if os.Getenv("LOCKING_TEST_CHILD") == "1" {
		if !IsTrackingEnabled() || godeadlock.Opts.Disable || GetDeadlockTimeoutSeconds() != 7 ||
			godeadlock.Opts.DeadlockTimeout != 7*time.Second || !godeadlock.Opts.DisableLockOrderDetection {
			t.Fatalf("with the variables set: tracking %v, disable %v, timeout %d/%v, lock order off %v",
				IsTrackingEnabled(), godeadlock.Opts.Disable, GetDeadlockTimeoutSeconds(),
				godeadlock.Opts.DeadlockTimeout, godeadlock.Opts.DisableLockOrderDetection)
		}
		return
	}
	if os.Getenv(EnvDeadlockDetectionEnabled) == "" {
		if IsTrackingEnabled() || !godeadlock.Opts.Disable {
			t.Errorf("without %s: tracking %v, go-deadlock disabled %v; want off", EnvDeadlockDetectionEnabled,
				IsTrackingEnabled(), godeadlock.Opts.Disable)
		}
		if GetDeadlockTimeoutSeconds() != defaultTimeoutSeconds || IsDeadlockDetected() {
			t.Errorf("defaults: timeout %d, detected %v", GetDeadlockTimeoutSeconds(), IsDeadlockDetected())
		}
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestConfiguresGoDeadlock$", "-test.count=1")
	cmd.Env = append(os.Environ(), "LOCKING_TEST_CHILD=1", EnvDeadlockDetectionEnabled+"=true",
		EnvDeadlockTimeoutSeconds+"=7", EnvDisableLockOrder+"=true")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "deadlock detection on") {
		t.Errorf("child: %v\n%s", err, out)
	}
}
