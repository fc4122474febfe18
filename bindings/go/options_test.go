package sicore

import (
	"log/slog"
	"reflect"
	"testing"
	"time"

	"github.com/apache/incubator-yunikorn-scheduler-interface/lib/go/si"
	"google.golang.org/protobuf/encoding/protowire"
)

// TestOptionsEncoding decodes the SchedulerOptions bytes field by field
// and compares them with the field numbers of proto/sicore.proto.
func TestOptionsEncoding(t *testing.T) {
	var c config
	for _, o := range []Option{
		WithConfigDir("/etc/yunikorn"),
		WithPolicyConfig("b", "yaml-b"),
		WithPolicyConfig("a", "yaml-a"),
		WithSchedulingInterval(250 * time.Millisecond),
		WithEventFlushInterval(time.Second),
		WithLogLevel(slog.LevelDebug),
		WithReservationDelay(0), // optional: present even when 0
		WithoutReservation(),
		WithAppStartTimeout(time.Minute),
		WithAppCompletingTimeout(1500 * time.Microsecond), // rounds up to 2ms
		WithAppTerminatedTimeout(time.Hour),
		WithoutEvents(),
		WithOutstandingCheckInterval(3 * time.Second),
		WithPlaceholderTimeout(90 * time.Second),
		WithEventTypes(si.EventRecord_NODE, si.EventRecord_APP),
	} {
		if err := o(&c); err != nil {
			t.Fatal(err)
		}
	}
	got := map[protowire.Number][]any{}
	b := c.encode()
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		b = b[n:]
		switch typ {
		case protowire.VarintType:
			v, m := protowire.ConsumeVarint(b)
			got[num] = append(got[num], v)
			b = b[m:]
		case protowire.BytesType:
			v, m := protowire.ConsumeBytes(b)
			if num == fieldPolicyConfigs {
				k, kn := protowire.ConsumeBytes(v[1:])
				val, _ := protowire.ConsumeBytes(v[1+kn+1:])
				got[num] = append(got[num], string(k)+"="+string(val))
			} else {
				got[num] = append(got[num], string(v))
			}
			b = b[m:]
		default:
			t.Fatalf("unexpected wire type %v for field %d", typ, num)
		}
	}
	want := map[protowire.Number][]any{
		1:  {"/etc/yunikorn"},
		2:  {"a=yaml-a", "b=yaml-b"},
		3:  {uint64(250)},
		4:  {uint64(1000)},
		5:  {"debug"},
		6:  {uint64(0)},
		7:  {uint64(1)},
		8:  {uint64(60000)},
		9:  {uint64(2)},
		10: {uint64(3600000)},
		11: {uint64(1)},
		12: {uint64(3000)},
		13: {"NODE", "APP"},
		14: {uint64(90000)},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("encoded options\n got %v\nwant %v", got, want)
	}
	if len((&config{}).encode()) != 0 {
		t.Errorf("default options are not the empty message")
	}
}

// TestOptionsReachTheLibrary starts schedulers with every option set.
func TestOptionsReachTheLibrary(t *testing.T) {
	s := newTestScheduler(t,
		WithSchedulingInterval(10*time.Millisecond), WithEventFlushInterval(10*time.Millisecond),
		WithOutstandingCheckInterval(10*time.Millisecond), WithReservationDelay(time.Second),
		WithoutReservation(), WithoutEvents(), WithAppStartTimeout(time.Second),
		WithAppCompletingTimeout(time.Second), WithAppTerminatedTimeout(time.Second),
		WithLogLevel(slog.LevelWarn))
	rm := newFakeRM()
	setUp(t, s, "rm", rm, "app-1", "root.x", "node-1")
	if Version() == "" {
		t.Errorf("empty library version")
	}
}
