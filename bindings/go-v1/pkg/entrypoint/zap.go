package entrypoint

import (
	"context"
	"log/slog"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/apache/yunikorn-core/pkg/sicore"
)

// zapHandler is a log/slog handler that writes to a zap logger: the
// binding logs through slog, the RMs of the YuniKorn core through zap.
type zapHandler struct {
	l      *zap.Logger
	fields []zap.Field
	group  string // prefix of the keys of attributes added from here on
}

func newZapHandler(l *zap.Logger) *zapHandler {
	return &zapHandler{l: l}
}

// zapLevel maps a slog level to zap's; slog's trace level (below debug)
// becomes debug, zap's lowest.
func zapLevel(l slog.Level) zapcore.Level {
	switch {
	case l >= slog.LevelError:
		return zapcore.ErrorLevel
	case l >= slog.LevelWarn:
		return zapcore.WarnLevel
	case l >= slog.LevelInfo:
		return zapcore.InfoLevel
	default:
		return zapcore.DebugLevel
	}
}

// slogLevel maps zap's level to slog's; zap's debug lets the library's
// trace records through too.
func slogLevel(l zapcore.Level) slog.Level {
	switch {
	case l >= zapcore.ErrorLevel:
		return slog.LevelError
	case l >= zapcore.WarnLevel:
		return slog.LevelWarn
	case l >= zapcore.InfoLevel:
		return slog.LevelInfo
	default:
		return sicore.LevelTrace
	}
}

// startLevel is the level the library filters at: zapConfigs' when given,
// else the most verbose level logger is enabled for.
func startLevel(logger *zap.Logger, zapConfigs *zap.Config) slog.Level {
	if zapConfigs != nil && zapConfigs.Level != (zap.AtomicLevel{}) {
		return slogLevel(zapConfigs.Level.Level())
	}
	for l := zapcore.DebugLevel; l < zapcore.ErrorLevel; l++ {
		if logger.Core().Enabled(l) {
			return slogLevel(l)
		}
	}
	return slog.LevelError
}

func (h *zapHandler) Enabled(_ context.Context, l slog.Level) bool {
	return h.l.Core().Enabled(zapLevel(l))
}

func (h *zapHandler) Handle(_ context.Context, r slog.Record) error {
	ce := h.l.Check(zapLevel(r.Level), r.Message)
	if ce == nil {
		return nil
	}
	fields := make([]zap.Field, 0, len(h.fields)+r.NumAttrs())
	fields = append(fields, h.fields...)
	r.Attrs(func(a slog.Attr) bool {
		fields = appendAttr(fields, h.group, a)
		return true
	})
	ce.Write(fields...)
	return nil
}

func (h *zapHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	c := *h
	c.fields = append([]zap.Field(nil), h.fields...)
	for _, a := range attrs {
		c.fields = appendAttr(c.fields, h.group, a)
	}
	return &c
}

func (h *zapHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	c := *h
	c.group = h.group + name + "."
	return &c
}

// appendAttr adds a slog attribute as zap fields, groups flattened into
// dotted keys.
func appendAttr(fields []zap.Field, prefix string, a slog.Attr) []zap.Field {
	v := a.Value.Resolve()
	if v.Kind() == slog.KindGroup {
		p := prefix
		if a.Key != "" {
			p += a.Key + "."
		}
		for _, g := range v.Group() {
			fields = appendAttr(fields, p, g)
		}
		return fields
	}
	if a.Key == "" {
		return fields
	}
	key := prefix + a.Key
	switch v.Kind() {
	case slog.KindString:
		return append(fields, zap.String(key, v.String()))
	case slog.KindInt64:
		return append(fields, zap.Int64(key, v.Int64()))
	case slog.KindUint64:
		return append(fields, zap.Uint64(key, v.Uint64()))
	case slog.KindFloat64:
		return append(fields, zap.Float64(key, v.Float64()))
	case slog.KindBool:
		return append(fields, zap.Bool(key, v.Bool()))
	case slog.KindDuration:
		return append(fields, zap.Duration(key, v.Duration()))
	case slog.KindTime:
		return append(fields, zap.Time(key, v.Time()))
	default:
		return append(fields, zap.Any(key, v.Any()))
	}
}
