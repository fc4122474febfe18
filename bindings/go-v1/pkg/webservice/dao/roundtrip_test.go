package dao_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/apache/yunikorn-core/pkg/sicore"
	"github.com/apache/yunikorn-core/pkg/webservice/dao"
	"github.com/apache/yunikorn-scheduler-interface/lib/go/si"
)

// A queue configuration with a limit, so the usage answers have content.
const queuesYAML = `partitions:
  - name: default
    queues:
      - name: root
        submitacl: '*'
        queues:
          - name: a
            resources:
              max:
                memory: 1000
            limits:
              - limit: alice
                users: [alice]
                maxapplications: 5
              - limit: devs
                groups: [devs]
                maxapplications: 5
`

// quietRM answers every callback and tells the test of each allocation.
type quietRM struct{ allocated chan string }

func (r *quietRM) UpdateAllocation(resp *si.AllocationResponse) error {
	for _, a := range resp.New {
		r.allocated <- a.AllocationKey
	}
	return nil
}
func (r *quietRM) UpdateApplication(*si.ApplicationResponse) error { return nil }
func (r *quietRM) UpdateNode(*si.NodeResponse) error               { return nil }
func (r *quietRM) Predicates(*si.PredicatesArgs) error             { return nil }
func (r *quietRM) PreemptionPredicates(*si.PreemptionPredicatesArgs) *si.PreemptionPredicatesResponse {
	return &si.PreemptionPredicatesResponse{Index: -1}
}
func (r *quietRM) SendEvent([]*si.EventRecord)                                              {}
func (r *quietRM) UpdateContainerSchedulingState(*si.UpdateContainerSchedulingStateRequest) {}

// cluster is a scheduler with REST on loopback, one RM, one node and one
// application of alice with one allocation.
func cluster(t *testing.T) (base string) {
	t.Helper()
	s, err := sicore.New(
		sicore.WithRESTAddress("127.0.0.1:0"),
		sicore.WithEventTypes(si.EventRecord_REQUEST, si.EventRecord_APP, si.EventRecord_NODE),
	)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	rm := &quietRM{allocated: make(chan string, 8)}
	if _, err := s.RegisterResourceManager(&si.RegisterResourceManagerRequest{
		RmID: "rm1", Version: "1.9.0", PolicyGroup: "queues", Config: queuesYAML}, rm); err != nil {
		t.Fatal(err)
	}
	res := func(mem int64) *si.Resource {
		return &si.Resource{Resources: map[string]*si.Quantity{"memory": {Value: mem}, "vcore": {Value: 1}}}
	}
	if err := s.UpdateNode(&si.NodeRequest{RmID: "rm1", Nodes: []*si.NodeInfo{{
		NodeID: "node-1", Action: si.NodeInfo_CREATE, SchedulableResource: res(4000),
		Attributes: map[string]string{"si.io/hostname": "node-1"}}}}); err != nil {
		t.Fatal(err)
	}
	if err := s.UpdateApplication(&si.ApplicationRequest{RmID: "rm1", New: []*si.AddApplicationRequest{{
		ApplicationID: "app-1", QueueName: "root.a", PartitionName: "default",
		Ugi: &si.UserGroupInformation{User: "alice", Groups: []string{"devs"}}}}}); err != nil {
		t.Fatal(err)
	}
	if err := s.UpdateAllocation(&si.AllocationRequest{RmID: "rm1", Allocations: []*si.Allocation{{
		AllocationKey: "ask-1", ApplicationID: "app-1", PartitionName: "default", ResourcePerAlloc: res(100)}}}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-rm.allocated:
	case <-time.After(30 * time.Second):
		t.Fatal("no allocation")
	}
	addr, err := s.RESTAddress()
	if err != nil {
		t.Fatal(err)
	}
	return "http://" + addr
}

// get answers the body of GET base+path, requiring status want.
func get(t *testing.T, base, path string, want int) []byte {
	t.Helper()
	resp, err := http.Get(base + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != want {
		t.Fatalf("GET %s: status %d, want %d: %s", path, resp.StatusCode, want, body)
	}
	return body
}

// roundTrip decodes body into a new value of target's type (refusing
// unknown fields when strict), encodes it again and decodes both texts
// generically: the re-encoded text must say what sicore said, so every
// field sicore sends has a home in the type, with its JSON type. Empty
// values are left out of both sides first: a type that omits an empty
// field sicore sends (or the reverse) loses nothing.
func roundTrip(t *testing.T, what string, body []byte, target any, strict bool) any {
	t.Helper()
	v := reflect.New(reflect.TypeOf(target)).Interface()
	dec := json.NewDecoder(bytes.NewReader(body))
	if strict {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(v); err != nil {
		t.Fatalf("%s: decoding into %T: %v\n%s", what, target, err, body)
	}
	again, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("%s: encoding %T: %v", what, target, err)
	}
	var sent, back any
	if err := json.Unmarshal(body, &sent); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if err := json.Unmarshal(again, &back); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if !reflect.DeepEqual(prune(sent), prune(back)) {
		t.Errorf("%s: %T does not keep the answer\nsent: %s\nback: %s", what, target, body, again)
	}
	return reflect.ValueOf(v).Elem().Interface()
}

// prune is v without empty strings, false, zeros, nulls and empty arrays
// and objects (in objects; array elements stay, so positions hold).
func prune(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			if p := prune(e); !empty(p) {
				out[k] = p
			}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = prune(e)
		}
		return out
	}
	return v
}

