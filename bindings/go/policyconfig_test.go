package sicore

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/incubator-yunikorn-scheduler-interface/lib/go/si"
)

// rmConfig is what the state dump says about one resource manager's
// configuration.
type rmConfig struct {
	RmID     string `json:"rm_id"`
	Source   string `json:"config_source"`
	Checksum string `json:"config_checksum"`
}

func configOf(t *testing.T, s *Scheduler, rmID string) (rmConfig, string) {
	t.Helper()
	dump := stateDump(t, s)
	var d struct {
		Rms []rmConfig `json:"rms"`
	}
	if err := json.Unmarshal([]byte(dump), &d); err != nil {
		t.Fatal(err)
	}
	for _, r := range d.Rms {
		if r.RmID == rmID {
			return r, dump
		}
	}
	t.Fatalf("RM %s not in the dump", rmID)
	return rmConfig{}, ""
}

func rootWith(children ...string) string {
	y := "partitions:\n  - name: default\n    queues:\n      - name: root\n        submitacl: \"*\"\n"
	if len(children) > 0 {
		y += "        queues:\n"
		for _, c := range children {
			y += "          - name: " + c + "\n"
		}
	}
	return y
}

// TestSetPolicyConfig replaces the in-memory configuration of a running
// resource manager: a valid text applies before the call returns, an
// invalid one is rejected and the old one stays, and a group no resource
// manager uses is kept for a later registration.
func TestSetPolicyConfig(t *testing.T) {
	s := newTestScheduler(t, WithPolicyConfig("queues", rootWith("a")))
	register(t, s, "rm-set", newFakeRM())
	before, _ := configOf(t, s, "rm-set")

	if err := s.SetPolicyConfig("queues", rootWith("a", "added")); err != nil {
		t.Fatalf("SetPolicyConfig: %v", err)
	}
	after, dump := configOf(t, s, "rm-set")
	if after.Checksum == before.Checksum || after.Source != "in-memory" {
		t.Fatalf("configuration not replaced: %+v -> %+v", before, after)
	}
	if !strings.Contains(dump, `"root.added"`) {
		t.Fatalf("root.added missing from the dump: %s", dump)
	}

	err := s.SetPolicyConfig("queues", rootWith("a", "not a name"))
	if !errors.Is(err, ErrRejected) {
		t.Fatalf("invalid text: got %v, want ErrRejected", err)
	}
	if !strings.Contains(err.Error(), "not a name") {
		t.Errorf("the reason does not name the bad queue: %v", err)
	}
	if kept, _ := configOf(t, s, "rm-set"); kept.Checksum != after.Checksum {
		t.Fatalf("a rejected text changed the configuration")
	}

	if err := s.SetPolicyConfig("", rootWith()); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("empty group: got %v, want ErrInvalidArgument", err)
	}

	// A group nobody uses yet: checked, kept, used by a later registration.
	if err := s.SetPolicyConfig("later", "partitions: ["); !errors.Is(err, ErrRejected) {
		t.Fatalf("invalid text for an unused group: got %v, want ErrRejected", err)
	}
	if err := s.SetPolicyConfig("later", rootWith("z")); err != nil {
		t.Fatalf("SetPolicyConfig(later): %v", err)
	}
	if kept, _ := configOf(t, s, "rm-set"); kept.Checksum != after.Checksum {
		t.Fatalf("another group's text changed rm-set's configuration")
	}
	_, err = s.RegisterResourceManager(&si.RegisterResourceManagerRequest{
		RmID: "rm-later", PolicyGroup: "later", Version: "test",
	}, newFakeRM())
	if err != nil {
		t.Fatalf("RegisterResourceManager(later): %v", err)
	}
	if c, _ := configOf(t, s, "rm-later"); c.Source != "in-memory" {
		t.Fatalf("rm-later config source %q, want in-memory", c.Source)
	}

	s.Close()
	if err := s.SetPolicyConfig("queues", rootWith()); !errors.Is(err, ErrStopped) {
		t.Fatalf("after Close: got %v, want ErrStopped", err)
	}
}

