package sicore

import (
	"testing"
	"time"

	"github.com/apache/incubator-yunikorn-scheduler-interface/lib/go/si"
)

// TestSendEvent checks that the library's event batches reach
// ResourceManagerCallback.SendEvent decoded: an ask that does not fit its
// queue's maximum produces an InsufficientQueueResources request event.
func TestSendEvent(t *testing.T) {
	const queues = `
partitions:
  - name: default
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: small
            resources:
              max:
                memory: 100
                vcore: 10
`
	s := newTestScheduler(t, WithPolicyConfig("queues", queues), WithEventFlushInterval(20*time.Millisecond))
	rm := newFakeRM()
	const rmID = "rm-events"
	setUp(t, s, rmID, rm, "app-1", "root.small", "node-1")
	err := s.UpdateAllocation(&si.AllocationRequest{RmID: rmID, Asks: []*si.AllocationAsk{ask("app-1", "too-big", 1000, 1)}})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		var ok bool
		rm.read(func() {
			for _, e := range rm.events {
				if e.Type == si.EventRecord_REQUEST && e.ObjectID == "too-big" && e.GroupID == "app-1" {
					ok = e.Reason != "" && e.TimestampNano > 0
				}
			}
		})
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the library sent no InsufficientQueueResources event within 20s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	rm.read(func() { t.Logf("event: %v", rm.events[0]) })
}
