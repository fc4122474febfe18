//go:build cgo

// The options both editions take; edition_options.go has the others and
// those whose documentation differs between the editions.

package sicore

import (
	"fmt"
	"log/slog"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
)

// LevelTrace is the slog level used for the library's trace records, one
// step below slog.LevelDebug.
const LevelTrace = slog.LevelDebug - 4

// Option configures a Scheduler in New. Most options set a field of the
// library's sicore.v1.SchedulerOptions message (proto/sicore.proto); an
// option left out keeps the library default.
type Option func(*config) error

// config collects the options before they are encoded; editionConfig
// (edition_options.go) holds the options only one edition has.
type config struct {
	editionConfig
	schedulingIntervalMs       uint64
	eventFlushIntervalMs       uint64
	logLevel                   string
	reservationDelayMs         *uint64
	disableReservation         bool
	appCompletingTimeoutMs     *uint64
	appTerminatedTimeoutMs     *uint64
	disableEvents              bool
	outstandingCheckIntervalMs uint64
	placeholderTimeoutMs       *uint64
	eventTypes                 []string
	logger                     *slog.Logger
	restAddress                string
	restToken                  string
	restAllowedHosts           []string
	restTimeoutsMs             [3]uint64 // header, body, connection
	restMaxConnections         uint32
	restMaxConnectionsPerPeer  uint32
	maxAsksPerRM               *uint64
	queueCleanerIntervalMs     *uint64
	withoutPredicates          bool
	goexitGuard                *bool // nil: testing.Testing()
}

// WithSchedulingInterval sets the longest sleep of an idle scheduling
// loop (library default 100ms).
func WithSchedulingInterval(d time.Duration) Option {
	return durationOption("WithSchedulingInterval", d, func(c *config, ms uint64) { c.schedulingIntervalMs = ms })
}

// WithEventFlushInterval sets how often batched events are handed to
// ResourceManagerCallback.SendEvent (library default 2s).
func WithEventFlushInterval(d time.Duration) Option {
	return durationOption("WithEventFlushInterval", d, func(c *config, ms uint64) { c.eventFlushIntervalMs = ms })
}

// WithReservationDelay sets the age an ask must reach before it may
// reserve a node (library default 2s).
func WithReservationDelay(d time.Duration) Option {
	return durationOption("WithReservationDelay", d, func(c *config, ms uint64) { c.reservationDelayMs = &ms })
}

// WithoutReservation turns node reservations off (YuniKorn's
// DISABLE_RESERVATION).
func WithoutReservation() Option {
	return func(c *config) error {
		c.disableReservation = true
		return nil
	}
}

// WithoutEvents turns the event system off: SendEvent is never called.
func WithoutEvents() Option {
	return func(c *config) error {
		c.disableEvents = true
		return nil
	}
}

// WithAppCompletingTimeout sets how long an application stays Completing
// before it is Completed (library default 30 seconds).
func WithAppCompletingTimeout(d time.Duration) Option {
	return durationOption("WithAppCompletingTimeout", d, func(c *config, ms uint64) { c.appCompletingTimeoutMs = &ms })
}

// WithAppTerminatedTimeout sets how long a Completed or Failed application
// is kept before it expires (library default 3 days).
func WithAppTerminatedTimeout(d time.Duration) Option {
	return durationOption("WithAppTerminatedTimeout", d, func(c *config, ms uint64) { c.appTerminatedTimeoutMs = &ms })
}

// WithPlaceholderTimeout sets the gang placeholder timeout of applications
// whose executionTimeoutMilliSeconds is not positive (library default 15
// minutes). It must be at least one millisecond.
func WithPlaceholderTimeout(d time.Duration) Option {
	return func(c *config) error {
		if d <= 0 {
			return fmt.Errorf("WithPlaceholderTimeout: duration must be positive, got %v", d)
		}
		ms := uint64((d + time.Millisecond - 1) / time.Millisecond)
		c.placeholderTimeoutMs = &ms
		return nil
	}
}

// WithLogLevel sets the library's own level filter: slog.LevelError,
// LevelWarn, LevelInfo (the library default), LevelDebug or LevelTrace
// (anything below LevelDebug). Records pass to Go only if they also pass
// the level given to SetLogger.
//
// The library keeps this filter process-wide: the last New call wins.
func WithLogLevel(level slog.Level) Option {
	return func(c *config) error {
		c.logLevel = libraryLevelName(level)
		return nil
	}
}

