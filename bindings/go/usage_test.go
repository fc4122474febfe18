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

const limitsConfig = `
partitions:
  - name: default
    queues:
      - name: root
        submitacl: '*'
        limits:
          - {limit: per user, users: [alice], maxresources: {memory: 2000}}
          - {limit: dev, groups: [dev], maxapplications: 5}
        queues:
          - name: a
`

// TestUsageEndpoints reads the v1.x user and group usage endpoints of a
// partition whose user cap lets two of three asks through.
func TestUsageEndpoints(t *testing.T) {
	s := newTestScheduler(t, WithRESTAddress("127.0.0.1:0"), WithPolicyConfig("queues", limitsConfig))
	rm := newFakeRM()
	const rmID = "rm-usage"
	setUp(t, s, rmID, rm, "app-1", "root.a", "node-1")
	asks := &si.AllocationRequest{RmID: rmID, Asks: []*si.AllocationAsk{
		ask("app-1", "ask-1", 1000, 1), ask("app-1", "ask-2", 1000, 1), ask("app-1", "ask-3", 1000, 1),
	}}
	if err := s.UpdateAllocation(asks); err != nil {
		t.Fatalf("UpdateAllocation: %v", err)
	}
	waitFor(t, "2 allocations", func() bool { return rm.allocationCount() == 2 })

	addr, err := s.RESTAddress()
	if err != nil {
		t.Fatalf("RESTAddress: %v", err)
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
	type level struct {
		QueuePath           string           `json:"queuePath"`
		ResourceUsage       map[string]int64 `json:"resourceUsage"`
		RunningApplications []string         `json:"runningApplications"`
		MaxResources        map[string]int64 `json:"maxResources"`
		MaxApplications     uint64           `json:"maxApplications"`
		Children            []level          `json:"children"`
	}
	type user struct {
		UserName string            `json:"userName"`
		Groups   map[string]string `json:"groups"`
		Queues   level             `json:"queues"`
	}
	var alice user
	waitFor(t, "alice at her cap in /usage/user/alice", func() bool {
		code, body := get("/ws/v1/partition/default/usage/user/alice")
		if code != http.StatusOK {
			t.Fatalf("GET usage/user/alice: %d %s", code, body)
		}
		if err := json.Unmarshal([]byte(body), &alice); err != nil {
			t.Fatalf("not JSON: %v: %s", err, body)
		}
		return alice.Queues.ResourceUsage["memory"] == 2000
	})
	if alice.UserName != "alice" || alice.Groups["app-1"] != "dev" {
		t.Errorf("user = %+v", alice)
	}
	if alice.Queues.QueuePath != "root" || alice.Queues.MaxResources["memory"] != 2000 {
		t.Errorf("root level = %+v", alice.Queues)
	}
	if len(alice.Queues.Children) != 1 || alice.Queues.Children[0].QueuePath != "root.a" ||
		len(alice.Queues.Children[0].RunningApplications) != 1 {
		t.Errorf("children = %+v", alice.Queues.Children)
	}

	code, body := get("/ws/v1/partition/default/usage/users")
	var users []user
	if code != http.StatusOK || json.Unmarshal([]byte(body), &users) != nil || len(users) != 1 {
		t.Errorf("usage/users: %d %s", code, body)
	}
	type group struct {
		GroupName    string   `json:"groupName"`
		Applications []string `json:"applications"`
		Queues       level    `json:"queues"`
	}
	code, body = get("/ws/v1/partition/default/usage/group/dev")
	var dev group
	if code != http.StatusOK || json.Unmarshal([]byte(body), &dev) != nil {
		t.Fatalf("usage/group/dev: %d %s", code, body)
	}
	if dev.Queues.MaxApplications != 5 || len(dev.Applications) != 1 || dev.Queues.ResourceUsage["memory"] != 2000 {
		t.Errorf("group dev = %+v", dev)
	}
	code, body = get("/ws/v1/partition/default/usage/groups")
	if code != http.StatusOK || !strings.Contains(body, `"groupName":"dev"`) {
		t.Errorf("usage/groups: %d %s", code, body)
	}
	if code, body = get("/ws/v1/partition/default/usage/user/bob"); code != http.StatusNotFound ||
		!strings.Contains(body, "User not found") {
		t.Errorf("unknown user: %d %s", code, body)
	}
	if code, body = get("/ws/v1/partition/default/usage/group/1bad"); code != http.StatusBadRequest ||
		!strings.Contains(body, "Invalid group name") {
		t.Errorf("bad group name: %d %s", code, body)
	}
}
