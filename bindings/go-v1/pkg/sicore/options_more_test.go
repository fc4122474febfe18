// Code generated from bindings/go/options_more_test.go by go generate (internal/shared/gen); DO NOT EDIT.

package sicore

import (
	"reflect"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
)

// fieldsOf decodes the varint and bytes fields of one message level.
func fieldsOf(t *testing.T, b []byte) map[protowire.Number][]any {
	t.Helper()
	got := map[protowire.Number][]any{}
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
	return got
}

// TestRESTAndLimitOptionsEncoding: the REST timeouts and connection
// limits, max_asks_per_rm and queue_cleaner_interval_ms reach their
// fields of proto/sicore.proto.
func TestRESTAndLimitOptionsEncoding(t *testing.T) {
	var c config
	for _, o := range []Option{
		WithRESTToken("s3cret"),
		WithRESTAllowedHosts("sched.example"),
		WithRESTTimeouts(2*time.Second, 0, time.Minute),
		WithRESTConnectionLimits(16, 4),
		WithMaxAsksPerRM(1000),
		WithQueueCleanerInterval(250 * time.Millisecond),
	} {
		if err := o(&c); err != nil {
			t.Fatal(err)
		}
	}
	top := fieldsOf(t, c.encode())
	if got := top[fieldMaxAsksPerRM]; !reflect.DeepEqual(got, []any{uint64(1000)}) {
		t.Errorf("max_asks_per_rm: %v", got)
	}
	if got := top[fieldQueueCleanerIntervalMs]; !reflect.DeepEqual(got, []any{uint64(250)}) {
		t.Errorf("queue_cleaner_interval_ms: %v", got)
	}
	rest := fieldsOf(t, []byte(top[fieldREST][0].(string)))
	want := map[protowire.Number][]any{
		1: {"s3cret"},
		2: {"sched.example"},
		3: {uint64(2000)},
		5: {uint64(60000)},
		6: {uint64(16)},
		7: {uint64(4)},
	}
	if !reflect.DeepEqual(rest, want) {
		t.Errorf("RestOptions\n got %v\nwant %v", rest, want)
	}
	for _, bad := range []Option{
		WithMaxAsksPerRM(0),
		WithQueueCleanerInterval(0),
		WithRESTTimeouts(-time.Second, 0, 0),
	} {
		if err := bad(&config{}); err == nil {
			t.Errorf("a bad value was accepted")
		}
	}
}

// TestOptionsStartASchedulerWithLimits: the library takes the options.
func TestOptionsStartASchedulerWithLimits(t *testing.T) {
	s, err := New(WithMaxAsksPerRM(10), WithQueueCleanerInterval(time.Second),
		WithRESTTimeouts(time.Second, time.Second, time.Second), WithRESTConnectionLimits(8, 2))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
}

func TestStatusNameIsTheLibrarys(t *testing.T) {
	if got := StatusName(StatusOK); got != "SICORE_OK" {
		t.Errorf("StatusName(StatusOK) = %q", got)
	}
	if got := StatusName(Status(4242)); got != "unknown sicore_status" {
		t.Errorf("StatusName(4242) = %q", got)
	}
}
