package sicore

import (
	"errors"
	"log/slog"
	"reflect"
	"testing"
	"time"

	"github.com/apache/yunikorn-scheduler-interface/lib/go/si"
	"google.golang.org/protobuf/encoding/protowire"
)

// TestOptionsEncoding decodes the SchedulerOptions bytes field by field
// and compares them with the field numbers of proto/sicore.proto.
func TestOptionsEncoding(t *testing.T) {
	var c config
	for _, o := range []Option{
		WithSchedulingInterval(250 * time.Millisecond),
		WithEventFlushInterval(time.Second),
		WithLogLevel(slog.LevelDebug),
		WithReservationDelay(0), // optional: present even when 0
		WithoutReservation(),
		WithAppCompletingTimeout(1500 * time.Microsecond), // rounds up to 2ms
		WithAppTerminatedTimeout(time.Hour),
		WithoutEvents(),
		WithOutstandingCheckInterval(3 * time.Second),
		WithPlaceholderTimeout(90 * time.Second),
		WithEventTypes(si.EventRecord_NODE, si.EventRecord_USERGROUP),
		WithRESTAddress("127.0.0.1:0"),
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
			got[num] = append(got[num], string(v))
			b = b[m:]
		default:
			t.Fatalf("unexpected wire type %v for field %d", typ, num)
		}
	}
	want := map[protowire.Number][]any{
		3:  {uint64(250)},
		4:  {uint64(1000)},
		5:  {"debug"},
		6:  {uint64(0)},
		7:  {uint64(1)},
		9:  {uint64(2)},
		10: {uint64(3600000)},
		11: {uint64(1)},
		12: {uint64(3000)},
		13: {"NODE", "USERGROUP"},
		14: {uint64(90000)},
		16: {"127.0.0.1:0"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("encoded options\n got %v\nwant %v", got, want)
	}
	if len((&config{}).encode()) != 0 {
		t.Errorf("default options are not the empty message")
	}
	for _, o := range []Option{WithEventTypes(), WithEventTypes(si.EventRecord_UNKNOWN_EVENTRECORD_TYPE),
		WithPlaceholderTimeout(0), WithSchedulingInterval(-time.Second), WithRESTAddress("")} {
		if err := o(&config{}); err == nil {
			t.Errorf("a bad option was accepted")
		}
	}
}

// TestOptionsReachTheLibrary starts a scheduler with the options set and
// schedules through it; a bad option fails New with ErrInvalidArgument.
func TestOptionsReachTheLibrary(t *testing.T) {
	s := newTestScheduler(t,
		WithSchedulingInterval(10*time.Millisecond), WithEventFlushInterval(10*time.Millisecond),
		WithOutstandingCheckInterval(10*time.Millisecond), WithReservationDelay(time.Second),
		WithoutReservation(), WithoutEvents(), WithAppCompletingTimeout(time.Second),
		WithAppTerminatedTimeout(time.Second), WithLogLevel(slog.LevelWarn))
	rm := startShim(t, s, "rm-options", 0, 1000, nodeNames(1))
	rm.addApp("app-1", "root.a", nil)
	if ok, reason := rm.waitApp("app-1"); !ok {
		t.Fatalf("app-1 rejected: %s", reason)
	}
	rm.submit(&shimPod{key: "p", app: "app-1", memory: 10})
	waitFor(t, "p placed", func() bool { return rm.nodeOf("p") != "" })
	if Version() == "" {
		t.Errorf("empty library version")
	}
	if _, err := New(WithEventTypes()); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("New with a bad option: %v, want ErrInvalidArgument", err)
	}
	rm.checkClean()
}