// WithGoexitGuard chooses whether the resource manager's callbacks run
// on a goroutine of their own (on) or directly on the library's threads
// (off). The default is on in a test binary (testing.Testing()) and off
// otherwise.
//
// With the guard, runtime.Goexit in a callback (t.FailNow, t.Fatal or
// t.SkipNow in a test RM) is caught and reported like a panic. Without
// it, the Go runtime ends the whole process on such a Goexit, since the
// goroutine a library thread entered Go with may not exit, and no
// deferred function can stop a Goexit. The guard costs a switch to a
// fresh goroutine and back per callback, tens of microseconds on a busy
// machine; with Predicates registered that is two switches per allocation
// on the scheduling path (see the README, "Callback failures").
func WithGoexitGuard(on bool) Option {
	return func(c *config) error {
		c.goexitGuard = &on
		return nil
	}
}

// WithLogger sets the logger this binding uses for its own records, such
// as a recovered panic in a callback (default slog.Default()). It does not
// receive the library's records: see SetLogger.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) error {
		c.logger = l
		return nil
	}
}

func durationOption(name string, d time.Duration, set func(*config, uint64)) Option {
	return func(c *config) error {
		if d < 0 {
			return fmt.Errorf("%s: negative duration %v", name, d)
		}
		// Round up so that a positive duration never becomes 0, which
		// means "library default" for several fields.
		set(c, uint64((d+time.Millisecond-1)/time.Millisecond))
		return nil
	}
}

func libraryLevelName(level slog.Level) string {
	return [...]string{"", "error", "warn", "info", "debug", "trace"}[libraryLevel(level)]
}

// Field numbers of sicore.v1.SchedulerOptions (proto/sicore.proto) that
// both editions set.
const (
	fieldSchedulingIntervalMs       = 3
	fieldEventFlushIntervalMs       = 4
	fieldLogLevel                   = 5
	fieldReservationDelayMs         = 6
	fieldDisableReservation         = 7
	fieldAppCompletingTimeoutMs     = 9
	fieldAppTerminatedTimeoutMs     = 10
	fieldDisableEvents              = 11
	fieldOutstandingCheckIntervalMs = 12
	fieldPlaceholderTimeoutMs       = 14
	fieldEventTypes                 = 13
	fieldRESTAddress                = 16
	fieldREST                       = 17
	fieldMaxAsksPerRM               = 18
	fieldQueueCleanerIntervalMs     = 19
	fieldRESTToken                  = 1
	fieldRESTAllowedHosts           = 2
	fieldRESTHeaderTimeoutMs        = 3
	fieldRESTMaxConnections         = 6
	fieldRESTMaxConnectionsPerPeer  = 7
)

// encode writes the options as a sicore.v1.SchedulerOptions message. The
// message is small and fixed, so it is written field by field with
// protowire instead of through generated code; fields at their proto3
// default are left out, optional fields are written whenever set.
func (c *config) encode() []byte {
	b := c.editionConfig.appendTo(nil)
	str := func(num protowire.Number, v string) {
		if v != "" {
			b = protowire.AppendTag(b, num, protowire.BytesType)
			b = protowire.AppendString(b, v)
		}
	}
	u64 := func(num protowire.Number, v uint64) {
		if v != 0 {
			b = protowire.AppendTag(b, num, protowire.VarintType)
			b = protowire.AppendVarint(b, v)
		}
	}
	opt := func(num protowire.Number, v *uint64) {
		if v != nil {
			b = protowire.AppendTag(b, num, protowire.VarintType)
			b = protowire.AppendVarint(b, *v)
		}
	}
	flag := func(num protowire.Number, v bool) {
		if v {
			b = protowire.AppendTag(b, num, protowire.VarintType)
			b = protowire.AppendVarint(b, 1)
		}
	}
	u64(fieldSchedulingIntervalMs, c.schedulingIntervalMs)
	u64(fieldEventFlushIntervalMs, c.eventFlushIntervalMs)
	str(fieldLogLevel, c.logLevel)
	opt(fieldReservationDelayMs, c.reservationDelayMs)
	flag(fieldDisableReservation, c.disableReservation)
	opt(fieldAppCompletingTimeoutMs, c.appCompletingTimeoutMs)
	opt(fieldAppTerminatedTimeoutMs, c.appTerminatedTimeoutMs)
	flag(fieldDisableEvents, c.disableEvents)
	u64(fieldOutstandingCheckIntervalMs, c.outstandingCheckIntervalMs)
	opt(fieldPlaceholderTimeoutMs, c.placeholderTimeoutMs)
	for _, t := range c.eventTypes {
		str(fieldEventTypes, t)
	}
	str(fieldRESTAddress, c.restAddress)
	opt(fieldMaxAsksPerRM, c.maxAsksPerRM)
	opt(fieldQueueCleanerIntervalMs, c.queueCleanerIntervalMs)
	if rest := c.encodeREST(); len(rest) > 0 {
		b = protowire.AppendTag(b, fieldREST, protowire.BytesType)
		b = protowire.AppendBytes(b, rest)
	}
	return b
}