// TestEventTypes checks that APP records reach SendEvent only when asked
// for: by default the library sends the REQUEST and NODE records a v0.12
// RM understands.
func TestEventTypes(t *testing.T) {
	run := func(t *testing.T, opts ...Option) []*si.EventRecord {
		opts = append(opts, WithPolicyConfig("queues", rootWith("a")), WithEventFlushInterval(20*time.Millisecond))
		s := newTestScheduler(t, opts...)
		rm := newFakeRM()
		setUp(t, s, "rm-ev", rm, "app-1", "root.a", "node-1")
		if err := s.UpdateAllocation(&si.AllocationRequest{RmID: "rm-ev", Asks: []*si.AllocationAsk{ask("app-1", "k", 10, 1)}}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "allocation", func() bool { return rm.allocationCount() == 1 })
		// Drained after the application started: the NODE record is
		// produced after every APP record, and batches keep creation order.
		drain := nodeRequest("rm-ev", 0, 0, "node-1")
		drain.Nodes[0].Action = si.NodeInfo_DRAIN_NODE
		drain.Nodes[0].SchedulableResource = nil
		if err := s.UpdateNode(drain); err != nil {
			t.Fatal(err)
		}
		var events []*si.EventRecord
		waitFor(t, "drain event", func() (ok bool) {
			rm.read(func() {
				for _, e := range rm.events {
					ok = ok || (e.Type == si.EventRecord_NODE && e.ObjectID == "node-1" && e.Reason == "NodeDraining")
				}
				events = append([]*si.EventRecord(nil), rm.events...)
			})
			return ok
		})
		return events
	}
	count := func(events []*si.EventRecord, typ si.EventRecord_Type) (n int) {
		for _, e := range events {
			if e.Type == typ {
				n++
			}
		}
		return n
	}

	t.Run("default", func(t *testing.T) {
		events := run(t)
		if n := count(events, si.EventRecord_APP); n != 0 {
			t.Fatalf("%d APP records sent by default: %v", n, events)
		}
	})
	t.Run("opt-in", func(t *testing.T) {
		events := run(t, WithEventTypes(si.EventRecord_REQUEST, si.EventRecord_NODE, si.EventRecord_APP))
		if count(events, si.EventRecord_APP) == 0 {
			t.Fatalf("no APP record although asked for: %v", events)
		}
	})
	t.Run("invalid", func(t *testing.T) {
		if _, err := New(WithEventTypes()); !errors.Is(err, ErrInvalidArgument) {
			t.Fatalf("no types: got %v, want ErrInvalidArgument", err)
		}
		if _, err := New(WithEventTypes(si.EventRecord_UNKNOWN_EVENTRECORD_TYPE)); !errors.Is(err, ErrInvalidArgument) {
			t.Fatalf("unknown type: got %v, want ErrInvalidArgument", err)
		}
	})
}

// watcherThreads counts this process's configuration watcher threads.
func watcherThreads(t *testing.T) int {
	t.Helper()
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	n := 0
	for _, task := range tasks {
		comm, err := os.ReadFile(filepath.Join("/proc/self/task", task.Name(), "comm"))
		if err == nil && strings.HasPrefix(string(comm), "sicore-watch") {
			n++
		}
	}
	return n
}

// replaceFile swaps dir/queues.yaml in one step, as the kubelet updates a
// mounted configmap.
func replaceFile(t *testing.T, dir, yaml string) {
	t.Helper()
	tmp := filepath.Join(dir, ".queues.yaml.new")
	if err := os.WriteFile(tmp, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "queues.yaml")); err != nil {
		t.Fatal(err)
	}
}

// TestConfigurationWatcher is the RM's view of spec 2.8: UpdateConfiguration
// comes before the file changes; a broken version is reported as a QUEUE
// event and the next valid one is applied without another call; Close stops
// the watcher.
func TestConfigurationWatcher(t *testing.T) {
	dir := t.TempDir()
	replaceFile(t, dir, rootWith("a"))
	others := watcherThreads(t) // of schedulers other tests left open
	s := newTestScheduler(t, WithConfigDir(dir), WithEventFlushInterval(20*time.Millisecond),
		WithEventTypes(si.EventRecord_NODE, si.EventRecord_QUEUE))
	rm := newFakeRM()
	register(t, s, "rm-watch", rm)
	before, _ := configOf(t, s, "rm-watch")
	if err := s.UpdateConfiguration("rm-watch"); err != nil {
		t.Fatalf("UpdateConfiguration: %v", err)
	}
	time.Sleep(1500 * time.Millisecond)
	replaceFile(t, dir, rootWith("a", "bad/name"))
	waitFor(t, "the refused version reported", func() (ok bool) {
		rm.read(func() {
			for _, e := range rm.events {
				ok = ok || (e.Type == si.EventRecord_QUEUE && e.Reason == "ConfigurationRejected" &&
					strings.Contains(e.Message, "bad/name"))
			}
		})
		return ok
	})
	if c, _ := configOf(t, s, "rm-watch"); c.Checksum != before.Checksum {
		t.Fatal("a broken file changed the configuration")
	}
	replaceFile(t, dir, rootWith("a", "b"))
	waitFor(t, "root.b applied by the watcher", func() bool {
		_, dump := configOf(t, s, "rm-watch")
		return strings.Contains(dump, `"root.b"`)
	})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Closed means joined; the thread leaves /proc a moment after.
	waitFor(t, "no watcher thread after Close", func() bool { return watcherThreads(t) <= others })
}