func empty(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case string:
		return x == ""
	case bool:
		return !x
	case float64:
		return x == 0
	case map[string]any:
		return len(x) == 0
	case []any:
		return len(x) == 0
	}
	return false
}

// The routes whose answers the dao types describe, with the type each
// decodes into. A route whose answer takes its v1.x shape joins the list
// with its type (e.g. {"/ws/v1/partitions", []dao.PartitionInfo{}, true}).
var routes = []struct {
	path   string
	target any
	strict bool
}{
	{"/ws/v1/scheduler/healthcheck", dao.SchedulerHealthDAOInfo{}, true},
	{"/ws/v1/partition/default/usage/users", []dao.UserResourceUsageDAOInfo{}, true},
	{"/ws/v1/partition/default/usage/user/alice", dao.UserResourceUsageDAOInfo{}, true},
	{"/ws/v1/partition/default/usage/groups", []dao.GroupResourceUsageDAOInfo{}, true},
	{"/ws/v1/partition/default/usage/group/devs", dao.GroupResourceUsageDAOInfo{}, true},
	{"/ws/v1/events/batch", dao.EventRecordDAO{}, true},
	{"/ws/v1/events/batch?start=1&count=2", dao.EventRecordDAO{}, true},
}

func TestSicoreAnswersRoundTripThroughDAO(t *testing.T) {
	base := cluster(t)
	for _, r := range routes {
		roundTrip(t, r.path, get(t, base, r.path, http.StatusOK), r.target, r.strict)
	}

	// The event records: the SI record's fields, plus partition and queue.
	batch := roundTrip(t, "events", get(t, base, "/ws/v1/events/batch", http.StatusOK),
		dao.EventRecordDAO{}, true).(dao.EventRecordDAO)
	if batch.InstanceUUID == "" || len(batch.EventRecords) == 0 {
		t.Fatalf("no records: %+v", batch)
	}
	var sawApp bool
	for _, e := range batch.EventRecords {
		if e.Type == si.EventRecord_APP && e.ObjectID == "app-1" {
			sawApp = true
			if e.Partition != "default" || e.Queue != "root.a" {
				t.Errorf("APP record of app-1 at %q/%q", e.Partition, e.Queue)
			}
		}
	}
	if !sawApp {
		t.Errorf("no APP record of app-1 in %s", get(t, base, "/ws/v1/events/batch", http.StatusOK))
	}

	// Errors decode into YAPIError.
	for _, path := range []string{"/ws/v1/events/batch?count=0", "/ws/v1/partition/default/usage/user/no%20body"} {
		e := roundTrip(t, path, get(t, base, path, http.StatusBadRequest), dao.YAPIError{}, true).(dao.YAPIError)
		if e.StatusCode != http.StatusBadRequest || e.Message == "" {
			t.Errorf("%s: %+v", path, e)
		}
	}

	// validate-conf answers ValidateConfResponse, either way.
	for text, allowed := range map[string]bool{queuesYAML: true, "partitions: [": false} {
		resp, err := http.Post(base+"/ws/v1/validate-conf", "application/x-yaml", strings.NewReader(text))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		v := roundTrip(t, "validate-conf", body, dao.ValidateConfResponse{}, true).(dao.ValidateConfResponse)
		if v.Allowed != allowed {
			t.Errorf("validate-conf of %q: %+v", text, v)
		}
	}

	// The stream's first line is a YunikornID, then records.
	resp, err := http.Get(base + "/ws/v1/events/stream?count=2")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	lines := bufio.NewScanner(resp.Body)
	for i := 0; i < 3; i++ {
		if !lines.Scan() {
			t.Fatalf("stream line %d: %v", i, lines.Err())
		}
		if i == 0 {
			id := roundTrip(t, "stream id", lines.Bytes(), dao.YunikornID{}, true).(dao.YunikornID)
			if id.InstanceUUID != batch.InstanceUUID {
				t.Errorf("stream of %q, batch of %q", id.InstanceUUID, batch.InstanceUUID)
			}
			continue
		}
		roundTrip(t, fmt.Sprintf("stream line %d", i), lines.Bytes(), dao.EventRecordInfo{}, true)
	}
}