// encodeREST writes the sicore.v1.RestOptions the options set.
func (c *config) encodeREST() []byte {
	var b []byte
	if c.restToken != "" {
		b = protowire.AppendTag(b, fieldRESTToken, protowire.BytesType)
		b = protowire.AppendString(b, c.restToken)
	}
	for _, h := range c.restAllowedHosts {
		b = protowire.AppendTag(b, fieldRESTAllowedHosts, protowire.BytesType)
		b = protowire.AppendString(b, h)
	}
	u64 := func(num protowire.Number, v uint64) {
		if v != 0 {
			b = protowire.AppendTag(b, num, protowire.VarintType)
			b = protowire.AppendVarint(b, v)
		}
	}
	// Header, body and connection timeouts are fields 3, 4 and 5.
	for i, ms := range c.restTimeoutsMs {
		u64(fieldRESTHeaderTimeoutMs+protowire.Number(i), ms)
	}
	u64(fieldRESTMaxConnections, uint64(c.restMaxConnections))
	u64(fieldRESTMaxConnectionsPerPeer, uint64(c.restMaxConnectionsPerPeer))
	return b
}

// WithRESTToken sets the bearer token that requests changing state through
// the REST service must carry (Authorization: Bearer TOKEN). Without a
// token a service bound beyond loopback serves reads only; one bound to
// loopback accepts changes from this machine (docs/rest-and-metrics.md).
func WithRESTToken(token string) Option {
	return func(c *config) error {
		if token == "" {
			return fmt.Errorf("WithRESTToken: empty token")
		}
		c.restToken = token
		return nil
	}
}

// WithRESTAllowedHosts adds Host header values the REST service accepts:
// "name", "name:port", "name:*" (any port) or "*.domain" (any subdomain).
// Once any is set, a service bound beyond loopback serves only those names
// and IP addresses (docs/rest-and-metrics.md).
func WithRESTAllowedHosts(hosts ...string) Option {
	return func(c *config) error {
		for _, h := range hosts {
			if h == "" {
				return fmt.Errorf("WithRESTAllowedHosts: empty host")
			}
		}
		c.restAllowedHosts = append(c.restAllowedHosts, hosts...)
		return nil
	}
}

// WithRESTTimeouts sets how long a REST client has to send its request
// headers, then its body, and the longest life of one connection. A zero
// duration keeps that library default (10s, 10s, 60s).
func WithRESTTimeouts(header, body, connection time.Duration) Option {
	return func(c *config) error {
		for i, d := range [3]time.Duration{header, body, connection} {
			if d < 0 {
				return fmt.Errorf("WithRESTTimeouts: negative duration %v", d)
			}
			c.restTimeoutsMs[i] = uint64((d + time.Millisecond - 1) / time.Millisecond)
		}
		return nil
	}
}

// WithRESTConnectionLimits sets the most REST connections open at once and
// the most from one client address (health and metrics keep reserved
// slots beyond them). Zero keeps that library default (64, 32).
func WithRESTConnectionLimits(total, perPeer uint32) Option {
	return func(c *config) error {
		c.restMaxConnections = total
		c.restMaxConnectionsPerPeer = perPeer
		return nil
	}
}

// WithMaxAsksPerRM sets the most waiting asks one RM may hold across its
// partitions (library default 500,000); an ask beyond it is rejected with
// a reason naming the limit. 0 is refused.
func WithMaxAsksPerRM(n uint64) Option {
	return func(c *config) error {
		if n == 0 {
			return fmt.Errorf("WithMaxAsksPerRM: 0 asks")
		}
		c.maxAsksPerRM = &n
		return nil
	}
}

// WithQueueCleanerInterval sets the period of the queue cleaner, which
// removes empty draining queues (library default 10s). It must be at
// least a millisecond.
func WithQueueCleanerInterval(d time.Duration) Option {
	return func(c *config) error {
		if d < time.Millisecond {
			return fmt.Errorf("WithQueueCleanerInterval: %v is below 1ms", d)
		}
		ms := uint64(d / time.Millisecond)
		c.queueCleanerIntervalMs = &ms
		return nil
	}
}
