package sicore

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/apache/incubator-yunikorn-scheduler-interface/lib/go/si"
)

// TestRESTQueuesAndMetrics starts the REST service on a free loopback
// port, reads /ws/v1/queues as the YuniKorn web UI does, and reads the
// metrics through Metrics() and /metrics.
func TestRESTQueuesAndMetrics(t *testing.T) {
	s := newTestScheduler(t, WithRESTAddress("127.0.0.1:0"))
	rm := newFakeRM()
	const rmID = "rm-rest"
	setUp(t, s, rmID, rm, "app-1", "root.a", "node-1", "node-2")
	asks := &si.AllocationRequest{RmID: rmID, Asks: []*si.AllocationAsk{ask("app-1", "ask-1", 1000, 1)}}
	if err := s.UpdateAllocation(asks); err != nil {
		t.Fatalf("UpdateAllocation: %v", err)
	}
	waitFor(t, "1 allocation", func() bool { return rm.allocationCount() == 1 })

	addr, err := s.RESTAddress()
	if err != nil || !strings.HasPrefix(addr, "127.0.0.1:") {
		t.Fatalf("RESTAddress = %q, %v", addr, err)
	}
	client := &http.Client{Timeout: 20 * time.Second}
	get := func(path string) (int, string) {
		resp, err := client.Get("http://" + addr + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		return resp.StatusCode, string(b)
	}

	// The queue view reflects the allocation once the snapshot is fresh.
	var root map[string]any
	waitFor(t, "root.a used in /ws/v1/queues", func() bool {
		code, body := get("/ws/v1/queues")
		if code != http.StatusOK {
			t.Fatalf("GET /ws/v1/queues: %d %s", code, body)
		}
		var doc struct {
			PartitionName string         `json:"partitionName"`
			Queues        map[string]any `json:"queues"`
		}
		if err := json.NewDecoder(strings.NewReader(body)).Decode(&doc); err != nil {
			t.Fatalf("queues is not JSON: %v: %s", err, body)
		}
		if doc.PartitionName != "default" {
			t.Fatalf("partitionName = %q", doc.PartitionName)
		}
		root = doc.Queues
		return strings.Contains(body, `"usedCapacity":"[memory:1000 vcore:1]"`)
	})
	if root["queuename"] != "root" {
		t.Errorf("root queue = %v", root["queuename"])
	}
	children, _ := root["queues"].([]any)
	if len(children) != 1 || children[0].(map[string]any)["queuename"] != "a" {
		t.Errorf("children of root = %v", root["queues"])
	}

	text, err := s.Metrics()
	if err != nil {
		t.Fatalf("Metrics: %v", err)
	}
	for _, want := range []string{
		`yunikorn_scheduler_container_allocation_attempt_total{state="allocated"} 1`,
		`yunikorn_scheduler_application_submission_total{result="accepted"} 1`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("Metrics() lacks %s:\n%s", want, text)
		}
	}
	code, body := get("/metrics")
	if code != http.StatusOK || !strings.Contains(body, "yunikorn_scheduler_node_active_total") {
		t.Errorf("GET /metrics: %d %s", code, body)
	}
	code, body = get("/ws/v1/nope")
	if code != http.StatusNotFound || !strings.Contains(body, `"status_code":404`) {
		t.Errorf("GET /ws/v1/nope: %d %s", code, body)
	}

	// Without the option no server runs.
	plain := newTestScheduler(t)
	if a, err := plain.RESTAddress(); err != nil || a != "" {
		t.Errorf("RESTAddress without the option = %q, %v", a, err)
	}
}
